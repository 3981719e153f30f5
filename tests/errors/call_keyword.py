# error: keyword arguments are not supported
# line: 13
# A math call with a keyword argument.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.exp(x=A[i])
