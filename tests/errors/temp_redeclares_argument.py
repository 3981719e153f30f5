# error: `A` is already an argument or sym
# line: 12
# A temp() with an argument's name.
import polydyn as pd
from polydyn import f32, out, temp

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    A = temp(f32[N])
    for i in range(N):
        Y[i] = A[i]
