"""The reference interpreter (scop/interp.py) computes in each value's NumPy type, converting
after every operation whose result type NumPy would not give by itself. Its results are
compared bit for bit with the same arithmetic done on whole NumPy arrays."""

from __future__ import annotations

import numpy as np

import polydyn as pd
from kernels.matmul import matmul
from polydyn import f32, f64, i32, out
from polydyn.scop.interp import python_source, run_reference

N = pd.sym("N")


@pd.operator
def mixed(X: f32[N], b: f32[N], D: f64[N], K: i32[N], Y: out(f32[N]), Z: out(f64[N]),
          J: out(i32[N])):
    for i in range(N):
        Y[i] = X[i] * (b[i] + X[i]) - max(X[i], b[i] * 0.5) / 3
        Z[i] = D[i] * (X[i] + 1.0) + (D[i] if X[i] > b[i] else -X[i])
        J[i] = K[i] * (K[i] - 3) + K[i] // 2 - min(K[i], i)


def test_same_bits_as_whole_array_arithmetic() -> None:
    rng = np.random.default_rng(7)
    n = 37
    X, b = (rng.uniform(-2, 2, n).astype(np.float32) for _ in range(2))
    D = rng.uniform(-2, 2, n)
    K = rng.integers(-9, 9, n).astype(np.int32)
    Y, Z, J = run_reference(mixed.scop, (X, b, D, K), {})
    f = np.float32
    want_y = X * (b + X) - np.maximum(X, b * f(0.5)) / f(3)
    larger = np.greater(X, b)
    want_z = D * (X + f(1.0)).astype(np.float64) + np.where(larger, D, -X.astype(np.float64))
    idx = np.arange(n, dtype=np.int32)
    want_j = K * (K - 3) + K // 2 - np.minimum(K, idx)
    for got, want in ((Y, want_y), (Z, want_z), (J, want_j)):
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_conversions_only_where_numpy_would_change_the_type() -> None:
    """matmul's update is plain arithmetic on float32 elements; mixed's conversions stand
    where a weak literal, an index or two types meet."""
    update = [line for line in python_source(matmul.scop).splitlines() if "+ (A[" in line]
    assert update and "_T_" not in update[0], update
    text = python_source(mixed.scop)
    assert "_T_f32((_T_f32(_max(" not in text  # max of two f32 values is one of them
    assert "_T_f64(" in text  # f32 and f64 meet
