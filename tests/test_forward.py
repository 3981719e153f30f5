"""Accumulators forwarded into their cells (scop/forward.py): a reduction kept in a local
scalar and stored into a cell is kept in that cell, and then reaches the schedule of the
operator written with the cell (matmul's register tiles).

Each operator, written several ways, is compiled for C and OpenCL and checked against the
reference (which runs the operator as written) at sizes 0, 1, primes and around each
variant's region edges; the rewritten Scop itself runs on the reference interpreter to the
values of the original (to rounding where a sum added to its cell's old value is
reassociated). Scalars that do not have the form (read again after the store, the cell read
inside the loop, another dtype, final reads in later loops, a store that is not linear in
the sum) keep their scalar.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, inout, out
from polydyn.scop.forward import forward_accumulators
from polydyn.scop.ir import Scalar
from polydyn.testing import (
    check_everywhere,
    check_kernel,
    interpreted_outputs,
    region_points,
    tolerance,
)
from tests.targets import op_targets

N, M, K, D = pd.sym("N M K D")

# --------------------------------------------------------------------------------------------
# Operators whose scalar goes into its cell


@pd.operator()
def matmul_acc(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_acc_assumed(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    """The bundled matmul's context, ``acc = acc + x`` spelled out."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc = acc + A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator()
def scaled(A: f32[N, K], B: f32[K, M], alpha: f32[1], C: out(f32[N, M])):
    """An epilogue: the scaled product, the scale read after the loop."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = alpha[0] * acc


@pd.operator()
def linear_gelu(X: f32[N, K], W: f32[K, D], b: f32[D], Y: out(f32[N, D])):
    """A linear layer with its weight input-major, bias and GELU in the epilogue."""
    for n in range(N):
        for o in range(D):
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * W[k, o]
            Y[n, o] = 0.5 * (acc + b[o]) * (1.0 + pd.erf((acc + b[o]) * 0.7071067811865476))


@pd.operator()
def linear_bias(X: f32[N, K], W: f32[K, D], b: f32[D], Y: out(f32[N, D])):
    for n in range(N):
        for o in range(D):
            acc = b[o]
            for k in range(K):
                acc += X[n, k] * W[k, o]
            Y[n, o] = acc


@pd.operator()
def colmax(X: f32[N, M], Y: out(f32[M])):
    """A max over rows: the scalar, initialized to -inf, is kept in Y[j]."""
    for j in range(M):
        m = -pd.inf
        for i in range(N):
            m = max(m, X[i, j])
        Y[j] = m


@pd.operator()
def two_sums(X: f32[N, M], S: out(f32[M]), P: out(f32[M])):
    """Two independent scalars in one nest, a sum and a product."""
    for j in range(M):
        s = 0.0
        p = 1.0
        for i in range(N):
            s += X[i, j]
            p = X[i, j] * p
        S[j] = s
        P[j] = p


# --------------------------------------------------------------------------------------------
# Operators whose scalar may go into its cell but stays (the cell's phrasing is slower today)


@pd.operator()
def linear_acc(X: f32[N, K], W: f32[D, K], b: f32[D], Y: out(f32[N, D])):
    """nn.Linear's layout: the weight output-major, both operands along the reduction."""
    for n in range(N):
        for o in range(D):
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * W[o, k]
            Y[n, o] = b[o] + acc


