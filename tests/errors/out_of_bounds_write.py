# error: writes outside `Y`
# line: 13
# A write one past the end.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i + 1] = A[i]
