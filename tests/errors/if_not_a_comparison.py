# error: conditions must be affine comparisons
# line: 13
# An if on a bare name.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        if i:
            Y[i] = A[i]
