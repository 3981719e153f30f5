"""Matrix product C = A @ B."""

import polydyn as pd
from polydyn import f32, out

N, M, K = pd.sym("N M K")


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]


def numpy_impl(A, B):
    """Return C = A @ B."""
    return A @ B
