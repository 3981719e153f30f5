# error: positive integer constant divisor
# line: 12
# A modulo by zero in a loop bound.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N % 0):
        Y[i] = A[i]
