# error: takes one loop variable
# line: 12
# A range() loop with a tuple target.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i, j in range(N):
        Y[i] = A[j]
