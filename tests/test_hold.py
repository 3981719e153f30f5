"""Cells held in local scalars (scop/hold.py): a dot product accumulated in its output cell,
whose operands run along the reduction (nn.Linear's ``X[n, k] * W[o, k]``, a product with B
transposed, a row's max, a sum over a nest of loops), is kept in a local scalar and stored
once.

Each operator is compiled for C and OpenCL and checked against the reference (which runs it
as written) at sizes 0, 1, primes and around every variant's region edges; the rewritten Scop
runs on the reference interpreter to the values of the original. Cells that do not have the
form, or whose loops carry register tiles (the bundled matmul's ``B[k, j]``), stay.
"""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, out
from polydyn.scop.hold import hold_cells
from polydyn.testing import check_everywhere, interpreted_outputs
from tests.targets import op_targets

N, M, K = pd.sym("N M K")


@pd.operator()
def linear(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[o, k]


@pd.operator()
def linear_relu(X: f32[N, K], W: f32[M, K], Y: out(f32[N, M])):
    """A store after the loop: the epilogue reads the cell."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = 0.0
            for k in range(K):
                Y[n, o] = Y[n, o] + X[n, k] * W[o, k]
            Y[n, o] = max(Y[n, o], 0.0)


@pd.operator(assume="M >= 1")
def rowmax(X: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        Y[i] = X[i, 0]
        for j in range(1, M):
            Y[i] = max(Y[i], X[i, j])


@pd.operator()
def bt_then_read(A: f32[N, K], B: f32[M, K], C: out(f32[N, M]), R: out(f32[N, M])):
    """A later statement reads the cell: it sees the stored sum."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * B[j, k]
            R[i, j] = C[i, j] * 2.0


@pd.operator()
def total_squares(X: f32[N, M], y: out(f32[1])):
    """A whole array's sum of squares in one cell: the sum runs over a nest of two loops."""
    y[0] = 0.0
    for i, j in pd.grid(N, M):
        y[0] += X[i, j] * X[i, j]


@pd.operator()
def channel_sums(X: f32[N, M, K], y: out(f32[M])):
    """Sums over the first and last axes (batch norm's statistics): a nest per channel."""
    for m in range(M):
        y[m] = 0.0
        for n, k in pd.grid(N, K):
            y[m] += X[n, m, k]


HELD = {linear: 1, linear_relu: 1, rowmax: 1, bt_then_read: 1, total_squares: 1,
        channel_sums: 1}


@pd.operator()
def two_statements(A: f32[N, K], B: f32[M, K], C: out(f32[N, M]), D: out(f32[N, K])):
    """The loop holds another statement."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * B[j, k]
                D[i, k] = A[i, k]


@pd.operator()
def strided(A: f32[N, K], B: f32[M, K], C: out(f32[N, M])):
    """The operands run along k with stride 2 (no contiguous rows)."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range((K + 1) // 2):
                C[i, j] += A[i, 2 * k] * B[j, 2 * k]


KEPT = [two_statements, strided, load("matmul")[0], load("batched_matmul")[0],
        load("conv2d")[0], load("maxpool")[0]]


def _sizes(op: pd.Operator, values: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(op.scop.syms, values, strict=True))


@pytest.mark.parametrize("op", list(HELD), ids=lambda op: op.scop.name)
def test_cells_are_held_in_scalars(op: pd.Operator) -> None:
    scop, notes = hold_cells(op.scop)
    assert len(notes) == HELD[op], notes
    assert len([a for a in scop.arrays if a.kind == "local"]) == \
        len([a for a in op.scop.arrays if a.kind == "local"]) + HELD[op]


@pytest.mark.parametrize("op", KEPT, ids=lambda op: op.scop.name)
def test_cells_that_do_not_fit_stay(op: pd.Operator) -> None:
    scop, notes = hold_cells(op.scop)
    assert notes == () and scop is op.scop


@pytest.mark.parametrize("op", list(HELD), ids=lambda op: op.scop.name)
def test_rewritten_scop_computes_the_same_values(op: pd.Operator) -> None:
    """The rewritten Scop on the reference interpreter, outputs starting as NaN."""
    rewritten, _ = hold_cells(op.scop)
    for values in ((1, 1, 0), (1, 1, 1), (2, 3, 1), (3, 5, 7), (7, 4, 3)):
        sizes = _sizes(op, values[:len(op.scop.syms)])
        want, got = (interpreted_outputs(op, scop, sizes, {"out": np.nan})
                     for scop in (op.scop, rewritten))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)


# on OpenCL in CI (targets.op_targets): every held cell but the products' (their sums are
# kept in cells on C alike)
OPENCL_IN_CI = [linear, rowmax, bt_then_read, total_squares, channel_sums]
SHAPES = [(0, 0, 0), (1, 1, 1), (1, 7, 0), (3, 1, 2), (7, 13, 5), (17, 31, 33), (2, 67, 3),
          (33, 33, 1)]


@pytest.mark.parametrize(("op", "target"), op_targets([*HELD, two_statements, strided],
                                                      OPENCL_IN_CI))
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    held = [n for n in kernel.notes if "local scalar" in n and "stored once" in n]
    assert len(held) == HELD.get(op, 0), kernel.notes
    check_everywhere(kernel, SHAPES, hi=40 if target == "c" else 20)
