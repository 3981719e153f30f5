# error: cannot evaluate the argument annotations
# line: 11
# A string annotation naming an unknown sym.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: "f32[Q]", Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
