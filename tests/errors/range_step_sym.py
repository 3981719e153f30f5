# error: step must be an integer constant
# line: 12
# range() with a sym as step.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="M >= 1")
def op(A: f32[N], Y: out(f32[N])):
    for i in range(0, N, M):
        Y[i] = A[i]
