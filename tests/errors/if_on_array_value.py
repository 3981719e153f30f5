# error: conditions must be affine
# line: 13
# A statement-level if that tests array data.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        if A[i] > 0.0:
            Y[i] = A[i]
