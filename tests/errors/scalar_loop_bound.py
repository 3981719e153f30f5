# error: is a local scalar (a value)
# line: 14
# A loop bound that is a local scalar (data-dependent).
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: pd.i32[N], Y: out(f32[N, M])):
    for i in range(N):
        n = A[i]
        for j in range(n):
            Y[i, j] = 1.0
