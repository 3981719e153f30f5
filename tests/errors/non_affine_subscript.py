# error: non-affine subscript `i * j` in `A[i * j, j]`
# line: 14
# A product of two loop variables as a subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, N], Y: out(f32[N, N])):
    for i in range(N):
        for j in range(N):
            Y[i, j] = A[i * j, j]
