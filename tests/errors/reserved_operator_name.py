# error: operator name `kernel` is reserved in generated code (it names the C function)
# line: 11
# An operator named like an OpenCL keyword: its name is the C function's and the library's.
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def kernel(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
