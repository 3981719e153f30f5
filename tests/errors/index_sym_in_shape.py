# error: is annotated pd.index but an input's shape carries it
# line: 11
# A pd.index argument that a shape already carries.
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def op(A: f32[N], Y: out(f32[N]), N: pd.index):
    for i in range(N):
        Y[i] = A[i]
