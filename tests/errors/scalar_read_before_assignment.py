# error: read before it is assigned
# line: 14
# A local scalar updated before it is assigned.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        for j in range(M):
            acc += A[i, j]
        Y[i] = 0.0
