"""Layer normalization of each row of X, scaled by gamma and shifted by beta (eps 1e-5)."""

import numpy as np

import polydyn as pd
from polydyn import f32, out

N, D = pd.sym("N D")


@pd.operator(assume="D >= 1")
def layernorm(X: f32[N, D], gamma: f32[D], beta: f32[D], Y: out(f32[N, D])):
    for i in range(N):
        s = 0.0
        for j in range(D):
            s += X[i, j]
        mean = s / D
        ss = 0.0
        for j in range(D):
            ss += (X[i, j] - mean) * (X[i, j] - mean)
        rstd = 1.0 / pd.sqrt(ss / D + 1e-5)
        for j in range(D):
            Y[i, j] = (X[i, j] - mean) * rstd * gamma[j] + beta[j]


def numpy_impl(X, gamma, beta):
    """Return (X - mean) / sqrt(var + 1e-5) * gamma + beta, per row (population variance)."""
    mean = X.mean(axis=1, keepdims=True)
    var = ((X - mean) ** 2).mean(axis=1, keepdims=True)
    return ((X - mean) / np.sqrt(var + 1e-5) * gamma + beta).astype(X.dtype)
