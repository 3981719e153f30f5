# error: only integer constants
# line: 12
# range() with a float bound.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(0, N - 0.5):
        Y[i] = A[i]
