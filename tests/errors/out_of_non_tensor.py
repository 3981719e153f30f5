# error: tensor type
# line: 11
# out() of something that is not a tensor type.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32)):
    for i in range(N):
        Y[i] = A[i]
