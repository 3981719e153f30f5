"""Operators written the ways users write them: temporaries or local scalars as accumulators,
the weight in nn.Linear's layout, masks as ``if``, statistics divided by ``D`` or multiplied
by ``1 / D``. Each has a NumPy oracle (``NUMPY``), the bundled kernel it is a phrasing of
(``BUNDLED``, where there is one) and the sizes the bench times it at (``BENCH_SIZES``).
``tests/test_phrasings.py`` checks them; ``bench/phrasings.py`` times them beside the
bundled phrasing and PyTorch eager.
"""

from __future__ import annotations

import numpy as np

import polydyn as pd
from polydyn import f32, i32, inout, out, temp

B, N, M, K, D, L, H = pd.sym("B N M K D L H")
C, F, W, P, Q = pd.sym("C F W P Q")

# --- softmax ----------------------------------------------------------------------------------


@pd.operator(assume="M >= 1")
def softmax_temps(X: f32[N, M], Y: out(f32[N, M])):
    """Row max and sum in temporaries."""
    mx = temp(f32[N])
    sm = temp(f32[N])
    for i in range(N):
        mx[i] = X[i, 0]
        for j in range(M):
            mx[i] = max(mx[i], X[i, j])
        sm[i] = 0.0
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j] - mx[i])
            sm[i] += Y[i, j]
        for j in range(M):
            Y[i, j] = Y[i, j] / sm[i]


@pd.operator(assume="M >= 1")
def softmax_if(X: f32[N, M], Y: out(f32[N, M])):
    """Scalars; the max by a conditional expression; division in the last loop."""
    for i in range(N):
        m = X[i, 0]
        for j in range(1, M):
            m = X[i, j] if X[i, j] > m else m
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j] - m)
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j] - m) / s


# --- layernorm and rmsnorm --------------------------------------------------------------------


@pd.operator(assume="D >= 1")
def layernorm_temps(X: f32[N, D], g: f32[D], b: f32[D], Y: out(f32[N, D])):
    """Mean and variance in temporaries, ``/ D``."""
    mu = temp(f32[N])
    var = temp(f32[N])
    for i in range(N):
        mu[i] = 0.0
        for d in range(D):
            mu[i] += X[i, d]
        mu[i] = mu[i] / D
        var[i] = 0.0
        for d in range(D):
            var[i] += (X[i, d] - mu[i]) * (X[i, d] - mu[i])
        var[i] = var[i] / D
        for d in range(D):
            Y[i, d] = (X[i, d] - mu[i]) / pd.sqrt(var[i] + 1e-5) * g[d] + b[d]


@pd.operator(assume="D >= 1")
def layernorm_scalars(X: f32[N, D], g: f32[D], b: f32[D], Y: out(f32[N, D])):
    """One pass of sums (E[x^2] - E[x]^2), ``* (1 / D)``."""
    for i in range(N):
        s = 0.0
        q = 0.0
        for d in range(D):
            s += X[i, d]
            q += X[i, d] * X[i, d]
        mean = s * (1.0 / D)
        var = q * (1.0 / D) - mean * mean
        r = 1.0 / pd.sqrt(var + 1e-5)
        for d in range(D):
            Y[i, d] = (X[i, d] - mean) * r * g[d] + b[d]


@pd.operator()
def layernorm_residual(X: f32[N, D], R: f32[N, D], g: f32[D], b: f32[D], Y: out(f32[N, D])):
    """A transformer block's residual add and LayerNorm: the sum row ``T`` kept in a
    temporary, its mean summed in the loop that writes it and divided in place."""
    T = temp(f32[N, D])
    for i in range(N):
        mean = 0.0
        for d in range(D):
            T[i, d] = X[i, d] + R[i, d]
            mean += T[i, d]
        mean = mean / D
        var = 0.0
        for d in range(D):
            var += (T[i, d] - mean) * (T[i, d] - mean)
        inv = 1.0 / pd.sqrt(var / D + 1e-5)
        for d in range(D):
            Y[i, d] = (T[i, d] - mean) * inv * g[d] + b[d]


@pd.operator(assume="D >= 1")
def rmsnorm_temp(X: f32[N, D], g: f32[D], Y: out(f32[N, D])):
    ss = temp(f32[N])
    for i in range(N):
        ss[i] = 0.0
        for d in range(D):
            ss[i] += X[i, d] * X[i, d]
        for d in range(D):
            Y[i, d] = X[i, d] / pd.sqrt(ss[i] / D + 1e-6) * g[d]


