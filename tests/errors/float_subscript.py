# error: only integer constants
# line: 13
# A float literal as a subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[0.0]
