# error: `pd_x` is a reserved name
# line: 13
# A local scalar with the generated-code prefix.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        pd_x = A[i]
        Y[i] = pd_x
