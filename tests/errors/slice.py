# error: slices are not supported
# line: 13
# A slice subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        Y[i, :] = A[i, :]
