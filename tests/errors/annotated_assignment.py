# error: annotated assignments are not supported
# line: 13
# A local scalar with an annotation.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        s: float = A[i]
        Y[i] = s
