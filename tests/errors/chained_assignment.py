# error: chained assignment
# line: 13
# a = b = value.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N]), Z: out(f32[N])):
    for i in range(N):
        Y[i] = Z[i] = A[i]