# --- products ---------------------------------------------------------------------------------


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_scalar(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_bt(A: f32[N, K], Bt: f32[M, K], C: out(f32[N, M])):
    """B stored transposed."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * Bt[j, k]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_ikj(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    """The i, k, j order, the init in its own nest."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
    for i in range(N):
        for k in range(K):
            for j in range(M):
                C[i, j] += A[i, k] * B[k, j]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_cell(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    """nn.Linear: the weight output-major, the bias first, the sum in the cell."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[o, k]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_scalar_gelu(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    """nn.Linear then GELU (erf form), the sum in a scalar."""
    for n in range(N):
        for o in range(M):
            s = 0.0
            for k in range(K):
                s += X[n, k] * W[o, k]
            v = s + b[o]
            Y[n, o] = 0.5 * v * (1.0 + pd.erf(v * 0.7071067811865476))


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_relu(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    """nn.Linear then ReLU as a conditional expression, the sum in the cell from the bias."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[o, k]
            Y[n, o] = Y[n, o] if Y[n, o] > 0.0 else 0.0


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_bias_added(X: f32[N, K], W: f32[K, M], b: f32[M], Y: out(f32[N, M])):
    """``X @ W + b``, the weight input-major: the bias stored first, the sum in a scalar
    added to it (``Y += acc``)."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * W[k, o]
            Y[n, o] += acc


@pd.operator(assume="B >= 1 and N >= 1 and M >= 1 and K >= 1")
def batched_linear(X: f32[B, N, K], W: f32[K, M], b: f32[M], Y: out(f32[B, N, M])):
    """``X @ W + b`` on a [batch, rows, features] input, the weight input-major, the bias
    first (its nest stands before the product in isl's schedule)."""
    for s, n, o in pd.grid(B, N, M):
        Y[s, n, o] = b[o]
        for k in range(K):
            Y[s, n, o] += X[s, n, k] * W[k, o]


@pd.operator(assume="B >= 1 and N >= 1 and M >= 1 and K >= 1")
def batched_linear_seq_first(X: f32[N, B, K], W: f32[K, M], Y: out(f32[N, B, M])):
    """A projection of a [sequence, batch, features] input (nn.MultiheadAttention's default
    layout), the sum in the cell: two row loops, the batch inside."""
    for n, s, o in pd.grid(N, B, M):
        Y[n, s, o] = 0.0
        for k in range(K):
            Y[n, s, o] += X[n, s, k] * W[k, o]


@pd.operator(assume="B >= 1 and N >= 1 and M >= 1 and K >= 1")
def batched_linear_nt_seq_first(X: f32[N, B, K], W: f32[M, K], b: f32[M], Y: out(f32[N, B, M])):
    """nn.Linear on a [sequence, batch, features] input: the weight output-major, the bias
    the local sum's first value, two row loops with the batch inside."""
    for n, s, o in pd.grid(N, B, M):
        acc = b[o]
        for k in range(K):
            acc += X[n, s, k] * W[o, k]
        Y[n, s, o] = acc


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_temp_relu(X: f32[N, K], W: f32[K, M], b: f32[M], Y: out(f32[N, M])):
    """``relu(X @ W + b)`` through a temporary: the product into it, then a nest of its own
    for the activation."""
    T = temp(f32[N, M])
    for n in range(N):
        for o in range(M):
            T[n, o] = b[o]
            for k in range(K):
                T[n, o] += X[n, k] * W[k, o]
    for n in range(N):
        for o in range(M):
            Y[n, o] = max(T[n, o], 0.0)


@pd.operator(assume="M >= 1 and K >= 1")
def vecmat_vectors(x: f32[K], W: f32[K, M], y: out(f32[M])):
    """``x @ W`` for one input vector (a batch-1 projection), written with vectors: the init
    in a loop of its own, then the reduction outside the columns."""
    for o in range(M):
        y[o] = 0.0
    for k in range(K):
        for o in range(M):
            y[o] += x[k] * W[k, o]


@pd.operator(assume="N >= 1 and M >= 1")
def column_sums(X: f32[N, M], s: out(f32[M])):
    """``X.sum(axis=0)``, the sums in the output cells."""
    for j in range(M):
        s[j] = 0.0
    for i in range(N):
        for j in range(M):
            s[j] += X[i, j]


@pd.operator()
def pairwise_sq_dist(A: f32[N, K], Bv: f32[M, K], Dist: out(f32[N, M])):
    """``torch.cdist(A, Bv) ** 2``, each difference in a local scalar of the step before it
    is squared into the sum."""
    for i in range(N):
        for j in range(M):
            s = 0.0
            for k in range(K):
                t = A[i, k] - Bv[j, k]
                s += t * t
            Dist[i, j] = s


# --- masks and attention ----------------------------------------------------------------------


@pd.operator(assume="L >= 1")
def causal_softmax(S: f32[H, L, L], P: out(f32[H, L, L])):
    """Triangular loops; the masked part set to 0 by an ``if``."""
    for h in range(H):
        for i in range(L):
            m = S[h, i, 0]
            for j in range(i + 1):
                m = max(m, S[h, i, j])
            s = 0.0
            for j in range(i + 1):
                P[h, i, j] = pd.exp(S[h, i, j] - m)
                s += P[h, i, j]
            for j in range(L):
                if j <= i:
                    P[h, i, j] = P[h, i, j] / s
                else:
                    P[h, i, j] = 0.0


@pd.operator(assume="L >= 1 and D >= 1")
def attention(Q: f32[L, D], Kt: f32[L, D], V: f32[L, D], Out: out(f32[L, D])):  # noqa: C901
    """Scores into a temporary, softmax over them, a second product."""
    S = temp(f32[L, L])
    for i in range(L):
        for j in range(L):
            S[i, j] = 0.0
            for d in range(D):
                S[i, j] += Q[i, d] * Kt[j, d]
    for i in range(L):
        m = S[i, 0]
        for j in range(L):
            m = max(m, S[i, j])
        s = 0.0
        for j in range(L):
            S[i, j] = pd.exp((S[i, j] - m) * 0.125)
            s += S[i, j]
        for j in range(L):
            S[i, j] = S[i, j] / s
    for i in range(L):
        for d in range(D):
            Out[i, d] = 0.0
            for j in range(L):
                Out[i, d] += S[i, j] * V[j, d]


@pd.operator(assume="L >= 1 and D >= 1")
def scores_scaled(Q: f32[H, L, D], Kh: f32[H, L, D], S: out(f32[H, L, L])):
    """Attention's scores per head, the sum in a scalar, scaled as it is stored."""
    for h in range(H):
        for i in range(L):
            for j in range(L):
                acc = 0.0
                for d in range(D):
                    acc += Q[h, i, d] * Kh[h, j, d]
                S[h, i, j] = acc * 0.125


@pd.operator()
def bias_gelu_temp(X: f32[N, M], b: f32[M], Y: out(f32[N, M])):
    """GELU (erf form) of ``X + b`` through a temporary: a nest for each step, the second
    with its own loop variables."""
    T = temp(f32[N, M])
    for i, j in pd.grid(N, M):
        T[i, j] = X[i, j] + b[j]
    for r, c in pd.grid(N, M):
        Y[r, c] = 0.5 * T[r, c] * (1.0 + pd.erf(T[r, c] * 0.7071067811865476))


@pd.operator()
def gelu_tanh(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            x = X[i, j]
            Y[i, j] = 0.5 * x * (1.0 + pd.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


# --- per-channel scales and whole-array sums ----------------------------------------------------


@pd.operator()
def batchnorm_infer(X: f32[B, C, H, W], mean: f32[C], var: f32[C], g: f32[C], beta: f32[C],
                    Y: out(f32[B, C, H, W])):
    """Batch norm at inference over NCHW, written as its formula: the per-channel values are
    read in the innermost loop."""
    for b, c, y, x in pd.grid(B, C, H, W):
        Y[b, c, y, x] = (X[b, c, y, x] - mean[c]) / pd.sqrt(var[c] + 1e-5) * g[c] + beta[c]


@pd.operator()
def sum_squares_cell(X: f32[N, M], y: out(f32[1])):
    """``(X ** 2).sum()`` into the output's one cell."""
    y[0] = 0.0
    for i, j in pd.grid(N, M):
        y[0] += X[i, j] * X[i, j]


# --- reductions over an axis that is not the last ---------------------------------------------


@pd.operator(assume="L >= 1")
def middle_softmax(X: f32[B, L, D], Y: out(f32[B, L, D])):
    """``softmax(X, dim=1)``: the max and the sum in local scalars of each ``(b, d)``, the
    loops over the sequence reading X down its columns."""
    for b, d in pd.grid(B, D):
        m = X[b, 0, d]
        for s in range(L):
            m = max(m, X[b, s, d])
        t = 0.0
        for s in range(L):
            t += pd.exp(X[b, s, d] - m)
        for s in range(L):
            Y[b, s, d] = pd.exp(X[b, s, d] - m) / t


@pd.operator()
def sequence_mean(X: f32[B, L, D], Y: out(f32[B, D])):
    """``X.mean(1)`` (mean pooling over a sequence): the sums accumulate in the output, a
    token's row at a time; no token gives zeros."""
    for b, d in pd.grid(B, D):
        Y[b, d] = 0.0
    for b, t, d in pd.grid(B, L, D):
        Y[b, d] += X[b, t, d]
    for b, d in pd.grid(B, D):
        Y[b, d] = Y[b, d] / max(L, 1)


@pd.operator()
def sequence_mean_weighted(X: f32[B, L, D], w: f32[L], Y: out(f32[B, D])):
    """Pooling with a weight per token, ``(X * w[:, None]).sum(1)``, the sums in the
    output."""
    for b, d in pd.grid(B, D):
        Y[b, d] = 0.0
        for t in range(L):
            Y[b, d] += X[b, t, d] * w[t]


@pd.operator()
def softmax_columns(X: f32[N, M], Y: out(f32[N, M])):
    """``softmax(X, dim=0)``: a column's max and sum in local scalars, starting from minus
    infinity and zero."""
    for j in range(M):
        mx = -pd.inf
        for i in range(N):
            mx = max(mx, X[i, j])
        s = 0.0
        for i in range(N):
            s += pd.exp(X[i, j] - mx)
        for i in range(N):
            Y[i, j] = pd.exp(X[i, j] - mx) / s


@pd.operator(assume="C >= 1")
def channels_first_layernorm(X: f32[B, C, H, W], g: f32[C], beta: f32[C],
                             Y: out(f32[B, C, H, W])):
    """ConvNeXt's LayerNorm over the channels of NCHW: the statistics of each pixel in
    local scalars, over loops that read X along the channels."""
    for b, y, x in pd.grid(B, H, W):
        mu = 0.0
        for c in range(C):
            mu += X[b, c, y, x]
        mu = mu / C
        var = 0.0
        for c in range(C):
            var += (X[b, c, y, x] - mu) * (X[b, c, y, x] - mu)
        r = 1.0 / pd.sqrt(var / C + 1e-6)
        for c in range(C):
            Y[b, c, y, x] = (X[b, c, y, x] - mu) * r * g[c] + beta[c]


# --- convolutions with zero padding -----------------------------------------------------------


@pd.operator(assume="H >= 1 and W >= 1")
def conv_same_if(X: f32[B, C, H, W], Wt: f32[F, C, 3, 3], bias: f32[F],
                 Y: out(f32[B, F, H, W])):
    """A 3 x 3 convolution with padding 1 (nn.Conv2d(padding=1)): the image's edges as an
    ``if`` around the sum's term, the sum in a scalar from the bias."""
    for b, f, y, x in pd.grid(B, F, H, W):
        s = bias[f]
        for c, ky, kx in pd.grid(C, 3, 3):
            if 0 <= y + ky - 1 < H and 0 <= x + kx - 1 < W:
                s += X[b, c, y + ky - 1, x + kx - 1] * Wt[f, c, ky, kx]
        Y[b, f, y, x] = s


@pd.operator()
def conv_stride2(X: f32[B, C, 2 * P + 1, 2 * Q + 1], Wt: f32[F, C, 3, 3],
                 Y: out(f32[B, F, P, Q])):
    """A 3 x 3 convolution with stride 2 (nn.Conv2d(stride=2)): the window's reads step two
    elements per output column."""
    for b, f, y, x in pd.grid(B, F, P, Q):
        s = 0.0
        for c, ky, kx in pd.grid(C, 3, 3):
            s += X[b, c, 2 * y + ky, 2 * x + kx] * Wt[f, c, ky, kx]
        Y[b, f, y, x] = s


@pd.operator()
def conv_stride2_same_if(X: f32[B, C, 2 * P, 2 * Q], Wt: f32[F, C, 3, 3],
                         Y: out(f32[B, F, P, Q])):
    """ResNet's downsampling 3 x 3 convolution (stride 2, padding 1), the edges as an
    ``if``."""
    for b, f, y, x in pd.grid(B, F, P, Q):
        s = 0.0
        for c, ky, kx in pd.grid(C, 3, 3):
            if 0 <= 2 * y + ky - 1 < 2 * P and 0 <= 2 * x + kx - 1 < 2 * Q:
                s += X[b, c, 2 * y + ky - 1, 2 * x + kx - 1] * Wt[f, c, ky, kx]
        Y[b, f, y, x] = s


@pd.operator(assume="H >= 1 and W >= 1")
def depthwise_same_if(X: f32[B, C, H, W], Wt: f32[C, 3, 3], Y: out(f32[B, C, H, W])):
    """A depthwise 3 x 3 convolution with padding 1 (``groups=C``), the edges as an ``if``."""
    for b, c, y, x in pd.grid(B, C, H, W):
        s = 0.0
        for ky, kx in pd.grid(3, 3):
            if 0 <= y + ky - 1 < H and 0 <= x + kx - 1 < W:
                s += X[b, c, y + ky - 1, x + kx - 1] * Wt[c, ky, kx]
        Y[b, c, y, x] = s


@pd.operator(assume="L >= 1")
def conv1d_select(X: f32[B, C, L], Wt: f32[F, C, 5], Y: out(f32[B, F, L])):
    """nn.Conv1d(kernel_size=5, padding=2), the padding as a conditional expression that
    reads 0 outside the sequence, the sum in the cell."""
    for b, f, t in pd.grid(B, F, L):
        Y[b, f, t] = 0.0
        for c, k in pd.grid(C, 5):
            Y[b, f, t] += Wt[f, c, k] * (X[b, c, t + k - 2] if 0 <= t + k - 2 < L else 0.0)


# --- oracles ----------------------------------------------------------------------------------


def _softmax(X):
    e = np.exp(X - X.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(X, g, b):
    mean = X.mean(axis=1, keepdims=True)
    var = ((X - mean) ** 2).mean(axis=1, keepdims=True)
    return (X - mean) / np.sqrt(var + 1e-5) * g + b


def _erf(x):
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x)


def _causal(S):
    L = S.shape[-1]
    mask = np.tril(np.ones((L, L), bool))
    masked = np.where(mask, S, -np.inf)
    return np.where(mask, _softmax(masked), 0.0)


def _attention(Q, Kt, V):
    return _softmax(Q @ Kt.T * 0.125) @ V


def _conv(X, Wt, pad):
    """Cross-correlation over the trailing axes of X (N-d), zero-padded by ``pad``."""
    nd = Wt.ndim - 2
    Xp = np.pad(X, [(0, 0), (0, 0)] + [(pad, pad)] * nd)
    windows = np.lib.stride_tricks.sliding_window_view(Xp, Wt.shape[2:], axis=tuple(
        range(2, 2 + nd)))
    letters, kernel = "yx"[2 - nd:], "ij"[:nd]
    return np.einsum(f"bc{letters}{kernel},fc{kernel}->bf{letters}", windows, Wt)


def _channels_layernorm(X, g, b):
    mu = X.mean(axis=1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=1, keepdims=True)
    return (X - mu) / np.sqrt(var + 1e-6) * g[:, None, None] + b[:, None, None]

# --- reductions over the pixels of NCHW ----------------------------------------------------


@pd.operator(assume="H >= 1 and W >= 1")
def global_avgpool(X: f32[B, C, H, W], Y: out(f32[B, C])):
    """A CNN's head, ``X.mean((2, 3))``: the sum of each channel's plane in a local scalar,
    over loops along its rows and columns."""
    for b, c in pd.grid(B, C):
        s = 0.0
        for y, x in pd.grid(H, W):
            s += X[b, c, y, x]
        Y[b, c] = s / (H * W)


@pd.operator(assume="H >= 1 and W >= 1")
def instance_norm(X: f32[B, C, H, W], g: f32[C], beta: f32[C], Y: out(f32[B, C, H, W])):
    """InstanceNorm2d (GroupNorm with a group per channel): the statistics of each plane in
    local scalars."""
    for b, c in pd.grid(B, C):
        mu = 0.0
        for y, x in pd.grid(H, W):
            mu += X[b, c, y, x]
        mu = mu / (H * W)
        var = 0.0
        for y, x in pd.grid(H, W):
            var += (X[b, c, y, x] - mu) * (X[b, c, y, x] - mu)
        r = 1.0 / pd.sqrt(var / (H * W) + 1e-5)
        for y, x in pd.grid(H, W):
            Y[b, c, y, x] = (X[b, c, y, x] - mu) * r * g[c] + beta[c]


# --- other layouts, scans and selections --------------------------------------------------


@pd.operator
def conv_nhwc(X: f32[B, P + 2, Q + 2, C], Wt: f32[3, 3, C, F], Y: out(f32[B, P, Q, F])):
    """A 3 x 3 convolution in TensorFlow's layout (channels last, the weight [ky, kx, c,
    f]): the sum in a local scalar, the window's loops around the channels'."""
    for b, y, x, f in pd.grid(B, P, Q, F):
        acc = 0.0
        for ky, kx, c in pd.grid(3, 3, C):
            acc += X[b, y + ky, x + kx, c] * Wt[ky, kx, c, f]
        Y[b, y, x, f] = acc


@pd.operator
def matmul_at(A: f32[K, N], Bm: f32[K, M], Cm: out(f32[N, M])):
    """``A.T @ B`` (a weight's gradient) as rank-1 updates: the initialization in a nest of
    its own, the reduction loop outermost."""
    for i, j in pd.grid(N, M):
        Cm[i, j] = 0.0
    for k in range(K):
        for i, j in pd.grid(N, M):
            Cm[i, j] += A[k, i] * Bm[k, j]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_blas(A: f32[N, K], Bm: f32[K, M], Cm: inout(f32[N, M]), alpha: f32, beta: f32):
    """BLAS's ``C = alpha * A @ B + beta * C``: the sum in a local scalar, scaled where it is
    stored beside the cell's own value."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * Bm[k, j]
            Cm[i, j] = alpha * acc + beta * Cm[i, j]


@pd.operator
def token_conv1d(X: f32[B, C, L], Wt: f32[C, 4], Y: out(f32[B, C, L])):
    """A causal depthwise convolution over the tokens (Mamba's short convolution): taps
    before the first token skipped by an ``if``."""
    for b, c, t in pd.grid(B, C, L):
        acc = 0.0
        for k in range(4):
            if t - k >= 0:
                acc += X[b, c, t - k] * Wt[c, k]
        Y[b, c, t] = acc


@pd.operator
def row_cumsum(X: f32[N, M], Y: out(f32[N, M])):
    """``X.cumsum(1)``: a running sum in a local scalar, stored at every step."""
    for i in range(N):
        run = 0.0
        for j in range(M):
            run += X[i, j]
            Y[i, j] = run


@pd.operator(assume="M >= 1")
def log_softmax(X: f32[N, M], Y: out(f32[N, M])):
    """The row's maximum from its first element, the log of the sum in a local scalar."""
    for i in range(N):
        m = X[i, 0]
        for j in range(1, M):
            m = max(m, X[i, j])
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j] - m)
        ls = pd.log(s)
        for j in range(M):
            Y[i, j] = X[i, j] - m - ls


@pd.operator
def permute_last_two(X: f32[B, N, M], Y: out(f32[B, M, N])):
    """``X.transpose(1, 2).contiguous()``: each matrix of a batch transposed."""
    for b, i, j in pd.grid(B, N, M):
        Y[b, j, i] = X[b, i, j]


@pd.operator
def permute_scale_bias(X: f32[B, N, M], bias: f32[N], Y: out(f32[B, M, N])):
    """``X.transpose(1, 2) * 0.5 + bias``: an element-wise statement on a transposed read."""
    for b, i, j in pd.grid(B, N, M):
        Y[b, j, i] = X[b, i, j] * 0.5 + bias[i]


@pd.operator
def nchw_to_nhwc(X: f32[B, C, H, W], Y: out(f32[B, H, W, C])):
    """A layout change, ``X.permute(0, 2, 3, 1).contiguous()``: the channels last."""
    for b, c, y, x in pd.grid(B, C, H, W):
        Y[b, y, x, c] = X[b, c, y, x]


@pd.operator(assume="M >= 1")
def argmax_rows(X: f32[N, M], idx: out(i32[N]), best: out(f32[N])):
    """Each row's first largest element and its index: the index chosen by a conditional
    expression before the running maximum moves."""
    for i in range(N):
        b = X[i, 0]
        k = 0
        for j in range(1, M):
            k = j if X[i, j] > b else k
            b = X[i, j] if X[i, j] > b else b
        idx[i] = k
        best[i] = b


def _gelu(X):
    return 0.5 * X * (1.0 + np.tanh(0.7978845608 * (X + 0.044715 * X ** 3)))


def _conv_nhwc(X, Wt):
    p, q = X.shape[1] - 2, X.shape[2] - 2
    return sum(np.einsum("byxc,cf->byxf", X[:, ky:ky + p, kx:kx + q, :], Wt[ky, kx])
               for ky in range(3) for kx in range(3))


def _token_conv(X, Wt):
    Y = np.zeros_like(X)
    for k in range(min(4, X.shape[2])):
        Y[:, :, k:] += X[:, :, :X.shape[2] - k] * Wt[None, :, k, None]
    return Y


def _log_softmax(X):
    m = X.max(axis=1, keepdims=True)
    return X - m - np.log(np.exp(X - m).sum(axis=1, keepdims=True))


NUMPY = {
    softmax_temps: _softmax,
    softmax_if: _softmax,
    layernorm_temps: _layernorm,
    layernorm_scalars: _layernorm,
    layernorm_residual: lambda X, R, g, b: _layernorm(X + R, g, b),
    rmsnorm_temp: lambda X, g: X / np.sqrt((X * X).mean(axis=1, keepdims=True) + 1e-6) * g,
    matmul_scalar: lambda A, B: A @ B,
    matmul_bt: lambda A, Bt: A @ Bt.T,
    matmul_ikj: lambda A, B: A @ B,
    linear_cell: lambda X, W, b: X @ W.T + b,
    linear_scalar_gelu: lambda X, W, b: (lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2))))(
        X @ W.T + b),
    linear_relu: lambda X, W, b: np.maximum(X @ W.T + b, 0.0),
    linear_bias_added: lambda X, W, b: X @ W + b,
    linear_temp_relu: lambda X, W, b: np.maximum(X @ W + b, 0.0),
    vecmat_vectors: lambda x, W: x @ W,
    column_sums: lambda X: X.sum(axis=0),
    pairwise_sq_dist: lambda A, Bv: ((A[:, None, :] - Bv[None, :, :]) ** 2).sum(axis=2),
    batched_linear: lambda X, W, b: X @ W + b,
    batched_linear_seq_first: lambda X, W: X @ W,
    batched_linear_nt_seq_first: lambda X, W, b: X @ W.T + b,
    causal_softmax: _causal,
    attention: _attention,
    scores_scaled: lambda Q, Kh: Q @ Kh.transpose(0, 2, 1) * 0.125,
    gelu_tanh: _gelu,
    bias_gelu_temp: lambda X, b: (lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2))))(X + b),
    conv_same_if: lambda X, Wt, b: _conv(X, Wt, 1) + b[:, None, None],
    batchnorm_infer: lambda X, m, v, g, b: (X - m[:, None, None]) / np.sqrt(
        v[:, None, None] + 1e-5) * g[:, None, None] + b[:, None, None],
    sum_squares_cell: lambda X: np.array([(X * X).sum()]),
    middle_softmax: lambda X: np.exp(X - X.max(axis=1, keepdims=True)) / np.exp(
        X - X.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True),
    sequence_mean: lambda X: X.sum(axis=1) / max(X.shape[1], 1),
    sequence_mean_weighted: lambda X, w: (X * w[:, None]).sum(axis=1),
    softmax_columns: lambda X: _softmax(X.T).T,
    channels_first_layernorm: _channels_layernorm,
    global_avgpool: lambda X: X.mean(axis=(2, 3)),
    instance_norm: lambda X, g, b: (X - X.mean(axis=(2, 3), keepdims=True)) / np.sqrt(
        X.var(axis=(2, 3), keepdims=True) + 1e-5) * g[:, None, None] + b[:, None, None],
    conv1d_select: lambda X, Wt: _conv(X, Wt, 2),
    conv_stride2: lambda X, Wt: _conv(X, Wt, 0)[:, :, ::2, ::2],
    conv_stride2_same_if: lambda X, Wt: _conv(X, Wt, 1)[:, :, ::2, ::2],
    conv_nhwc: _conv_nhwc,
    matmul_at: lambda A, Bm: A.T @ Bm,
    matmul_blas: lambda A, Bm, Cm, alpha, beta: alpha * (A @ Bm) + beta * Cm,
    token_conv1d: _token_conv,
    row_cumsum: lambda X: np.cumsum(X, axis=1),
    log_softmax: _log_softmax,
    argmax_rows: lambda X: (X.argmax(axis=1).astype(np.int32), X.max(axis=1)),
    permute_last_two: lambda X: X.transpose(0, 2, 1),
    permute_scale_bias: lambda X, bias: X.transpose(0, 2, 1) * np.float32(0.5) + bias,
    nchw_to_nhwc: lambda X: X.transpose(0, 2, 3, 1),
    depthwise_same_if: lambda X, Wt: np.einsum("bcyxij,cij->bcyx", np.lib.stride_tricks.
                                               sliding_window_view(np.pad(X, [(0, 0), (0, 0),
                                                                              (1, 1), (1, 1)]),
                                                                   (3, 3), axis=(2, 3)), Wt),
}