@pd.operator()
def rowmax(X: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        m = -pd.inf
        for j in range(M):
            m = max(m, X[i, j])
        Y[i] = m


# --------------------------------------------------------------------------------------------
# Operators whose scalar must stay


@pd.operator()
def read_after(A: f32[N, K], B: f32[K, M], C: out(f32[N, M]), E: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc
            E[i, j] = acc * 2.0


@pd.operator()
def cell_in_loop(A: f32[N, K], B: f32[K, M], C: inout(f32[N, M])):
    """The loop reads the cell the sum is stored into: forwarding would read partial sums."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += C[i, j] * A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator()
def store_scales_cell(A: f32[N, K], B: f32[K, M], C: inout(f32[N, M])):
    """The old value of the cell multiplied by the sum: not a sum added to it."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = C[i, j] * acc


@pd.operator()
def store_max_cell(A: f32[N, K], C: inout(f32[N, M])):
    """A sum stored as the max with the old value (the sum is not a term of the store)."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k]
            C[i, j] = max(C[i, j], acc + 1.0)


@pd.operator(assume="K >= 1")
def max_added_to_cell(A: f32[N, K], C: inout(f32[N, M])):
    """A running max added to the old value: only sums spread over their terms."""
    for i in range(N):
        for j in range(M):
            m = A[i, 0]
            for k in range(K):
                m = max(m, A[i, k] + j)
            C[i, j] += m


@pd.operator()
def scale_written_between(A: f32[N, K], B: f32[K, M], s: inout(f32[N]),
                          C: inout(f32[N, M])):
    """The store's scale changes while the sum runs: the terms cannot take it."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
                s[i] = s[i] * 0.5
            C[i, j] = C[i, j] + s[i] * acc


@pd.operator()
def other_dtype(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    """A double sum stored into a float cell: forwarding would sum in float."""
    for i in range(N):
        for j in range(M):
            acc = pd.f64(0.0)
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator()
def touched_between(A: f32[N, K], C: out(f32[N, M])):
    """Another statement writes the cell's array between the init and the store."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k]
            C[i, 0] = 1.0
            C[i, j] = acc


# Sums added to the old value of their cell (gemm's phrasings): forwarded, reassociated


@pd.operator()
def store_reads_cell(A: f32[N, K], B: f32[K, M], C: inout(f32[N, M])):
    """``C = C + acc``: the store reads the old value of its cell."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = C[i, j] + acc


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def plus_equals(A: f32[N, K], B: f32[K, M], C: inout(f32[N, M])):
    """``C += s``, the sum spelled ``s = s + x``."""
    for i in range(N):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s = s + A[i, k] * B[k, j]
            C[i, j] += s


@pd.operator()
def blas_gemm(A: f32[N, K], B: f32[K, M], C: inout(f32[N, M]), alpha: f32, beta: f32):
    """BLAS's ``C = alpha * A @ B + beta * C``, the scale on the sum's left."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = alpha * acc + beta * C[i, j]


@pd.operator()
def minus_scaled(A: f32[N, K], B: f32[K, M], w: f32[M], C: inout(f32[N, M])):
    """``C = C - s * w[j]``: a subtracted sum, scaled per column, from 1 (not 0)."""
    for i in range(N):
        for j in range(M):
            acc = 1.0
            for k in range(K):
                acc -= A[i, k] * B[k, j]
            C[i, j] = C[i, j] - acc * w[j]


@pd.operator()
def from_other_side(A: f32[N, K], C: inout(f32[N, M]), x: f32):
    """``C = (2 * C + x) - 3 * s``: the sum subtracted from an expression of the cell."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * (k - j)
            C[i, j] = (2.0 * C[i, j] + x) - 3.0 * acc


@pd.operator()
def strided_conv1d(X: f32[N, 2 * M + 1], w: f32[3], Y: out(f32[N, M])):
    """A filter with stride 2: X's reads step two elements per cell, beside weights every
    cell of a row shares (register tiles pay)."""
    for i, j in pd.grid(N, M):
        s = 0.0
        for k in range(3):
            s += X[i, 2 * j + k] * w[k]
        Y[i, j] = s


@pd.operator()
def strided_window_sum(X: f32[N, 2 * M + 1], Y: out(f32[N, M])):
    """The same reads with nothing shared (a pooling window): the scalar stays."""
    for i, j in pd.grid(N, M):
        s = 0.0
        for k in range(3):
            s += X[i, 2 * j + k]
        Y[i, j] = s


LINEAR = {
    store_reads_cell: "acc: the sum is kept in C[i, j], added to its value",
    plus_equals: "s: the sum is kept in C[i, j], added to its value",
    blas_gemm: "acc: the sum is kept in C[i, j], from (beta * C[i, j]), each term times "
               "alpha",
    minus_scaled: "acc: the sum is kept in C[i, j], from (C[i, j] - (w[j] * 1.0)), each "
                  "term times w[j]",
    from_other_side: "acc: the sum is kept in C[i, j], from ((2.0 * C[i, j]) + x), each "
                     "term times 3.0",
}


FORWARDED = {
    matmul_acc: ("acc: the sum is kept in C[i, j]",),
    matmul_acc_assumed: ("acc: the sum is kept in C[i, j]",),
    scaled: ("acc: the sum is kept in C[i, j], then C[i, j] = (alpha[0] * C[i, j])",),
    linear_gelu: ("acc: the sum is kept in Y[n, o], then Y[n, o] = ",),
    linear_bias: ("acc: the sum is kept in Y[n, o]",),
    colmax: ("m: the max is kept in Y[j]",),
    two_sums: ("s: the sum is kept in S[j]", "p: the product is kept in P[j]"),
    strided_conv1d: ("s: the sum is kept in Y[i, j]",),
}
KEPT = [linear_acc, rowmax, read_after, cell_in_loop, other_dtype, touched_between,
        store_scales_cell, store_max_cell, max_added_to_cell, scale_written_between,
        strided_window_sum, load("softmax")[0], load("layernorm")[0], load("maxpool")[0]]
FORCED = [linear_acc, rowmax]  # forwarded with everywhere=True


def _sizes(op: pd.Operator, values: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(op.scop.syms, values, strict=True))


def _notes_match(notes: tuple[str, ...], want: tuple[str, ...]) -> bool:
    return len(notes) == len(want) and all(n.startswith(w) for n, w in zip(notes, want,
                                                                          strict=True))


# --------------------------------------------------------------------------------------------
# The rewrite on the Scop


@pytest.mark.parametrize("op", list(FORWARDED), ids=lambda op: op.scop.name)
def test_scalar_is_kept_in_its_cell(op: pd.Operator) -> None:
    scop, notes = forward_accumulators(op.scop)
    assert _notes_match(notes, FORWARDED[op]), notes
    assert not [a for a in scop.arrays if a.kind == "local" and a.name in ("acc", "m", "s", "p")]
    for s in scop.statements:
        assert not any(isinstance(e, Scalar) and e.name in ("acc", "m", "s", "p")
                       for e in (s.target, *s.value.walk()))
    names = {s.name for s in scop.statements}
    assert names <= {s.name for s in op.scop.statements}  # names kept; plain stores gone
    for s in scop.statements:  # source lines kept
        assert s.loc == op.scop.statement(s.name).loc


@pytest.mark.parametrize("op", KEPT, ids=lambda op: op.scop.name)
def test_scalar_that_does_not_fit_stays(op: pd.Operator) -> None:
    scop, notes = forward_accumulators(op.scop, everywhere=op in FORCED)
    if op in FORCED:
        assert notes and scop is not op.scop
    else:
        assert notes == () and scop is op.scop


@pytest.mark.parametrize("op", [*FORWARDED, *FORCED], ids=lambda op: op.scop.name)
def test_rewritten_scop_computes_the_same_values(op: pd.Operator) -> None:
    """The rewritten Scop on the reference interpreter, outputs starting as NaN."""
    rewritten, _ = forward_accumulators(op.scop, everywhere=True)
    for values in ((0, 0, 0, 0), (1, 1, 1, 1), (2, 3, 0, 1), (3, 5, 7, 2), (7, 1, 4, 11)):
        sizes = _sizes(op, values[:len(op.scop.syms)])
        want, got = (interpreted_outputs(op, scop, sizes, {"out": np.nan, "temp": np.nan})
                     for scop in (op.scop, rewritten))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("op", list(LINEAR), ids=lambda op: op.scop.name)
def test_sum_added_to_its_cell_is_kept_there(op: pd.Operator) -> None:
    """The scalar goes, the store goes, the updates add the scaled terms into the cell; on
    the reference interpreter the rewritten Scop agrees with the original to rounding (the
    sum is reassociated: the cell's old value is its first term)."""
    scop, notes = forward_accumulators(op.scop)
    assert notes == (LINEAR[op],)
    assert not [a for a in scop.arrays if a.kind == "local"]
    assert len(scop.statements) < len(op.scop.statements)
    for values in ((0, 0, 0), (1, 1, 1), (2, 3, 0), (3, 5, 7), (7, 1, 11)):
        sizes = _sizes(op, values[:len(op.scop.syms)])
        want, got = (interpreted_outputs(op, s, sizes, {"out": np.nan, "temp": np.nan})
                     for s in (op.scop, scop))
        for w, g in zip(want, got, strict=True):
            scale = float(np.max(np.abs(w), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=0, atol=tolerance(w.dtype, scale))


def test_sum_added_to_its_cell_gets_register_tiles() -> None:
    """``C += s`` runs the bundled matmul's variants (register tiles, packs, threads), not
    the scalar's loops; the tiles start from the cells (the bundled ones from their init)."""
    mine = pd.compile(plus_equals)
    bundled = pd.compile(load("matmul")[0])
    assert [(v.name, str(v.region), v.summary.split(";")[0]) for v in mine.variants] == \
        [(v.name, str(v.region), v.summary.split(";")[0]) for v in bundled.variants]


def test_matmul_with_a_scalar_gets_the_bundled_schedule() -> None:
    """The same variants, regions and schedules as kernels/matmul.py (the cell phrasing)."""
    mine = pd.compile(matmul_acc_assumed)
    bundled = pd.compile(load("matmul")[0])
    assert [(v.name, str(v.region), v.summary) for v in mine.variants] == \
        [(v.name, str(v.region), v.summary) for v in bundled.variants]
    assert mine.notes == ("acc: the sum is kept in C[i, j]",)
    assert "rewritten: acc: the sum is kept in C[i, j]" in mine.explain(N=5, M=7, K=3)
    assert not re.search(r"\bacc\b", mine.source)  # no scalar left


# --------------------------------------------------------------------------------------------
# Compiled, against the reference

SHAPES = [(0, 0, 0, 0), (1, 1, 1, 1), (0, 3, 5, 2), (3, 0, 2, 5), (7, 13, 5, 3),
          (17, 15, 33, 16), (31, 33, 1, 17)]



# the sweep's operators on OpenCL in CI (targets.op_targets): a sum kept in its cell, scaled
# and BLAS's; reads after the sum; two sums; a maximum; a strided convolution; another dtype
OPENCL_IN_CI = [scaled, blas_gemm, read_after, two_sums, rowmax, strided_conv1d, other_dtype,
                touched_between, store_scales_cell]


@pytest.mark.parametrize(("op", "target"), op_targets(
    [*FORWARDED, *LINEAR, linear_acc, rowmax, read_after, cell_in_loop, other_dtype,
     touched_between, store_scales_cell, scale_written_between], OPENCL_IN_CI))
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    want = (LINEAR[op],) if op in LINEAR else FORWARDED.get(op, ())
    if op is linear_acc and target == "c":  # register tiles over a repacked W, from b[o]
        want = ("acc: the sum is kept in Y[n, o], from b[o]",)
    # scop/epilogue.py's and scop/expand.py's notes aside
    forwarded = tuple(n for n in kernel.notes
                      if "epilogue" not in n and "the scalar is kept in" not in n)
    assert _notes_match(forwarded, want), kernel.notes
    check_everywhere(kernel, SHAPES, hi=40 if target == "c" else 24)


def test_big_tiles_against_numpy() -> None:
    """The register-tiled variants (regions beyond the reference's reach) against NumPy."""
    kernel = pd.compile(matmul_acc_assumed)
    rng = np.random.default_rng(1)
    for n, m, k in ((96, 256, 256), (97, 257, 255), (50, 300, 7)):
        a = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, m)).astype(np.float32)
        got = kernel(a, b)
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.max(np.abs(got - want)) < 1e-4 * k, (n, m, k)


def test_gemm_tiles_against_numpy() -> None:
    """BLAS's gemm phrasing in its register-tiled variants (full and partial tiles, the
    skinny rows, one row) against NumPy: the scale rides on A's factor, the old cell is the
    tiles' start."""
    kernel = pd.compile(blas_gemm)
    rng = np.random.default_rng(2)
    for n, m, k in ((96, 256, 256), (97, 257, 255), (20, 300, 33), (1, 300, 77)):
        a = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, m)).astype(np.float32)
        c = rng.uniform(-1, 1, (n, m)).astype(np.float32)
        want = 0.75 * (a.astype(np.float64) @ b.astype(np.float64)) - 1.5 * c
        kernel(a, b, c, np.float32(0.75), np.float32(-1.5))
        assert np.max(np.abs(c - want)) < 1e-4 * k, (n, m, k)


@pytest.mark.parametrize("schedule", [
    pd.Schedule().tile(i=8, j=16, k=4).parallel("i").vectorize("j"),
    pd.Schedule().distribute("j").distribute("i").interchange("i", "k", "j").unroll("j", 4),
    pd.Schedule().parallel("i", "j").unroll("k", 2),
])
def test_user_recipes_name_the_same_loops(schedule: pd.Schedule) -> None:
    """A recipe written for the loops as the user wrote them applies to the forwarded nest
    (an interchange the scalar forbade included)."""
    kernel = pd.compile(matmul_acc, variants=[("true", schedule)])
    assert kernel.notes == ("acc: the sum is kept in C[i, j]",)
    for sizes in region_points(kernel.scop, kernel.variants[0].region, hi=21, limit=6):
        check_kernel(kernel, sizes)
