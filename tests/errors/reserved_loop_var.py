# error: `float` is a reserved name
# line: 12
# A loop variable that is a reserved word of C.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for float in range(N):
        Y[float] = A[float]