# the bundled kernel each is a phrasing of, and how to call it with the phrasing's inputs
BUNDLED = {
    softmax_temps: ("softmax", lambda X: (X,)),
    softmax_if: ("softmax", lambda X: (X,)),
    layernorm_temps: ("layernorm", lambda X, g, b: (X, g, b)),
    layernorm_scalars: ("layernorm", lambda X, g, b: (X, g, b)),
    matmul_scalar: ("matmul", lambda A, B: (A, B)),
    matmul_bt: ("matmul", lambda A, Bt: (A, np.ascontiguousarray(Bt.T))),
    matmul_ikj: ("matmul", lambda A, B: (A, B)),
    matmul_at: ("matmul", lambda A, Bm: (np.ascontiguousarray(A.T), Bm)),
    matmul_blas: ("matmul", lambda A, Bm, Cm, alpha, beta: (A, Bm)),
}

# sizes timed by bench/phrasings.py
BENCH_SIZES = {
    softmax_temps: [{"N": 64, "M": 2048}, {"N": 512, "M": 4096}],
    softmax_if: [{"N": 64, "M": 2048}, {"N": 512, "M": 4096}],
    layernorm_temps: [{"N": 128, "D": 768}, {"N": 512, "D": 1024}],
    layernorm_scalars: [{"N": 128, "D": 768}, {"N": 512, "D": 1024}],
    layernorm_residual: [{"N": 512, "D": 1024}, {"N": 2048, "D": 1024}],
    rmsnorm_temp: [{"N": 512, "D": 4096}],
    matmul_scalar: [{"N": 512, "M": 512, "K": 512}],
    matmul_bt: [{"N": 512, "M": 512, "K": 512}],
    matmul_ikj: [{"N": 512, "M": 512, "K": 512}],
    linear_cell: [{"N": 1, "M": 768, "K": 768}, {"N": 16, "M": 768, "K": 768},
                  {"N": 64, "M": 768, "K": 768}, {"N": 128, "M": 768, "K": 768},
                  {"N": 64, "M": 3072, "K": 768}],
    linear_scalar_gelu: [{"N": 16, "M": 3072, "K": 768}, {"N": 128, "M": 3072, "K": 768}],
    linear_relu: [{"N": 64, "M": 3072, "K": 768}],
    linear_bias_added: [{"N": 16, "M": 768, "K": 768}, {"N": 128, "M": 768, "K": 768}],
    linear_temp_relu: [{"N": 128, "M": 3072, "K": 768}],
    vecmat_vectors: [{"M": 3072, "K": 768}, {"M": 4096, "K": 4096}],
    column_sums: [{"N": 2048, "M": 2048}],
    pairwise_sq_dist: [{"N": 1024, "M": 1024, "K": 64}, {"N": 128, "M": 4096, "K": 256}],
    batched_linear: [{"B": 8, "N": 128, "M": 768, "K": 768},
                     {"B": 4, "N": 128, "M": 3072, "K": 768},
                     {"B": 64, "N": 16, "M": 768, "K": 768}],
    batched_linear_seq_first: [{"N": 128, "B": 8, "M": 768, "K": 768},
                               {"N": 8, "B": 128, "M": 768, "K": 768},
                               {"N": 512, "B": 1, "M": 768, "K": 768}],
    batched_linear_nt_seq_first: [{"N": 128, "B": 8, "M": 768, "K": 768},
                       {"N": 512, "B": 1, "M": 768, "K": 768}],
    causal_softmax: [{"H": 8, "L": 512}],
    attention: [{"L": 512, "D": 64}],
    scores_scaled: [{"H": 12, "L": 64, "D": 64}, {"H": 12, "L": 384, "D": 64}],
    gelu_tanh: [{"N": 1024, "M": 4096}],
    bias_gelu_temp: [{"N": 512, "M": 3072}],
    conv_same_if: [{"B": 1, "C": 64, "F": 64, "H": 56, "W": 56},
                   {"B": 1, "C": 256, "F": 256, "H": 14, "W": 14}],
    conv1d_select: [{"B": 8, "C": 256, "F": 256, "L": 512}],
    conv_stride2: [{"B": 8, "C": 64, "F": 128, "P": 28, "Q": 28}],
    conv_stride2_same_if: [{"B": 8, "C": 64, "F": 128, "P": 28, "Q": 28},
                           {"B": 1, "C": 128, "F": 256, "P": 14, "Q": 14}],
    depthwise_same_if: [{"B": 8, "C": 128, "H": 56, "W": 56}],
    batchnorm_infer: [{"B": 8, "C": 64, "H": 56, "W": 56}],
    sum_squares_cell: [{"N": 4096, "M": 1024}],
    middle_softmax: [{"B": 16, "L": 128, "D": 512}],
    sequence_mean: [{"B": 32, "L": 512, "D": 768}, {"B": 64, "L": 128, "D": 1024}],
    sequence_mean_weighted: [{"B": 32, "L": 512, "D": 768}],
    softmax_columns: [{"N": 1024, "M": 1024}, {"N": 128, "M": 4096}],
    channels_first_layernorm: [{"B": 8, "C": 96, "H": 56, "W": 56}],
    global_avgpool: [{"B": 8, "C": 512, "H": 7, "W": 7}, {"B": 32, "C": 256, "H": 14, "W": 14},
                     {"B": 8, "C": 64, "H": 56, "W": 56}],
    instance_norm: [{"B": 8, "C": 64, "H": 56, "W": 56}, {"B": 8, "C": 256, "H": 14, "W": 14}],
    conv_nhwc: [{"B": 8, "P": 56, "Q": 56, "C": 64, "F": 64}],
    matmul_at: [{"N": 512, "M": 512, "K": 512}, {"N": 1024, "M": 768, "K": 256}],
    matmul_blas: [{"N": 512, "M": 512, "K": 512}, {"N": 128, "M": 768, "K": 768}],
    token_conv1d: [{"B": 8, "C": 512, "L": 1024}],
    row_cumsum: [{"N": 512, "M": 4096}],
    log_softmax: [{"N": 512, "M": 4096}],
    argmax_rows: [{"N": 512, "M": 4096}, {"N": 1, "M": 1000000}],
    permute_last_two: [{"B": 16, "N": 512, "M": 512}, {"B": 1, "N": 2048, "M": 2048},
                       {"B": 8, "N": 1000, "M": 700}],
    permute_scale_bias: [{"B": 16, "N": 512, "M": 512}, {"B": 1, "N": 2048, "M": 2048}],
    nchw_to_nhwc: [{"B": 8, "C": 64, "H": 56, "W": 56}, {"B": 1, "C": 256, "H": 14, "W": 14}],
}

