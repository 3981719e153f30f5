# error: not `enumerate`
# line: 12
# A for loop over enumerate().
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in enumerate(N):
        Y[i] = A[i]
