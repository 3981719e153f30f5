# error: call to unknown function `np.sum` in `np.sum(X)`; operators may call pd.exp
# line: 14
# A NumPy function outside the math subset (a whole-array reduction).
import numpy as np
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def op(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = np.sum(X)
