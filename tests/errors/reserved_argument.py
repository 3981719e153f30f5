# error: `restrict` is a reserved name
# line: 11
# An argument named like a C keyword.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(restrict: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = restrict[i]
