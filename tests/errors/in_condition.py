# error: unsupported comparison
# line: 13
# An `in` test in an affine if.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        if i in N:
            Y[i] = A[i]
