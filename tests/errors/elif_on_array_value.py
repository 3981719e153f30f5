# error: conditions must be affine
# line: 15
# An elif that tests array data.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        if i == 0:
            Y[i] = 0.0
        elif A[i] < A[i - 1]:
            Y[i] = A[i]
        else:
            Y[i] = 1.0
