# error: call to unknown function `math.atan2`
# line: 14
# A math-module function outside the subset.
import math
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def op(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = math.atan2(X[i], 1.0)
