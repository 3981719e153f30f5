# error: is not a value usable in an operator
# line: 16
# A global that is not a number.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


WEIGHTS = [1.0, 2.0]


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i] * WEIGHTS
