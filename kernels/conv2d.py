"""2-D convolution (cross-correlation), NCHW, valid padding, stride 1."""

import numpy as np

import polydyn as pd
from polydyn import f32, out

B, C, F, H, W, KH, KW = pd.sym("B C F H W KH KW")


@pd.operator(assume="KH >= 1 and KW >= 1 and H >= KH and W >= KW")
def conv2d(X: f32[B, C, H, W], Wt: f32[F, C, KH, KW], Y: out(f32[B, F, H - KH + 1, W - KW + 1])):
    for b, f, oy, ox in pd.grid(B, F, H - KH + 1, W - KW + 1):
        Y[b, f, oy, ox] = 0.0
        for c, ky, kx in pd.grid(C, KH, KW):
            Y[b, f, oy, ox] += X[b, c, oy + ky, ox + kx] * Wt[f, c, ky, kx]


def numpy_impl(X, Wt):
    """Return Y[b, f, y, x] = sum over c, ky, kx of X[b, c, y + ky, x + kx] * Wt[f, c, ky, kx]."""
    windows = np.lib.stride_tricks.sliding_window_view(X, Wt.shape[2:], axis=(2, 3))
    return np.einsum("bcyxij,fcij->bfyx", windows, Wt, optimize=True).astype(X.dtype)
