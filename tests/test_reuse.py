"""A math function's value computed in two loops over the same range, stored once
(scop/reuse.py): softmax written with ``exp(X[i, j] - m)`` in its sum and again in its
normalization. The rewritten Scop runs on the reference interpreter to the same values (the
rewrite is exact); forms that do not fit stay; compiled kernels agree with the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.scop.printer import format_expr
from polydyn.scop.reuse import reuse_values
from polydyn.testing import check_everywhere, interpreted_outputs

N, M = pd.sym("N M")


@pd.operator(assume="M >= 1")
def softmax_twice(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        m = X[i, 0]
        for j in range(1, M):
            m = max(m, X[i, j])
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j] - m)
        for k in range(M):
            Y[i, k] = pd.exp(X[i, k] - m) / s


@pd.operator(assume="M >= 1")
def erf_scaled(X: f32[N, M], Y: out(f32[N, M])):
    """Another function, the product form, the cell's row from a sym offset."""
    for i in range(N):
        p = 1.0
        for j in range(M):
            p *= 1.0 + pd.erf(X[i, j])
        for j in range(M):
            Y[i, j] = (1.0 + pd.erf(X[i, j])) * p


# --- forms that stay --------------------------------------------------------------------------


@pd.operator(assume="M >= 1")
def other_range(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        s = 0.0
        for j in range(1, M):
            s += pd.exp(X[i, j])
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j]) / s


@pd.operator(assume="M >= 1")
def no_call(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        s = 0.0
        for j in range(M):
            s += X[i, j] * X[i, j]
        for j in range(M):
            Y[i, j] = X[i, j] * X[i, j] / s


@pd.operator(assume="M >= 1")
def changed_between(X: f32[N, M], Y: out(f32[N, M])):
    """``m`` changes between the loops: the second exp is another value."""
    for i in range(N):
        m = X[i, 0]
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j] - m)
        m = m + 1.0
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j] - m) / s


@pd.operator(assume="M >= 1")
def cell_read_between(X: f32[N, M], Y: out(f32[N, M]), Z: out(f32[N])):
    for i in range(N):
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j])
        Z[i] = Y[i, 0]
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j]) / s


@pd.operator(assume="M >= 1")
def one_cell(X: f32[N, M], Y: out(f32[N])):
    """The second loop writes one cell: its points do not have cells of their own."""
    for i in range(N):
        s = 0.0
        for j in range(M):
            s += pd.exp(X[i, j])
        for j in range(M):
            Y[i] = pd.exp(X[i, j]) / s


REUSED = {softmax_twice: "exp((X[i, k] - m)): computed once, in Y[i, k]",
          erf_scaled: "(1.0 + erf(X[i, j])): computed once, in Y[i, j]"}
KEPT = [other_range, no_call, changed_between, cell_read_between, one_cell]


@pytest.mark.parametrize("op", list(REUSED), ids=lambda op: op.scop.name)
def test_value_is_stored_once(op: pd.Operator) -> None:
    scop, notes = reuse_values(op.scop)
    assert len(notes) == 1 and notes[0].startswith(REUSED[op]), notes
    calls = sum(format_expr(s.value).count("exp(") + format_expr(s.value).count("erf(")
                for s in scop.statements)
    assert calls == 1


@pytest.mark.parametrize("op", KEPT, ids=lambda op: op.scop.name)
def test_other_forms_stay(op: pd.Operator) -> None:
    scop, notes = reuse_values(op.scop)
    assert notes == () and scop is op.scop


@pytest.mark.parametrize("op", list(REUSED), ids=lambda op: op.scop.name)
def test_rewritten_scop_computes_the_same_values(op: pd.Operator) -> None:
    """On the reference interpreter, the outputs starting as NaN: bit for bit."""
    rewritten, _ = reuse_values(op.scop)
    for n, m in ((0, 1), (1, 1), (2, 3), (3, 17), (5, 64)):
        sizes = {"N": n, "M": m}
        want, got = (interpreted_outputs(op, scop, sizes, {"out": np.nan})
                     for scop in (op.scop, rewritten))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("op", [*REUSED, changed_between], ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator) -> None:
    kernel = pd.compile(op)
    check_everywhere(kernel, [(0, 1), (1, 1), (3, 17), (7, 33), (2, 257)], hi=40)
