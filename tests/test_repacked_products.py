"""Products whose operand runs along the output's rows in another subscript (nn.Linear's
``Y[n, o] += X[n, k] * W[o, k]``, B stored transposed): on the CPU, register tiles read the
operand from a copy repacked with the rows' dimension innermost (``codegen_c.repack``) from
``pipeline.REPACK_ROWS`` rows, and dot products in scalars (``scop.hold``) below; the
generic variant of the tiles closes the cover.

Each phrasing is checked against the reference at the edges of every variant's region (the
rows' threshold, register-tile and cache-tile edges) and against NumPy at sizes past the
reference's reach.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.pipeline import REPACK_ROWS
from polydyn.scop.forward import forward_accumulators
from polydyn.scop.hold import repacked_rows
from polydyn.scop.printer import format_expr
from polydyn.testing import check_kernel, make_inputs, region_points
from tests import phrasings as ph

N, M, K, B = pd.sym("N M K B")
# the L2 the tests plan for, and the longest reduction whose panel (32 floats a step) fits
# half of it: the untiled register tiles' region (schedule.auto._repacked_reduction)
L2 = 1 << 20
PANEL_K = L2 // 2 // 128


linear_bias_first = ph.linear_cell  # the bias first, the sum in the cell


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear_scalar_bias_last(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    for n in range(N):
        for o in range(M):
            s = 0.0
            for k in range(K):
                s += X[n, k] * W[o, k]
            Y[n, o] = b[o] + s


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def both_transposed(At: f32[K, N], Bt: f32[M, K], C: out(f32[N, M])):
    """``A`` stored column-major too: the rows read it along its last subscript."""
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += At[k, i] * Bt[j, k]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1 and B >= 1")
def batched_linear(X: f32[B, N, K], W: f32[M, K], Y: out(f32[B, N, M])):
    for b in range(B):
        for n in range(N):
            for o in range(M):
                acc = 0.0
                for k in range(K):
                    acc += X[b, n, k] * W[o, k]
                Y[b, n, o] = acc


@pd.operator(assume="N >= 1 and K >= 1 and B >= 1")
def fused_scores(QK: f32[B, N, 2, K], P: out(f32[B, N, N])):
    """Attention's scores over a fused projection: queries and keys are slices of one array
    (a constant subscript), the keys read along the vector in another subscript."""
    for b in range(B):
        for i in range(N):
            for j in range(N):
                P[b, i, j] = 0.0
                for k in range(K):
                    P[b, i, j] += QK[b, i, 0, k] * QK[b, j, 1, k]


@pd.operator(assume="N >= 1 and K >= 1")
def gram(A: f32[N, K], C: out(f32[N, N])):
    """``A A^T``: the array read along the rows and, in another subscript, along the vector:
    the vector's read comes from a copy (a panel, or a whole transposed copy), the rows'
    read from the array itself (``codegen_c.repack.Copy.only``)."""
    for i in range(N):
        for j in range(N):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * A[j, k]


@pd.operator(assume="N >= 1 and K >= 1")
def gram_lower(A: f32[N, K], C: out(f32[N, N])):
    """syrk's shape: the lower triangle of ``A A^T``; the diagonal's register tiles are
    triangles, their vector's bounds moving with the row."""
    for i in range(N):
        for j in range(i + 1):
            C[i, j] = 0.0
            for k in range(K):
                C[i, j] += A[i, k] * A[j, k]


PRODUCTS = [linear_bias_first, linear_scalar_bias_last, both_transposed, batched_linear,
            fused_scores, gram, gram_lower]


@pytest.mark.parametrize("op", [linear_bias_first, linear_scalar_bias_last, batched_linear],
                         ids=lambda op: op.scop.name)
def test_rows_choose_tiles_or_dot_products(op: pd.Operator) -> None:
    """Dot products below ``REPACK_ROWS`` rows; above, the untiled register tiles while a
    vector tile's panel of the copy (K x 32 floats) fits half the L2, cache tiles past it."""
    kernel = pd.compile(op, l2_bytes=L2)
    names = [v.name for v in kernel.variants]
    assert names[-1] == "generic" and "dot" in names, names
    sizes = {"N": REPACK_ROWS - 1, "M": 768, "K": 768, "B": 2}
    syms = {s: sizes[s] for s in kernel.scop.syms}
    assert kernel.select(**syms).name == "dot"
    assert kernel.select(**{**syms, "N": REPACK_ROWS}).name != "dot"
    for n in (48, 128, 4096):
        assert kernel.select(**{**syms, "N": n, "K": PANEL_K}).name == "small"
        assert kernel.select(**{**syms, "N": n, "K": PANEL_K + 1}).name in ("tiled", "full")


