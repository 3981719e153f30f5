# error: shadows the sym `K`
# line: 15
# A loop variable named like a sym that no shape carries.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


K = pd.sym("K")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for K in range(N):
        Y[K] = A[K]
