# error: assign to an array element
# line: 13
# A tuple assignment.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        a, b = A[i]
        Y[i] = a
