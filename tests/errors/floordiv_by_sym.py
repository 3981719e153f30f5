# error: positive integer constant divisor
# line: 13
# A floor division by a sym in a subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="M >= 1")
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i // M]
