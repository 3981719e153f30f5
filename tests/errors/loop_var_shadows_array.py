# error: loop variable `A` shadows another name
# line: 12
# A loop variable named like an array.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for A in range(N):
        Y[A] = 1.0
