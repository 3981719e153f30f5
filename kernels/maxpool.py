"""2x2 max pooling with stride 2 over NCHW; odd trailing rows and columns are dropped."""

import polydyn as pd
from polydyn import f32, out

B, C, H, W = pd.sym("B C H W")


@pd.operator(assume="H >= 0 and W >= 0")
def maxpool(X: f32[B, C, H, W], Y: out(f32[B, C, H // 2, W // 2])):
    for b, c, i, j in pd.grid(B, C, H // 2, W // 2):
        m = -pd.inf
        for di, dj in pd.grid(2, 2):
            m = max(m, X[b, c, 2 * i + di, 2 * j + dj])
        Y[b, c, i, j] = m


def numpy_impl(X):
    """Return the max of each 2x2 block of the last two axes (floor of H / 2 and W / 2 blocks)."""
    nb, nc, h, w = X.shape
    blocks = X[:, :, : h // 2 * 2, : w // 2 * 2].reshape(nb, nc, h // 2, 2, w // 2, 2)
    return blocks.max(axis=(3, 5))
