# error: unsupported constant
# line: 13
# A string literal in an expression.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i] + "1"
