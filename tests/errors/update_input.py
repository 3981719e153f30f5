# error: cannot write to input `A`
# line: 14
# An augmented assignment to an input argument.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = 1.0
        A[i] += Y[i]
