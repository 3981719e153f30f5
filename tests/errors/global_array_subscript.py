# error: is not an array of this operator
# line: 18
# Indexing a global NumPy array.
import numpy as np

import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


G = np.ones(4, dtype=np.float32)


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i] * G[0]
