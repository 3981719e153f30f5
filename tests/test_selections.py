"""Selections: a running maximum (minimum) and the index where it was reached, kept in two
local scalars (``k = j if x > b else k`` before ``b = max(b, x)``), run as SIMD lanes whose
copies combine in lane order (``schedule.reductions.Selection``, ``lowering.openmp.Lanes``).
The results must be the sequential loop's bit for bit: ties go to the first index, NaNs never
win unless the first element is one, and a signed zero keeps the sign of the one chosen."""

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, f64, i32, i64, out
from polydyn.runtime.opencl import opencl_available

N, M = pd.sym("N M")


@pd.operator(assume="M >= 1")
def argmax_max(X: f32[N, M], idx: out(i64[N]), best: out(f32[N])):
    for i in range(N):
        b = X[i, 0]
        k = 0
        for j in range(1, M):
            k = j if X[i, j] > b else k
            b = max(b, X[i, j])
        idx[i] = k
        best[i] = b


@pd.operator
def argmin_flipped(X: f64[N, M], idx: out(i32[N])):
    """The comparison written value-first, the index shifted, from a sentinel."""
    for i in range(N):
        b = 1e300
        k = -1
        for j in range(M):
            k = j + 1 if b > X[i, j] else k
            b = X[i, j] if X[i, j] < b else b
        idx[i] = k


@pd.operator(assume="M >= 1")
def argmax_cells(X: f32[N, M], best: out(f32[N]), idx: out(i64[N])):
    """The selection kept in the output cells (``scop/hold.py`` holds them in scalars), the
    maximum written as a conditional."""
    for i in range(N):
        best[i] = X[i, 0]
        idx[i] = 0
        for j in range(1, M):
            idx[i] = j if best[i] < X[i, j] else idx[i]
            best[i] = X[i, j] if X[i, j] > best[i] else best[i]


@pd.operator(assume="M >= 1")
def argmax_last(X: f32[N, M], idx: out(i32[N])):
    """``>=``: the last of equal maxima, which lanes would not keep."""
    for i in range(N):
        b = X[i, 0]
        k = 0
        for j in range(1, M):
            k = j if X[i, j] >= b else k
            b = max(b, X[i, j])
        idx[i] = k


@pd.operator(assume="M >= 1")
def argmax_backwards(X: f32[N, M], idx: out(i32[N])):
    """An index that falls as the loop runs: the first maximum has the largest index."""
    for i in range(N):
        b = X[i, 0]
        k = M
        for j in range(1, M):
            k = M - j if X[i, j] > b else k
            b = max(b, X[i, j])
        idx[i] = k


@pd.operator(assume="M >= 1")
def two_indices(X: f32[N, M], first: out(i32[N]), second: out(i32[N])):
    """Two indices chosen on one running maximum: lanes combine one pair per value."""
    for i in range(N):
        b = X[i, 0]
        k = 0
        q = 0
        for j in range(1, M):
            k = j if X[i, j] > b else k
            q = 2 * j if X[i, j] > b else q
            b = max(b, X[i, j])
        first[i] = k
        second[i] = q


def _sequential(op: pd.Operator, X: np.ndarray) -> tuple[np.ndarray, ...]:
    got = op.reference(X)
    return got if isinstance(got, tuple) else (got,)


