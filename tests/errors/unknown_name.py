# error: unknown name `scale`
# line: 13
# A name that is neither argument, sym, scalar nor global.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = scale * A[i]
