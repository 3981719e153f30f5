# error: argument `B` needs an annotation
# line: 12
# An argument without annotation.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N],
       B,
       Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
