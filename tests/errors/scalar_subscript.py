# error: is a local scalar (a value)
# line: 14
# A local scalar used as a subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        s = 0
        Y[i] = A[s]
