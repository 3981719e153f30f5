"""Conditional expressions that are a max or a min (scop/selects.py) become max/min. Element
by element the result is Python's exactly: compiled, it agrees bit for bit with the
reference (which runs the conditional as written) on inputs with NaNs and signed zeros. In a
reduction the max is then reassociated like any max reduction (NaN order unspecified, as for
``max()`` written out), so there the check is on finite inputs."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.scop.exprs import Bin, Select
from polydyn.scop.selects import canonical_selects
from polydyn.testing import check_kernel
from tests.targets import TARGETS

N, M = pd.sym("N M")


@pd.operator(assume="M >= 1")
def row_stats(X: f32[N, M], Hi: out(f32[N]), Lo: out(f32[N]), H2: out(f32[N]),
              L2: out(f32[N])):
    for i in range(N):
        hi = X[i, 0]
        lo = X[i, 0]
        h2 = X[i, 0]
        l2 = X[i, 0]
        for j in range(M):
            hi = X[i, j] if X[i, j] > hi else hi
            lo = X[i, j] if X[i, j] < lo else lo
            h2 = X[i, j] if h2 < X[i, j] else h2
            l2 = l2 if X[i, j] > l2 else X[i, j]
        Hi[i] = hi
        Lo[i] = lo
        H2[i] = h2
        L2[i] = l2


@pd.operator()
def pick(X: f32[N, M], Z: f32[N, M], Hi: out(f32[N, M]), Lo: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            Hi[i, j] = X[i, j] if X[i, j] > Z[i, j] else Z[i, j]
            Lo[i, j] = Z[i, j] if X[i, j] > Z[i, j] else X[i, j]


@pd.operator()
def kept(X: f32[N, M], Y: out(f32[N, M])):
    """Not a max or a min: ``>=`` (ties pick the other operand), another value."""
    for i in range(N):
        for j in range(M):
            Y[i, j] = (X[i, j] if X[i, j] >= 0.0 else 0.0) + \
                (X[i, j] if X[i, j] > 0.5 else 1.0)


def test_conditionals_become_max_and_min() -> None:
    scop, notes = canonical_selects(row_stats.scop)
    assert len(notes) == 4
    ops = [s.value.op for s in scop.statements if isinstance(s.value, Bin)]
    assert sorted(ops) == ["max", "max", "min", "min"]
    assert not any(isinstance(e, Select) for s in scop.statements for e in s.value.walk())


def test_other_conditionals_stay() -> None:
    scop, notes = canonical_selects(kept.scop)
    assert notes == () and scop is kept.scop


@pytest.mark.parametrize("target", TARGETS)
def test_element_wise_same_bits_as_the_reference(target: str) -> None:
    k = pd.compile(pick, target=target)
    assert len(k.notes) == 2
    rng = np.random.default_rng(5)
    for n, m in ((1, 1), (3, 17), (5, 64), (2, 129)):
        X, Z = (rng.uniform(-1, 1, (n, m)).astype(np.float32) for _ in range(2))
        for A in (X, Z):
            A[rng.random((n, m)) < 0.2] = np.nan
            A[rng.random((n, m)) < 0.2] = -0.0
            A[rng.random((n, m)) < 0.2] = 0.0
        for g, w in zip(k(X, Z), pick.reference(X, Z), strict=True):
            np.testing.assert_array_equal(g.view(np.uint32), w.view(np.uint32))


@pytest.mark.parametrize("target", TARGETS)
def test_reductions_against_the_reference(target: str) -> None:
    k = pd.compile(row_stats, target=target)
    assert len(k.notes) == 4
    for sizes in ({"N": 1, "M": 1}, {"N": 3, "M": 17}, {"N": 5, "M": 64}, {"N": 2, "M": 129}):
        check_kernel(k, sizes)
