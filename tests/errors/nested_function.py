# error: `functiondef` statements are not supported
# line: 12
# A function defined inside the operator body.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    def twice(x):
        return 2 * x
    for i in range(N):
        Y[i] = A[i]
