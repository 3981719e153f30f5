"""Loop-invariant math of element-wise nests computed once into local scalars
(scop/hoist.py): what moves and where, what must not move, and compiled kernels against the
reference at edge sizes and every region's points. ``batchnorm_infer`` of tests/phrasings.py
is checked with the other phrasings."""

from __future__ import annotations

import pytest

import polydyn as pd
from polydyn import f32, f64, i32, out
from polydyn.pipeline import _Side
from polydyn.testing import check_kernel, region_points
from tests import phrasings as ph
from tests.test_expand import enclosing_loops

C, H, W, N, M, K = pd.sym("C H W N M K")


@pd.operator()
def two_depths(X: f32[C, H, W], v: f32[C], w: f32[C, H], Y: out(f32[C, H, W])):
    """One statement, two invariants: one of ``c``, one of ``(c, y)``."""
    for c, y, x in pd.grid(C, H, W):
        Y[c, y, x] = X[c, y, x] / pd.sqrt(v[c]) + pd.exp(w[c, y] * 0.5) * X[c, y, x]


@pd.operator()
def shared(X: f64[N, M], v: f64[N], Y: out(f64[N, M]), Z: out(f64[N, M])):
    """Two statements of one nest share ``log(v[i])``: one scalar for both."""
    for i in range(N):
        for j in range(M):
            Y[i, j] = X[i, j] * pd.log(v[i] + 2.0)
        for j in range(M):
            Z[i, j] = X[i, j] - pd.log(v[i] + 2.0)


@pd.operator()
def of_a_scalar(X: f32[N, M], Y: out(f32[N, M])):
    """A local scalar's square root, computed once per row after the scalar."""
    for i in range(N):
        s = 1.0
        for j in range(M):
            s += X[i, j] * X[i, j]
        for j in range(M):
            Y[i, j] = X[i, j] / pd.sqrt(s / M)


@pd.operator()
def triangle(X: f32[N, N], v: f32[N], Y: out(f32[N, N])):
    """Rows ``i = N`` have no columns, and ``v[N]`` does not exist: the scalar is computed
    only where the row has a column."""
    for i in range(N + 1):
        for j in range(i, N):
            Y[i, j] = X[i, j] / pd.sqrt(v[i] + 1.0)


@pd.operator()
def transposed(X: f32[N, M], v: f32[N], Y: out(f32[M, N])):
    """A transposition keeps its perfect nest (its tiles)."""
    for i, j in pd.grid(N, M):
        Y[j, i] = X[i, j] / pd.sqrt(v[i] + 1.0)


@pd.operator()
def scaled_product(A: f32[N, K], B: f32[K, M], v: f32[N], Y: out(f32[N, M])):
    """A product's nest keeps its register tiles: nothing moves out of a sum."""
    for i, j in pd.grid(N, M):
        Y[i, j] = 0.0
        for k in range(K):
            Y[i, j] += A[i, k] * B[k, j]
        Y[i, j] = Y[i, j] / pd.sqrt(v[i] + 1.0)


@pd.operator(assume="W >= 1")
def changes_inside(X: f32[C, H, W], V: out(f32[C]), Y: out(f32[C, H, W])):
    """``V[c]`` grows in every row: its square root is not the same for the whole plane."""
    for c in range(C):
        V[c] = 1.0
        for y in range(H):
            V[c] += X[c, y, 0] * X[c, y, 0]
            for x in range(W):
                Y[c, y, x] = X[c, y, x] / pd.sqrt(V[c])


@pd.operator(assume="C >= 1")
def in_a_branch(X: f32[C, W], v: f32[C], Y: out(f32[C, W])):
    """``v[c + 1]`` is read only where ``c < C - 1``: the branch stays where it is."""
    for c, x in pd.grid(C, W):
        Y[c, x] = X[c, x] / pd.sqrt(v[c + 1]) if c < C - 1 else X[c, x]


@pd.operator()
def integer_math(X: f32[N, M], d: i32[N], Y: out(f32[N, M])):
    """An integer division may trap where the statement would not run: not moved."""
    for i, j in pd.grid(N, M):
        Y[i, j] = X[i, j] / (d[i] // 2 + 1)


def _notes(op: pd.Operator, cpu: bool = True) -> list[str]:
    _, notes, _ = _Side.rewritten(op.scop, None, cpu, False)
    return [n for n in notes if "is computed once per" in n]


def test_hoisted_values() -> None:
    assert _notes(ph.batchnorm_infer) == [
        "pd_inv: sqrt((var[c] + 1e-05)) is computed once per iteration of the loop over c"]
    assert _notes(two_depths) == [
        "pd_inv: sqrt(v[c]) is computed once per iteration of the loop over c",
        "pd_inv1: exp((w[c, y] * 0.5)) is computed once per iteration of the loop over y"]
    assert _notes(shared) == [
        "pd_inv: log((v[i] + 2.0)) is computed once per iteration of the loop over i"]
    assert _notes(of_a_scalar) == [
        "pd_inv: sqrt((s / M)) is computed once per iteration of the loop over i"]


@pytest.mark.parametrize("op", [transposed, scaled_product, changes_inside, in_a_branch,
                                integer_math], ids=lambda op: op.scop.name)
def test_not_hoisted(op: pd.Operator) -> None:
    assert _notes(op) == []


def test_a_gpu_keeps_the_statement() -> None:
    assert _notes(ph.batchnorm_infer, cpu=False) == []


def test_the_scalar_runs_only_where_its_statement_does() -> None:
    scop, _, _ = _Side.rewritten(triangle.scop, None, True, False)
    stmt = next(s for s in scop.statements if s.target.name == "pd_inv")
    assert str(stmt.domain) == "[N] -> { pd_inv_s[i] : 0 <= i < N }"


def test_the_plane_loops_hold_only_the_division() -> None:
    """In batch norm's generic variant the square root stands outside the loops over the
    plane."""
    source = pd.compile(ph.batchnorm_infer).source.split("variant generic")[-1]
    root = enclosing_loops(source, "pd_inv = sqrtf(")
    assert [loop for loop in root if "H" in loop or "W" in loop] == [], root
    assert "< C;" in root[0], root
    assert sum("sqrtf(" in line for line in source.splitlines()) == 1



@pytest.mark.parametrize("op", [two_depths, shared, of_a_scalar, triangle, transposed,
                                changes_inside, in_a_branch, integer_math],
                         ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator) -> None:
    kernel = pd.compile(op)
    for n in (0, 1, 2, 7, 17):
        # the sizes at n, at least 1 where the operator assumes it
        check_kernel(kernel, {s: max(n, 1) if s in op.scop.assume else n
                              for s in kernel.scop.syms})
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=40, limit=3):
            check_kernel(kernel, sizes, variant=index)
