# error: `expr` statements are not supported
# line: 13
# A bare expression statement (a call).
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        pd.exp(A[i])
        Y[i] = A[i]
