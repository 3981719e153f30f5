# error: read before it is assigned
# line: 15
# A scalar assigned in one branch of an if, then read.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        if i > 0:
            s = A[i]
        Y[i] = s
