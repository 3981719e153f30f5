# error: no *args
# line: 11
# An operator with *args.
import polydyn as pd
from polydyn import f32

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], *rest: f32[N]):
    for i in range(N):
        A[i] = 0.0
