# error: updates outside `Y`
# line: 14
# An update with a triangular bound that overruns.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(i + 1):
            Y[i, j] += A[i, j]
