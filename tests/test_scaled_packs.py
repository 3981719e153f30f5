"""A scaled sum's factor in the packed copy (``codegen_c/packs.pack_scale``): where every
read of the packed operand is multiplied by the same factor that reads no loop's iterator
(BLAS's alpha, a constant), the copy holds the products and the register tiles multiply
nothing more per term. The operators are written as users write them."""

import re

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, inout, out
from polydyn.parametric.regions import parse_region
from tests.phrasings import matmul_blas as gemm

N, M, K = pd.sym("N M K")


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def gemm_scale_array(A: f32[N, K], B: f32[K, M], s: f32[2], C: inout(f32[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = C[i, j] + acc * s[1]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def gemm_halved(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * (0.5 * B[k, j])


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def gemm_column_scale(A: f32[N, K], B: f32[K, M], w: f32[M], C: out(f32[N, M])):
    """A factor per column (it reads ``j``): not folded, the copy holds B itself."""
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc * w[j]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def gemm_also_plain(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    """B read scaled and as it is: not folded."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * (2.0 * B[k, j]) + A[i, k] * B[k, j]


def _args(op, n, m, depth, rng):
    A = rng.standard_normal((n, depth)).astype(np.float32)
    B = rng.standard_normal((depth, m)).astype(np.float32)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    if op is gemm:
        C = rng.standard_normal((n, m)).astype(np.float32)
        return (A, B, C.copy(), 1.5, -0.5), 1.5 * (A64 @ B64) - 0.5 * C, 2
    if op is gemm_scale_array:
        s = np.array([9.0, -0.25], np.float32)
        C = rng.standard_normal((n, m)).astype(np.float32)
        return (A, B, s, C), (A64 @ B64) * -0.25 + C, 3
    if op is gemm_column_scale:
        w = rng.standard_normal(m).astype(np.float32)
        return (A, B, w), (A64 @ B64) * w, None
    if op is gemm_halved:
        return (A, B), 0.5 * (A64 @ B64), None
    return (A, B), 3.0 * (A64 @ B64), None


def _tiled_source(k: pd.Kernel) -> str:
    start = k.source.index("/* variant tiled:")
    return k.source[start:k.source.find("/* variant", start + 10)]


@pytest.mark.parametrize("op, factor", [(gemm, "alpha"), (gemm_scale_array, "s[1]"),
                                        (gemm_halved, "0.5f"), (gemm_column_scale, None),
                                        (gemm_also_plain, None)],
                         ids=lambda x: x.scop.name if hasattr(x, "scop") else str(x))
def test_a_scaled_operand_is_packed_scaled(op, factor) -> None:
    """The tiled variant's copy multiplies by the factor and its tiles read the copy alone;
    every variant against float64 at the cache tiles' edges (48 rows, 256 columns and
    steps, +-1), partial register tiles, and one row."""
    k = pd.compile(op)
    source = _tiled_source(k)
    copy = r"pd_pk\d+\[pd_q0 \* \d+ \+ pd_q1 \* 1\] = ([^;]*);"
    copies = [c for c in re.findall(copy, source) if c != "0"]  # (a row's zero padding)
    assert copies
    tiles = source.split("pd_acc", 1)[1]
    if factor is None:
        assert all(re.match(r"Bm?\[", c) for c in copies), copies
    else:
        assert all(re.match(rf"{re.escape(factor)} \* Bm?\[", c) for c in copies), copies
        assert "pd_pk" in tiles and f"{factor} * pd_pk" not in tiles
    rng = np.random.default_rng(3)
    for n, m, depth in ((49, 257, 255), (97, 96, 257), (96, 256, 256), (1, 300, 7),
                        (7, 129, 1)):
        args, want, inout_at = _args(op, n, m, depth, rng)
        point = parse_region(k.scop, f"N = {n} and M = {m} and K = {depth}")
        ran = []
        for v in k.variants:
            if point.is_subset(v.region):
                ran.append(v.name)
                call = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                got = k.run_variant(v.name, *call)
                got = call[inout_at] if inout_at is not None else got
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(depth),
                                           err_msg=f"{v.name} {n} {m} {depth}")
        assert "generic" in ran and len(ran) > 1, (n, m, depth, ran)