@pytest.mark.parametrize("op", PRODUCTS, ids=lambda op: op.scop.name)
def test_every_variant_against_the_reference(op: pd.Operator) -> None:
    kernel = pd.compile(op)
    for index, v in enumerate(kernel.variants):
        # rows up to past the threshold, columns past two register vectors, k past a tile
        for sizes in region_points(kernel.scop, v.region, hi=50, limit=4, lo=1):
            check_kernel(kernel, sizes, variant=index)
    # rows around the threshold; a copy of whole 16 x 16 tiles and partial ones (M = 65,
    # K = 257), of exactly one (16 x 16) and of none (M < 16)
    for n, m, k in ((REPACK_ROWS - 1, 33, 17), (REPACK_ROWS, 31, 1), (REPACK_ROWS + 1, 1, 5),
                    (49, 65, 257), (7, 16, 255), (REPACK_ROWS, 16, 16), (30, 15, 40)):
        sizes = {"N": n, "M": m, "K": k, "B": 2}
        check_kernel(kernel, {s: sizes[s] for s in kernel.scop.syms})


@pytest.mark.parametrize("op", [linear_bias_first, both_transposed], ids=lambda op: op.scop.name)
def test_big_tiles_against_numpy(op: pd.Operator) -> None:
    """The cache-tiled variants (sizes beyond the reference's reach) against NumPy: a
    reduction past the panel's, whole cache tiles and partial ones."""
    kernel = pd.compile(op, l2_bytes=L2)
    for n, m, k in ((96, 256, PANEL_K + 256), (97, 257, PANEL_K + 255), (48, 512, PANEL_K + 1)):
        assert kernel.select(N=n, M=m, K=k).name in ("tiled", "full")
        sizes = {"N": n, "M": m, "K": k}
        inputs = make_inputs(op, sizes, seed=2)
        args = [inputs[a.name] for a in op.scop.arg_arrays if a.kind == "in"]
        got = kernel(*args)
        a64 = [x.astype(np.float64) for x in args]
        want = a64[0] @ a64[1].T + a64[2] if op is linear_bias_first else a64[0].T @ a64[1].T
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_without_a_dot_product_the_tiles_read_the_copy_at_every_size() -> None:
    """``At[k, i]`` does not run along the reduction in its last subscript: no dot product
    (``scop.hold``), one rewrite, whose register tiles read ``Bt`` repacked."""
    kernel = pd.compile(both_transposed, l2_bytes=L2)
    assert "dot" not in [v.name for v in kernel.variants]
    assert kernel.select(N=128, M=768, K=768).name == "small"
    assert kernel.select(N=128, M=768, K=PANEL_K + 1).name == "tiled"
    # the untiled tiles read panels each thread copies, the cache tiles a whole copy
    assert "pd_pl1" in kernel.source and "pd_rp1" in kernel.source


def test_rows_are_unrolled_where_they_share_their_vectors() -> None:
    """A register tile's rows loop is unrolled (``GCC unroll 16``) so that each row holds its
    registers; not where the vector loop inside moves its bounds with the row (the
    triangle's diagonal tiles), where the copies share nothing and the C compiler spent a
    quarter of a minute on syrk's sixteen vectorized copies."""
    source = pd.compile(gram_lower).source
    lines = source.splitlines()
    triangles = 0
    for at, line in enumerate(lines):
        head = re.match(r"\s*for \(int64_t (pd_c\d+) = ", line)
        inner = next((x for x in lines[at + 1:at + 4] if "for (int64_t pd_c" in x), None)
        if head is None or inner is None or \
                not re.search(rf"\b{head[1]}\b", inner.split("=", 1)[1]):
            continue  # no loop right inside, or one whose bounds do not move with this one
        assert lines[at - 1].strip() != "#pragma GCC unroll 16", f"{line}\n{inner}"
        triangles += 1
    assert triangles and "#pragma GCC unroll 16" in source and "pd_acc" in source


def test_rows_condition() -> None:
    """The threshold is on the loop of the output's next-to-last subscript; a product whose
    operands run with stride 1 along the vector has none."""
    scop, _ = forward_accumulators(batched_linear.scop, repack=True)
    assert repacked_rows(scop, 24) == f"[{', '.join(scop.syms)}] -> {{ : N - (0) >= 24 }}"
    from kernels import load

    assert repacked_rows(load("matmul")[0].scop, 24) is None


