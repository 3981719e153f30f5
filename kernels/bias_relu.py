"""Bias add then ReLU over rows: Y = max(X + b, 0)."""

import numpy as np

import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= 0 and M >= 0")
def bias_relu(X: f32[N, M], b: f32[M], Y: out(f32[N, M])):
    for i, j in pd.grid(N, M):
        Y[i, j] = max(X[i, j] + b[j], 0.0)


def numpy_impl(X, b):
    """Return Y = max(X + b, 0), b broadcast over the rows."""
    return np.maximum(X + b, 0).astype(X.dtype)
