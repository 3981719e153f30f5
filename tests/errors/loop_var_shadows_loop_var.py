# error: loop variable `i` shadows another name
# line: 13
# Two nested loops with the same variable.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, N], Y: out(f32[N, N])):
    for i in range(N):
        for i in range(N):
            Y[i, i] = A[i, i]
