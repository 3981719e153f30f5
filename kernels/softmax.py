"""Softmax of each row of X (max-subtracted for stability)."""

import numpy as np

import polydyn as pd
from polydyn import f32, out

N, L = pd.sym("N L")


@pd.operator(assume="L >= 1")
def softmax(X: f32[N, L], Y: out(f32[N, L])):
    for i in range(N):
        m = -pd.inf
        for j in range(L):
            m = max(m, X[i, j])
        s = 0.0
        for j in range(L):
            Y[i, j] = pd.exp(X[i, j] - m)
            s += Y[i, j]
        inv = 1.0 / s
        for j in range(L):
            Y[i, j] *= inv


def numpy_impl(X):
    """Return Y = exp(X - rowmax) / rowsum(exp(X - rowmax))."""
    e = np.exp(X - X.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
