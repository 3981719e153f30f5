# error: non-affine expression `A[i]`
# line: 13
# A loop bound read from an array.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: pd.i32[N], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(A[i]):
            Y[i, j] = 1.0
