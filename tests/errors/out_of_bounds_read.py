# error: `A[i + 1]` reads outside `A`
# line: 13
# A[i + 1] with i up to N - 1.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i + 1]
