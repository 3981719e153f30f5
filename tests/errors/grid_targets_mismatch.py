# error: pd.grid of 2 extents needs 2 loop variables
# line: 12
# pd.grid with the wrong number of loop variables.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N, M])):
    for i, j, k in pd.grid(N, M):
        Y[i, j] = A[i, j]
