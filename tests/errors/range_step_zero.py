# error: step must not be zero
# line: 12
# range() with step 0.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(0, N, 0):
        Y[i] = A[i]
