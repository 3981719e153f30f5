# error: takes one argument
# line: 13
# A math function with two arguments.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.sqrt(A[i], A[i])
