# error: indirect access is not supported
# line: 13
# An array element used as a subscript.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], B: pd.i32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[B[i]]
