# error: bitwise operators are not supported
# line: 13
# The ~ operator.
import polydyn as pd
from polydyn import out

N, M = pd.sym("N M")


@pd.operator
def op(A: pd.i32[N], Y: out(pd.i32[N])):
    for i in range(N):
        Y[i] = ~A[i]
