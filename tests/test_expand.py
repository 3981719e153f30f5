"""Local scalars expanded into temporaries where the loops of their iteration run along the
rows (scop/expand.py), and those loops sunk below the scalars' inner loops
(schedule.auto.sink_row_members): which scalars are expanded, the cases that must not be,
the schedule the CPU then runs, and compiled kernels against the reference at every
region's points. ``middle_softmax`` and ``channels_first_layernorm`` of tests/phrasings.py
are checked with the other phrasings."""

from __future__ import annotations

import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.pipeline import _Side
from polydyn.testing import check_kernel, region_points
from tests import phrasings as ph
from tests.targets import TARGETS

B, L, D, N, M = pd.sym("B L D N M")


@pd.operator(assume="L >= 1")
def pool_norm(X: f32[B, L, D], Y: out(f32[B, D]), Z: out(f32[B, L, D])):
    """The mean over the sequence, stored, and the input divided by it: ``m`` is read after
    its sum, so it is not forwarded into Y alone."""
    for b, d in pd.grid(B, D):
        m = 0.0
        for s in range(L):
            m += X[b, s, d]
        m = m / L
        Y[b, d] = m
        for s in range(L):
            Z[b, s, d] = X[b, s, d] - m


@pd.operator(assume="M >= 1")
def row_softmax(X: f32[N, M], Y: out(f32[N, M])):
    """The loops over the row run along it: nothing to expand."""
    for i in range(N):
        m = X[i, 0]
        for j in range(M):
            m = max(m, X[i, j])
        for j in range(M):
            Y[i, j] = X[i, j] - m


@pd.operator(assume="L >= 1 and D >= 1")
def from_one(X: f32[B, L, D], Y: out(f32[B, L, D])):
    """The loop over d starts at 1: no temporary of its extent."""
    for b in range(B):
        for d in range(1, D):
            m = X[b, 0, d]
            for s in range(L):
                m = max(m, X[b, s, d])
            for s in range(L):
                Y[b, s, d] = X[b, s, d] - m


@pd.operator(assume="L >= 1")
def transposed(X: f32[B, D, L], Y: out(f32[B, L, D])):
    """X runs along d in another subscript than its last: no expansion."""
    for b, d in pd.grid(B, D):
        m = X[b, d, 0]
        for s in range(L):
            m = max(m, X[b, d, s])
        for s in range(L):
            Y[b, s, d] = X[b, d, s] - m


@pd.operator(assume="L >= 1")
def guarded_first(X: f32[B, L, D], Y: out(f32[B, L, D])):
    """The scalar's first writes stand under an ``if``: kept a scalar."""
    for b, d in pd.grid(B, D):
        if d >= 1:  # noqa: SIM108 (the phrasing under test)
            m = X[b, 0, d]
        else:
            m = 0.0
        for s in range(L):
            Y[b, s, d] = X[b, s, d] - m


@pd.operator(assume="L >= 1")
def carried(X: f32[B, L, D], Y: out(f32[B, L, D])):
    """Expanded, but the loop over d carries a dependence (Y's previous column): it stays
    outside the loops over s."""
    for b, d in pd.grid(B, D):
        m = X[b, 0, d]
        for s in range(L):
            m = max(m, X[b, s, d])
        for s in range(L):
            if d >= 1:
                Y[b, s, d] = X[b, s, d] - m + 0.5 * Y[b, s, d - 1]
            else:
                Y[b, s, d] = X[b, s, d] - m


@pd.operator(assume="L >= 1")
def lower_columns(X: f32[B, L, D], Z: out(f32[B, L, D])):
    """The sum of each column's first ``d + 1`` rows scales the column: the loops over s
    depend on d through their guard."""
    for b, d in pd.grid(B, D):
        t = 1.0
        for s in range(L):
            if s <= d:
                t += X[b, s, d] * X[b, s, d]
        for s in range(L):
            Z[b, s, d] = X[b, s, d] / t


def _notes(op: pd.Operator, cpu: bool = True) -> list[str]:
    _, notes, _ = _Side.rewritten(op.scop, None, cpu, False)
    return [n for n in notes if "the scalar is kept in" in n]


def test_expanded_scalars() -> None:
    scop, _, _ = _Side.rewritten(ph.middle_softmax.scop, None, True, False)
    assert {(a.name, a.kind, tuple(str(x) for x in a.shape)) for a in scop.arrays
            if a.name in ("m", "t")} == {("m", "temp", ("B", "D")), ("t", "temp", ("B", "D"))}
    assert _notes(ph.middle_softmax) == [
        "m: the scalar is kept in m[b, d] (the loop over d then runs along the rows)",
        "t: the scalar is kept in t[b, d] (the loop over d then runs along the rows)"]
    assert _notes(pool_norm) == [
        "m: the scalar is kept in m[b, d] (the loop over d then runs along the rows)"]
    assert [n[:28] for n in _notes(carried) + _notes(lower_columns)] == [
        "m: the scalar is kept in m[b", "t: the scalar is kept in t[b"]


@pytest.mark.parametrize("op", [row_softmax, from_one, transposed, guarded_first],
                         ids=lambda op: op.scop.name)
def test_not_expanded(op: pd.Operator) -> None:
    assert _notes(op) == []


def test_a_gpu_keeps_its_scalars() -> None:
    assert _notes(ph.middle_softmax, cpu=False) == []


def enclosing_loops(source: str, needle: str) -> list[str]:
    """The headers of the loops around the first line of ``source`` holding ``needle``,
    innermost first (by indentation)."""
    lines = source.splitlines()
    at = next(k for k, line in enumerate(lines) if needle in line)
    depth = len(lines[at]) - len(lines[at].lstrip())
    out = []
    for line in reversed(lines[:at]):
        indent = len(line) - len(line.lstrip())
        if indent < depth and line.lstrip().startswith("for ("):
            out.append(line.strip())
            depth = indent
    return out


def test_the_row_loop_runs_innermost() -> None:
    """In the generic variant the loop over ``d`` (``< D``) runs inside the loop over the
    sequence (``< L``), the max vectorized along the rows."""
    source = pd.compile(ph.middle_softmax).source.split("variant generic")[-1]
    loops = enclosing_loops(source, "m[(b) * D + d] = pd_max_f32(")
    assert "< D;" in loops[0] and "< L;" in loops[1], loops


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [ph.middle_softmax, pool_norm, carried, lower_columns,
                                from_one, transposed, guarded_first],
                         ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    for sizes in ({"B": 0, "L": 3, "D": 5}, {"B": 1, "L": 1, "D": 1},
                  {"B": 3, "L": 5, "D": 17}, {"B": 2, "L": 7, "D": 33}):
        check_kernel(kernel, sizes)
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=40, limit=3):
            check_kernel(kernel, sizes, variant=index)
