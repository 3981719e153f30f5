# error: `while` loops are not static control
# line: 13
# A while loop.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    i = 0
    while i < N:
        Y[i] = A[i]
