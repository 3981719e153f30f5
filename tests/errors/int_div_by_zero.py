# error: zero
# line: 13
# Integer // by the constant 0: the reference gives 0, C traps.
import polydyn as pd
from polydyn import out

N, M = pd.sym("N M")


@pd.operator
def op(A: pd.i64[N], Y: out(pd.i64[N])):
    for i in range(N):
        Y[i] = A[i] // 0
