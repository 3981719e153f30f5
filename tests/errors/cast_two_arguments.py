# error: a cast takes one argument
# line: 13
# A dtype cast with two arguments.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.f32(A[i], 1)
