# error: conditions must be affine
# line: 14
# An if on a local scalar (a value).
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        s = A[i]
        if s > 0.0:
            Y[i] = s