def test_sum_from_zero_plus_a_term_starts_from_the_term() -> None:
    scop, notes = forward_accumulators(linear_scalar_bias_last.scop, repack=True)
    assert notes == ("s: the sum is kept in Y[n, o], from b[o]",)
    assert format_expr(scop.statements[0].value) == "b[o]"
    _, exact = forward_accumulators(linear_scalar_bias_last.scop)
    assert exact == ()  # without repacked copies W[o, k] keeps the sum a dot product


C_CHECK = r"""
#include <stdio.h>
int main(void) {
  float src[20 * 37], dst[19 * 40];
  for (int i = 0; i < 20 * 37; i++) src[i] = i * 1.5f + 0.25f;
  for (int i = 0; i < 19 * 40; i++) dst[i] = -1;
  pd_tr16_f32(src + 3 * 37 + 5, 37, dst + 2 * 40 + 1, 40);
  int bad = 0, touched = 0;
  for (int c = 0; c < 16; c++)
    for (int r = 0; r < 16; r++) bad += dst[(2 + c) * 40 + 1 + r] != src[(3 + r) * 37 + 5 + c];
  for (int i = 0; i < 19 * 40; i++) touched += dst[i] != -1;
  printf("%d %d\n", bad, touched);
  return bad != 0 || touched != 256;
}
"""


@pytest.mark.parametrize("flags", [["-march=native"], ["-march=native", "-mno-avx512f"]],
                         ids=["native", "no-avx512"])
def test_tile_transpose_in_registers_and_in_c(tmp_path, flags: list[str]) -> None:
    """``pd_tr16_f32`` (the copy's whole 16 x 16 tiles): AVX-512 shuffles or plain C, the
    same cells, nothing outside the tile written."""
    import shutil
    import subprocess

    from polydyn.codegen_c.prelude import PRELUDE, TRANSPOSE16

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "t.c").write_text(PRELUDE + TRANSPOSE16 + TRANSPOSE16 + C_CHECK)  # guarded
    subprocess.run([cc, "-O2", *flags, "-o", str(tmp_path / "t"), str(tmp_path / "t.c"), "-lm"],
                   check=True)
    run = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def _linear_want(args: list[np.ndarray]) -> np.ndarray:
    x, w, b = (a.astype(np.float64) for a in args)
    return x @ w.T + b


def test_panels_are_copied_again_at_every_call() -> None:
    """A thread's panel (``codegen_c.repack.Repacks.panel_plan``) is kept from one call to
    the next with its buffer: a second call with another weight of the same shape must not
    read the first one's cells; nor must a call whose vectors end elsewhere (M = 40: a
    partial panel at 32)."""
    kernel = pd.compile(linear_bias_first)
    for sizes in ({"N": 16, "M": 64, "K": 40}, {"N": 16, "M": 64, "K": 40},
                  {"N": 16, "M": 40, "K": 40}):
        assert kernel.select(**sizes).name == "small"
        for seed in (3, 4):
            inputs = make_inputs(linear_bias_first, sizes, seed=seed)
            args = [inputs[a] for a in ("X", "W", "b")]
            want = _linear_want(args)
            np.testing.assert_allclose(kernel(*args), want, rtol=1e-5,
                                       atol=1e-5 * np.abs(want).max())


def test_panels_under_concurrent_calls() -> None:
    """Calls from several threads at once each get panels of their own (pd_take) and each
    thread of a call its own slice: every result is its own inputs' product."""
    from concurrent.futures import ThreadPoolExecutor

    kernel = pd.compile(linear_bias_first)
    sizes = {"N": 37, "M": 200, "K": 300}
    cases = []
    for seed in range(8):
        inputs = make_inputs(linear_bias_first, sizes, seed=seed)
        cases.append([inputs[a] for a in ("X", "W", "b")])
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda args: [kernel(*args) for _ in range(5)], cases))
    for args, got in zip(cases, results, strict=True):
        want = _linear_want(args)
        for y in got:
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_panels_serve_their_own_read_only() -> None:
    """The keys of a fused projection are read from panels (the queries, another constant
    subscript, in place); ``A A^T`` reads ``A`` along the vector from panels and along the
    rows from the array itself, in the same statement."""
    scores = pd.compile(fused_scores).source
    assert "pd_pl1_d" in scores and "pd_tr16_f32(&QK[" in scores
    source = pd.compile(gram).source
    both = [line for line in source.splitlines()
            if "pd_acc" in line and "(A[(i) * K + k] * pd_pl1_d[" in line]
    assert both, "no register tile reads A both ways"
