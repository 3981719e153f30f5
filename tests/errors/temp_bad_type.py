# error: cannot evaluate the temporary's type
# line: 12
# A temp() whose shape names an unknown sym.
import polydyn as pd
from polydyn import f32, out, temp

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    T = temp(f32[Q])
    for i in range(N):
        Y[i] = A[i]
