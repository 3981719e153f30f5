"""Matrix transpose B = A.T."""

import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= 0 and M >= 0")
def transpose(A: f32[N, M], B: out(f32[M, N])):
    for i, j in pd.grid(N, M):
        B[j, i] = A[i, j]


def numpy_impl(A):
    """Return a contiguous copy of A.T."""
    return A.T.copy()