# what PyTorch eager runs for each (built lazily: torch is optional)
TORCH = {
    softmax_temps: lambda t, X: t.softmax(X, -1),
    softmax_if: lambda t, X: t.softmax(X, -1),
    layernorm_temps: lambda t, X, g, b: t.nn.functional.layer_norm(X, X.shape[-1:], g, b),
    layernorm_scalars: lambda t, X, g, b: t.nn.functional.layer_norm(X, X.shape[-1:], g, b),
    layernorm_residual: lambda t, X, R, g, b: t.nn.functional.layer_norm(X + R, X.shape[-1:],
                                                                       g, b),
    rmsnorm_temp: lambda t, X, g: X * t.rsqrt((X * X).mean(-1, keepdim=True) + 1e-6) * g,
    matmul_scalar: lambda t, A, B: A @ B,
    matmul_bt: lambda t, A, Bt: A @ Bt.T,
    matmul_ikj: lambda t, A, B: A @ B,
    linear_cell: lambda t, X, W, b: t.nn.functional.linear(X, W, b),
    linear_scalar_gelu: lambda t, X, W, b: t.nn.functional.gelu(
        t.nn.functional.linear(X, W, b)),
    linear_relu: lambda t, X, W, b: t.relu(t.nn.functional.linear(X, W, b)),
    linear_bias_added: lambda t, X, W, b: t.addmm(b, X, W),
    linear_temp_relu: lambda t, X, W, b: t.relu(t.addmm(b, X, W)),
    vecmat_vectors: lambda t, x, W: x @ W,
    column_sums: lambda t, X: X.sum(0),
    pairwise_sq_dist: lambda t, A, Bv: t.cdist(A, Bv) ** 2,
    batched_linear: lambda t, X, W, b: t.addmm(b, X.reshape(-1, X.shape[-1]), W).view(
        *X.shape[:-1], W.shape[1]),
    batched_linear_seq_first: lambda t, X, W: X @ W,
    batched_linear_nt_seq_first: lambda t, X, W, b: t.nn.functional.linear(X, W, b),
    scores_scaled: lambda t, Q, Kh: Q @ Kh.transpose(1, 2) * 0.125,
    causal_softmax: lambda t, S: t.softmax(S.masked_fill(t.triu(t.ones(
        S.shape[-1], S.shape[-1], dtype=t.bool), 1), float("-inf")), -1),
    attention: lambda t, Q, Kt, V: t.softmax(Q @ Kt.T * 0.125, -1) @ V,
    gelu_tanh: lambda t, X: t.nn.functional.gelu(X, approximate="tanh"),
    bias_gelu_temp: lambda t, X, b: t.nn.functional.gelu(X + b),
    conv_same_if: lambda t, X, Wt, b: t.nn.functional.conv2d(X, Wt, b, padding=1),
    conv1d_select: lambda t, X, Wt: t.nn.functional.conv1d(X, Wt, padding=2),
    conv_stride2: lambda t, X, Wt: t.nn.functional.conv2d(X, Wt, stride=2),
    conv_stride2_same_if: lambda t, X, Wt: t.nn.functional.conv2d(X, Wt, stride=2, padding=1),
    depthwise_same_if: lambda t, X, Wt: t.nn.functional.conv2d(X, Wt[:, None], padding=1,
                                                               groups=X.shape[1]),
    batchnorm_infer: lambda t, X, m, v, g, b: t.nn.functional.batch_norm(X, m, v, g, b,
                                                                          eps=1e-5),
    sum_squares_cell: lambda t, X: (X * X).sum().reshape(1),
    middle_softmax: lambda t, X: t.softmax(X, 1),
    sequence_mean: lambda t, X: X.mean(1),
    sequence_mean_weighted: lambda t, X, w: (X * w[:, None]).sum(1),
    softmax_columns: lambda t, X: t.softmax(X, 0),
    channels_first_layernorm: lambda t, X, g, b: t.nn.functional.layer_norm(
        X.permute(0, 2, 3, 1), X.shape[1:2], g, b, eps=1e-6).permute(0, 3, 1, 2),
    global_avgpool: lambda t, X: X.mean((2, 3)),
    instance_norm: lambda t, X, g, b: t.nn.functional.instance_norm(X, weight=g, bias=b,
                                                                    eps=1e-5),
    conv_nhwc: lambda t, X, Wt: t.nn.functional.conv2d(
        X.permute(0, 3, 1, 2), Wt.permute(3, 2, 0, 1)).permute(0, 2, 3, 1),
    matmul_at: lambda t, A, Bm: A.T @ Bm,
    matmul_blas: lambda t, A, Bm, Cm, alpha, beta: t.addmm(Cm, A, Bm, beta=beta, alpha=alpha),
    token_conv1d: lambda t, X, Wt: t.nn.functional.conv1d(
        t.nn.functional.pad(X, (3, 0)), Wt.flip(1)[:, None], groups=X.shape[1]),
    row_cumsum: lambda t, X: t.cumsum(X, 1),
    log_softmax: lambda t, X: t.log_softmax(X, 1),
    argmax_rows: lambda t, X: t.max(X, 1),
    permute_last_two: lambda t, X: X.transpose(1, 2).contiguous(),
    permute_scale_bias: lambda t, X, bias: X.transpose(1, 2) * 0.5 + bias,
    nchw_to_nhwc: lambda t, X: X.permute(0, 2, 3, 1).contiguous(),
}

ALL = list(NUMPY)


def positional(op: pd.Operator, inputs: dict) -> list:
    """A call's positional arguments: every argument but the outputs, in order."""
    return [inputs[a.name] for a in op.scop.arg_arrays if a.kind != "out"]


def float64(args: list) -> list:
    """The arguments as float64 (arrays copied), for the NumPy oracles."""
    return [np.float64(a) if np.ndim(a) == 0 else a.astype(np.float64) for a in args]


def results(op: pd.Operator, args: list, returned) -> tuple:
    """What a call computed: its outputs, or its inout arrays where it has no output."""
    if any(a.kind == "out" for a in op.scop.arg_arrays):
        return returned if isinstance(returned, tuple) else (returned,)
    return tuple(x for a, x in zip([a for a in op.scop.arg_arrays if a.kind != "out"], args,
                                   strict=True) if a.kind == "inout")
