# error: unknown name `pd.expm1`
# line: 13
# An attribute that the polydyn module does not have.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.expm1(A[i])
