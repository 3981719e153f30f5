# error: cannot parse assume=
# line: 10
# assume= that is not isl syntax.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= ")
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
