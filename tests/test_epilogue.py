"""Element-wise epilogues after a product (scop/epilogue.py): a statement that ends the loop
around a reduction and applies a math function or arithmetic to the cell it updates runs in
a nest of its own after the product, where that keeps every dependence; its math then
vectorizes and the product keeps its register tiles. An element-wise nest the user wrote
after a product into a temporary stays apart from it too (schedule/auto.product_readers).
Compiled for C and OpenCL, checked against the reference (which runs the operator as
written) at sizes 0, 1, primes and every variant's region edges."""

from __future__ import annotations

import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.scop.epilogue import split_epilogues
from polydyn.testing import check_everywhere
from tests import phrasings as ph
from tests.targets import op_targets

N, M, K = pd.sym("N M K")


@pd.operator()
def linear_gelu(X: f32[N, K], W: f32[K, M], b: f32[M], Y: out(f32[N, M])):
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[k, o]
            Y[n, o] = 0.5 * Y[n, o] * (1.0 + pd.erf(Y[n, o] * 0.7071067811865476))


@pd.operator(assume="M >= 1")
def read_after(X: f32[N, K], W: f32[K, M], Y: out(f32[N, M]), R: out(f32[N])):
    """A later statement of the outer loop reads an epilogued cell: the epilogue stays."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = 0.0
            for k in range(K):
                Y[n, o] += X[n, k] * W[k, o]
            Y[n, o] = pd.tanh(Y[n, o])
        R[n] = Y[n, 0] * 2.0


@pd.operator()
def no_math(X: f32[N, K], W: f32[K, M], Y: out(f32[N, M])):
    """An epilogue without a math call (ReLU) moves too: in the product's loops it kept the
    band from register tiles (512^3: 3.7 ms, 0.67 ms with it moved)."""
    for n in range(N):
        for o in range(M):
            Y[n, o] = 0.0
            for k in range(K):
                Y[n, o] += X[n, k] * W[k, o]
            Y[n, o] = max(Y[n, o], 0.0)


@pd.operator()
def scaled_scores(Q: f32[N, K], Kt: f32[M, K], P: out(f32[N, M])):
    """Attention's scores with the sum in a scalar and the scale after it: forwarded into P,
    the scale becomes an epilogue of P."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for d in range(K):
                acc += Q[i, d] * Kt[j, d]
            P[i, j] = acc * 0.125


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def temp_then_copy(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    """A product into a temporary, then a plain copy out of it in a nest of the user's own
    (nothing to move): the two nests fuse through the temporary (scop/fuse.py) and the sum
    goes to C's cell, so the product keeps its register tiles (tests/phrasings.py's
    linear_temp_relu: the same with a ReLU, which then moves after the product)."""
    T = pd.temp(f32[N, M])
    for i in range(N):
        for j in range(M):
            T[i, j] = 0.0
            for k in range(K):
                T[i, j] += A[i, k] * B[k, j]
    for i in range(N):
        for j in range(M):
            C[i, j] = T[i, j]


# epilogues moved when compiled (linear_scalar_gelu's and scaled_scores' appear once their
# scalar is forwarded)
MOVED = {linear_gelu: 1, read_after: 0, no_math: 1, ph.linear_scalar_gelu: 1, scaled_scores: 1,
         ph.linear_temp_relu: 1, temp_then_copy: 0}
# OpenCL has no repacked copies: scaled_scores' sum stays a dot product in its scalar
MOVED_OPENCL = {**MOVED, scaled_scores: 0}


@pytest.mark.parametrize("op", [linear_gelu, read_after, no_math],
                         ids=lambda op: op.scop.name)
def test_which_epilogues_move(op: pd.Operator) -> None:
    scop, notes = split_epilogues(op.scop)
    assert len(notes) == MOVED[op], notes
    assert (scop is op.scop) == (not notes)


# on OpenCL in CI (targets.op_targets): an epilogue with a call, scaled scores, a copy after
OPENCL_IN_CI = [linear_gelu, scaled_scores, temp_then_copy]
SHAPES = [(0, 0, 0), (1, 1, 1), (1, 7, 0), (3, 1, 2), (7, 13, 5), (17, 31, 33), (2, 67, 3),
          (49, 257, 17)]


@pytest.mark.parametrize(("op", "target"), op_targets(
    [linear_gelu, read_after, no_math, ph.linear_scalar_gelu, scaled_scores,
     ph.linear_temp_relu, temp_then_copy], OPENCL_IN_CI))
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    moved = [n for n in kernel.notes if "epilogue" in n]
    assert len(moved) == (MOVED if target == "c" else MOVED_OPENCL)[op], kernel.notes
    shapes = [v for v in SHAPES if target == "c" or max(v) < 60]
    check_everywhere(kernel, shapes, hi=40 if target == "c" else 20)


def test_the_product_keeps_its_register_tiles() -> None:
    from polydyn.pipeline import generate

    for op, name in ((linear_gelu, "tiled"), (no_math, "tiled"), (scaled_scores, "small"),
                     (ph.linear_temp_relu, "tiled"), (temp_then_copy, "tiled"),
                     (temp_then_copy, "skinny")):
        gen = generate(op, "c")
        variant = next(v for v in gen.scheduled if v.name == name)
        assert "promote" in str(variant.schedule), op.scop.name  # the tiles' accumulators


def test_product_into_a_temporary_against_numpy() -> None:
    """The register-tiled variants of ``ph.linear_temp_relu`` (full and partial tiles, a skinny
    product) against NumPy, beyond the reference's reach."""
    import numpy as np

    kernel = pd.compile(ph.linear_temp_relu)
    rng = np.random.default_rng(3)
    for n, m, k in ((96, 256, 256), (97, 257, 255), (20, 300, 33)):
        x = rng.uniform(-1, 1, (n, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, m)).astype(np.float32)
        b = rng.uniform(-1, 1, m).astype(np.float32)
        want = np.maximum(x.astype(np.float64) @ w + b, 0.0)
        assert np.max(np.abs(kernel(x, w, b) - want)) < 1e-4 * k, (n, m, k)
