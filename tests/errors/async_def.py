# error: must be a plain function
# line: 11
# An async def operator.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
async def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
