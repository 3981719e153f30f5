# error: compound assignment `FloorDiv=` is not supported
# line: 14
# An //= update.
import polydyn as pd
from polydyn import out

N, M = pd.sym("N M")


@pd.operator
def op(A: pd.i32[N], Y: out(pd.i32[N])):
    for i in range(N):
        Y[i] = A[i]
        Y[i] //= 2
