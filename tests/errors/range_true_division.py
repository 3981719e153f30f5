# error: expected an affine expression
# line: 12
# range() with a true division in its bound.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N / 2):
        Y[i] = A[i]
