# error: temporaries must be declared at the top level
# line: 13
# A temp() declared inside a loop.
import polydyn as pd
from polydyn import f32, out, temp

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        T = temp(f32[N])
        T[i] = A[i]
        Y[i] = T[i]