def _rows(dtype: type, m: int, seed: int) -> np.ndarray:
    """Rows with ties (few distinct values), NaNs, signed zeros, infinities."""
    rng = np.random.default_rng(seed)
    rows = [rng.integers(-3, 4, m).astype(dtype),  # ties everywhere
            rng.standard_normal(m).astype(dtype),
            np.full(m, -0.0, dtype), np.zeros(m, dtype)]
    zeros = rng.choice([-0.0, 0.0], m).astype(dtype)
    zeros[rng.integers(0, m, max(1, m // 4))] = -1
    rows.append(zeros)
    nans = rng.standard_normal(m).astype(dtype)
    nans[rng.integers(0, m, max(1, m // 3))] = np.nan
    rows.append(nans)
    first_nan = rng.standard_normal(m).astype(dtype)
    first_nan[0] = np.nan
    rows.append(first_nan)
    rows.append(np.where(rng.random(m) < 0.5, np.inf, -np.inf).astype(dtype))
    return np.stack(rows)


def _lanes(k: pd.Kernel) -> bool:
    return "#pragma omp simd\n" in k.source and "pd_lg" in k.source


@pytest.mark.parametrize("op", [argmax_max, argmin_flipped, argmax_cells],
                         ids=lambda op: op.scop.name)
def test_selection_runs_in_lanes_as_the_loop_does(op: pd.Operator) -> None:
    k = pd.compile(op)
    assert _lanes(k)
    if op is argmax_cells:
        assert any(n.startswith("best[i] and idx[i]: the selection over j is kept in the "
                                "local scalars") for n in k.notes), k.notes
    dtype = np.float64 if op is argmin_flipped else np.float32
    for m in (1, 2, 15, 16, 17, 31, 32, 33, 100):
        X = _rows(dtype, m, seed=m)
        want = _sequential(op, X)
        for v in k.variants:
            if v.name == "N=1":
                for row in range(X.shape[0]):
                    got = k.run_variant(v.name, X[row:row + 1])
                    got = got if isinstance(got, tuple) else (got,)
                    for g, w in zip(got, want, strict=True):
                        np.testing.assert_array_equal(g, w[row:row + 1], err_msg=(m, row))
                        assert np.array_equal(np.signbit(g), np.signbit(w[row:row + 1]))
                continue
            got = k.run_variant(v.name, X)
            got = got if isinstance(got, tuple) else (got,)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w, err_msg=(v.name, m))
                assert np.array_equal(np.signbit(g), np.signbit(w)), (v.name, m)
    empty = np.zeros((0, 5), dtype)
    assert all(x.shape == (0,) for x in _sequential(op, empty))
    got = k(empty)
    assert all(x.shape == (0,) for x in (got if isinstance(got, tuple) else (got,)))


def test_a_long_selection_takes_the_threads() -> None:
    """One long row (the ``N = 1`` variant, past 2^15 instances): each thread selects in
    lanes over a block of its own, and the blocks combine as the lanes do, so the first
    maximum wins whichever block holds it."""
    k = pd.compile(argmax_max)
    assert "pd_ri" in k.source
    m = 20011
    X = _rows(np.float32, m, seed=3)
    late = np.zeros(m, np.float32)
    late[m - 5], late[m // 2 + 1] = 2, 2  # the maximum in the second block only
    early = np.ones(m, np.float32)
    early[[3, m // 2, m - 2]] = 7  # equal maxima in both blocks
    for row in [*X, late, early]:
        got = k.run_variant("N=1", row[None, :])
        for g, w in zip(got, _sequential(argmax_max, row[None, :]), strict=True):
            np.testing.assert_array_equal(g, w)
            assert np.array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.parametrize("op", [argmax_last, argmax_backwards, two_indices],
                         ids=lambda op: op.scop.name)
def test_selections_that_lanes_would_change_stay_in_order(op: pd.Operator) -> None:
    """The last of equal maxima (``>=``), an index that falls along the loop, two indices
    of one maximum: a lane's combination would pick another cell, so the loop runs as
    written."""
    k = pd.compile(op)
    assert not _lanes(k)
    for m in (1, 17, 40):
        X = _rows(np.float32, m, seed=m)
        got = k(X)
        for g, w in zip(got if isinstance(got, tuple) else (got,), _sequential(op, X),
                        strict=True):
            np.testing.assert_array_equal(g, w)


def test_selection_matches_numpy_argmax() -> None:
    """Without NaNs, the first largest element, as ``np.argmax`` has it."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 5, (9, 259)).astype(np.float32)
    idx, best = pd.compile(argmax_max)(X)
    np.testing.assert_array_equal(idx, np.argmax(X, axis=1))
    np.testing.assert_array_equal(best, X.max(axis=1))


@pytest.mark.opencl
@pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)")
@pytest.mark.parametrize("op", [argmax_cells, argmin_flipped], ids=lambda op: op.scop.name)
def test_selection_on_opencl_as_the_loop_does(op: pd.Operator) -> None:
    """OpenCL runs the held selection as written in each work-item: the loop's results."""
    k = pd.compile(op, target="opencl")
    dtype = np.float64 if op is argmin_flipped else np.float32
    for m in (1, 17, 40):
        X = _rows(dtype, m, seed=m)
        got = k(X)
        for g, w in zip(got if isinstance(got, tuple) else (got,), _sequential(op, X),
                        strict=True):
            np.testing.assert_array_equal(g, w, err_msg=m)
            assert np.array_equal(np.signbit(g), np.signbit(w)), m
