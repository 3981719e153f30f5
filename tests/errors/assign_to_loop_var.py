# error: cannot assign to `i`
# line: 13
# An assignment to a loop variable.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        i = 0
        Y[i] = A[i]
