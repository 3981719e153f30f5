# error: `return` statements are not supported
# line: 14
# A return statement.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
    return Y
