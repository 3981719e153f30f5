"""Batched matrix product C[b] = A[b] @ Bm[b]."""

import numpy as np

import polydyn as pd
from polydyn import f32, out

B, N, M, K = pd.sym("B N M K")


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def batched_matmul(A: f32[B, N, K], Bm: f32[B, K, M], C: out(f32[B, N, M])):
    for b, i, j in pd.grid(B, N, M):
        C[b, i, j] = 0.0
        for k in range(K):
            C[b, i, j] += A[b, i, k] * Bm[b, k, j]


def numpy_impl(A, Bm):
    """Return C with C[b] = A[b] @ Bm[b]."""
    return np.matmul(A, Bm)
