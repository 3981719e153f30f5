# error: unknown name(s) Q
# line: 10
# assume= naming a sym the operator does not have.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= 1 and Q >= 2")
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
