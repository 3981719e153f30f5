# error: non-affine expression `N * M`
# line: 12
# A loop bound that is a product of two syms.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N, M])):
    for t in range(N * M):
        Y[t // M, t % M] = A[t // M, t % M]
