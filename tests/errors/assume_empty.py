# error: admits no sizes at all
# line: 10
# assume= that no sizes satisfy.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= 4 and M < N and M > N")
def op(A: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            Y[i, j] = A[i, j]
