# error: read before it is assigned in this iteration
# line: 16
# A scalar initialised only when j == 0, then updated: refused (private per iteration).
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        for j in range(M):
            if j == 0:
                s = 0.0
            s += A[i, j]
        Y[i] = 0.0
