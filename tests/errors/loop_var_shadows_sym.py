# error: loop variable `N` shadows
# line: 13
# A loop variable named like a sym of the shapes.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N, M])):
    for i in range(M):
        for N in range(M):
            Y[i, N] = A[i, N]
