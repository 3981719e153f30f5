# error: local scalar `s`
# line: 15
# A scalar assigned in an inner loop and read in the outer one.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        for j in range(M):
            s = A[i, j]
        Y[i] = s
