# error: or defaults
# line: 11
# An argument with a default value.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N]) = None):
    for i in range(N):
        Y[i] = A[i]
