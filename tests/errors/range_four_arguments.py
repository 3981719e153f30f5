# error: range() takes 1 to 3 arguments
# line: 12
# range() with four arguments.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(0, N, 1, 1):
        Y[i] = A[i]
