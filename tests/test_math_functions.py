"""Math functions in the C target: ``exp`` of floats (``prelude.EXP_F32``) against NumPy's in
double precision over every range its result has (normal, denormal, zero, overflow) and at
inf, -inf and NaN, and a softmax whose masked entries are -10000 or -inf."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, inout, out

N, M = pd.sym("N M")


@pd.operator
def exp_of(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.exp(X[i])


@pd.operator(assume="M >= 1")
def masked_rows(P: inout(f32[N, M]), mask: f32[M]):
    for i in range(N):
        m = P[i, 0] + mask[0]
        for j in range(M):
            m = max(m, P[i, j] + mask[j])
        total = 0.0
        for j in range(M):
            P[i, j] = pd.exp(P[i, j] + mask[j] - m)
            total += P[i, j]
        for j in range(M):
            P[i, j] = P[i, j] / total


def test_exp_over_every_range_of_its_result() -> None:
    special = np.array([0.0, -0.0, 1.0, -1.0, 1e-30, -87.0, -87.5, -95.0, -103.0, -103.9,
                        -104.0, -104.5, -110.0, -10000.0, 88.0, 88.7, 88.73, 89.0, 1e4,
                        np.inf, -np.inf, np.nan], dtype=np.float32)
    rng = np.random.default_rng(0)
    x = np.concatenate([special, rng.uniform(-120, 100, 20000).astype(np.float32),
                        rng.uniform(-1, 1, 2000).astype(np.float32)])
    got = pd.compile(exp_of)(x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    # pd_exp_f32 keeps within 1.01 units in the last place of exp; where AVX-512 is not
    # there, libmvec's expf runs, which glibc documents within 4
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=4)
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    assert np.all(got[want == 0] == 0)


@pytest.mark.parametrize("masked", [-10000.0, -np.inf])
def test_softmax_with_a_padding_mask(masked: float) -> None:
    n, m = 37, 70
    rng = np.random.default_rng(1)
    p = rng.standard_normal((n, m)).astype(np.float32)
    mask = np.zeros(m, dtype=np.float32)
    mask[m // 2:] = masked
    want = np.exp(p.astype(np.float64) + mask - (p + mask).max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    got = p.copy()
    pd.compile(masked_rows)(got, mask)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert np.all(got[:, m // 2:] == 0)


def test_the_helper_is_printed_where_it_is_called() -> None:
    assert "pd_exp_f32(" in pd.compile(exp_of).source
    assert "PD_EXPF" not in pd.compile(pd.operator(_copy)).source


def _copy(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = X[i]
