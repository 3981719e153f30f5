"""Loop nests fused through a temporary (scop/fuse.py): which nests fuse, that the temporary
then lives in a scalar (or in the output's cell), the cases that must not fuse (other
bounds, another cell, a third reader, a dependence the fused order breaks), and compiled
kernels against the reference. ``linear_temp_relu`` of tests/phrasings.py (a product into a
temporary, then a ReLU nest) and ``bias_gelu_temp`` (a GELU of ``X + b`` through a
temporary, the second nest's variables named apart) are phrasings too."""

from __future__ import annotations

import pytest

import polydyn as pd
from polydyn import f32, inout, out, temp
from polydyn.pipeline import _Side
from polydyn.testing import check_kernel, region_points
from tests import phrasings as ph
from tests.targets import TARGETS

N, M = pd.sym("N M")


@pd.operator()
def three_steps(X: f32[N, M], Y: out(f32[N, M])):
    """Two temporaries in a chain of three nests: both fuse."""
    A = temp(f32[N, M])
    B = temp(f32[N, M])
    for i, j in pd.grid(N, M):
        A[i, j] = X[i, j] * 2.0
    for i, j in pd.grid(N, M):
        B[i, j] = pd.exp(A[i, j]) + A[i, j]
    for i, j in pd.grid(N, M):
        Y[i, j] = B[i, j] * B[i, j]


@pd.operator(assume="M >= 1")
def shorter(X: f32[N, M], Y: out(f32[N, M])):
    """The reader runs over one column less: no fusion."""
    T = temp(f32[N, M])
    for i, j in pd.grid(N, M):
        T[i, j] = X[i, j] + 1.0
    for i, j in pd.grid(N, M - 1):
        Y[i, j] = T[i, j] * 3.0


@pd.operator(assume="M >= 1")
def neighbour(X: f32[N, M], Y: out(f32[N, M])):
    """The reader reads the next column's cell: no fusion."""
    T = temp(f32[N, M + 1])
    for i, j in pd.grid(N, M + 1):
        T[i, j] = X[i, j - 1] if j >= 1 else 0.0
    for i, j in pd.grid(N, M + 1):
        if j < M:
            Y[i, j] = T[i, j + 1] - T[i, j]


@pd.operator()
def read_twice(X: f32[N, M], Y: out(f32[N, M]), Z: out(f32[N, M])):
    """A third nest reads the temporary too: it stays an array."""
    T = temp(f32[N, M])
    for i, j in pd.grid(N, M):
        T[i, j] = X[i, j] + 1.0
    for i, j in pd.grid(N, M):
        Y[i, j] = T[i, j] * 2.0
    for i, j in pd.grid(N, M):
        Z[i, j] = T[i, j] * 3.0


@pd.operator(assume="N >= 1")
def shifted_update(Z: inout(f32[N])):
    """The reader overwrites what the writer reads one iteration later: fused, the writer
    would read the new value; no fusion."""
    T = temp(f32[N])
    for i in range(1, N):
        T[i] = Z[i - 1] + 1.0
    for i in range(1, N):
        Z[i] = T[i] * 2.0


def _notes(op: pd.Operator) -> list[str]:
    _, notes, _ = _Side.rewritten(op.scop, None, True, False)
    return [n for n in notes if "run as one" in n]


def test_fused_nests() -> None:
    scop, notes, _ = _Side.rewritten(ph.bias_gelu_temp.scop, None, True, False)
    assert notes[0] == ("T: the nests that write and read it run as one (each cell lives "
                        "within one iteration)")
    assert all(a.kind != "temp" for a in scop.arrays)  # T is a scalar, then Y's cell
    assert _notes(three_steps) == [
        "A: the nests that write and read it run as one (each cell lives within one "
        "iteration)",
        "B: the nests that write and read it run as one (each cell lives within one "
        "iteration)"]


@pytest.mark.parametrize("op", [shorter, neighbour, read_twice, shifted_update],
                         ids=lambda op: op.scop.name)
def test_not_fused(op: pd.Operator) -> None:
    assert _notes(op) == []


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [ph.bias_gelu_temp, three_steps, read_twice, shifted_update],
                         ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    for sizes in ({"N": 0, "M": 5}, {"N": 1, "M": 1}, {"N": 3, "M": 17}, {"N": 7, "M": 33}):
        sizes = {s: sizes[s] for s in op.scop.syms}
        if sizes["N"] >= 1 or op is not shifted_update:  # its assumption: N >= 1
            check_kernel(kernel, sizes)
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=20, limit=3):
            check_kernel(kernel, sizes, variant=index)
