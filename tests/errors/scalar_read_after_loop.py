# error: local scalar `acc`
# line: 14
# A scalar assigned inside a loop and read after it.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[1])):
    for i in range(N):
        acc = A[i]
    Y[0] = acc
