# error: `double` is a reserved name
# line: 12
# A temporary named like a C type.
import polydyn as pd
from polydyn import f32, out, temp

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    double = temp(f32[N])
    for i in range(N):
        double[i] = A[i]
        Y[i] = double[i]
