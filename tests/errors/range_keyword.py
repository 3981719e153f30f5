# error: positional arguments only
# line: 12
# range() with a keyword argument.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N, step=1):
        Y[i] = A[i]
