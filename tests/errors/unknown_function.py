# error: call to unknown function `helper`
# line: 17
# A call to a Python function that is not a polydyn math name.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


def helper(x):
    return 2 * x


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = helper(A[i])
