# error: `for ... else` is not supported
# line: 12
# A for loop with an else clause.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
    else:
        Y[0] = 0.0
