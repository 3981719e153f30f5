# error: gives 2 subscript(s)
# line: 13
# Too many subscripts on a store.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i, 0] = A[i]
