# error: unknown name `u`
# line: 13
# A local scalar read in an iteration before its first assignment.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i] + u
        u = 1.0
