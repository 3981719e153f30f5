# error: has 2 dimension(s)
# line: 13
# Too few subscripts.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
