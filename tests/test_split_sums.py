"""Sums split among threads (rfactor: schedule/auto.strip_mine_vector, codegen_c/split.py).

A row vector times a matrix (matmul's ``N = 1`` variant, or written with vectors, ``y[j] +=
x[k] * A[k, j]``) and column sums run their outermost reduction shared out among the threads
(such bands are not cache-tiled: each element is read once), each adding into a private
copy of the target, the copies added into it at the end; the code falls back to strips for
the threads where the sum is too short for that (fewer than 64 terms a cell per thread),
where there is one thread, or where the reduction has no full step of 8. Each is checked
against the reference (float64 for matmul) on both sides of that threshold, at the strips'
edges (4096 f32), with partial steps of the reduction (K % 8) and at 1; a max reduction keeps
the strips."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import polydyn as pd
from kernels.matmul import matmul
from polydyn import f32, i32, inout, out
from polydyn.testing import check_kernel
from tests.phrasings import vecmat_vectors

R, L, P = pd.sym("R L P")


@pd.operator(assume="R >= 1 and L >= 1")
def colsum(X: f32[R, L], S: out(f32[L])):
    for j in range(L):
        S[j] = 0.0
    for i, j in pd.grid(R, L):
        S[j] += X[i, j]


@pd.operator(assume="R >= 1 and L >= 1")
def colsum_into(X: i32[R, L], S: inout(i32[L])):
    """Adds into what S holds: the copies start from zero, the target keeps its values."""
    for i, j in pd.grid(R, L):
        S[j] += X[i, j] * X[i, j]


@pd.operator(assume="R >= 1 and P >= 1 and L >= 1")
def planesum(X: f32[R, P, L], S: out(f32[L])):
    """Two reductions: the outer one is shared out, the inner one runs in each step."""
    for j in range(L):
        S[j] = 1.0
    for a, b, j in pd.grid(R, P, L):
        S[j] += X[a, b, j]


@pd.operator(assume="R >= 1 and L >= 1")
def colmax(X: f32[R, L], S: out(f32[L])):
    """Not a sum: no private copies (a copy starting from zero would be wrong)."""
    for j in range(L):
        S[j] = X[0, j]
    for i, j in pd.grid(R, L):
        S[j] = max(S[j], X[i, j])


@functools.cache
def _kernel(op) -> pd.Kernel:
    return pd.compile(op)


def _variant_source(k: pd.Kernel, name: str) -> str:
    index = [v.name for v in k.variants].index(name)
    start = k.source.index(f"/* variant {name}:")
    end = k.source.index(f"int {k.name}_v{index + 1}(") if index + 1 < len(k.variants) \
        else len(k.source)
    return k.source[start:end]


def test_row_vector_times_matrix_splits_the_sum() -> None:
    n1 = _variant_source(_kernel(matmul), "N=1")
    region = n1.index("#pragma omp parallel\n")
    shared = n1.index("#pragma omp for schedule(static) nowait", region)
    # every thread runs the strips of 4096 columns; the steps of 8 of k are shared out
    assert n1.index("pd_c0 += 4096", region) < shared < n1.index("pd_c2 += 8", shared)
    # each thread adds into its copy (cache-line rounded), held over the 8 unrolled steps
    assert re.search(r"float \*restrict (pd_rf\d+_0)_t = \1 \+ pd_team_id\(\) \* \1_s;", n1)
    assert re.search(r"float pd_cell\d+ = pd_rf\d+_0_t\[", n1)
    # the last partial step in the last thread; the copies added after a barrier
    last = n1.index("if (pd_team_id() == pd_team_size() - 1)", shared)
    assert last < n1.index("#pragma omp barrier", last) < n1.index("pd_s += pd_rf", last)
    # the copies half a page past B; the strips for the threads where the split is not wanted
    assert "(const char *)B + 2048" in n1
    assert ">= 64 * pd_threads()" in n1
    assert "#pragma omp parallel for schedule(static)" in n1[n1.index("else", region):]


@pytest.mark.parametrize(("m", "depth"), [
    (1, 128), (1024, 1024), (1000, 1000), (4095, 129), (4096, 136), (4097, 300),
    (8193, 131), (17, 1031), (1024, 127), (1024, 128), (5000, 7), (33, 9), (4097, 8),
    (1, 37), (513, 1), (1030, 7), (512, 8), (3, 16), (4097, 37)])
def test_matmul_row_vector_against_float64(m, depth) -> None:
    """Both sides of the split's threshold (64 terms a thread: K = 128 on 2 threads), one
    column, strips of 4096 full, partial and both, steps of 8 full and partial, none full."""
    k = _kernel(matmul)
    rng = np.random.default_rng(m * 7 + depth)
    A = rng.standard_normal((1, depth)).astype(np.float32)
    B = rng.standard_normal((depth, m)).astype(np.float32)
    got = k.run_variant("N=1", A, B)
    want = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(depth))


@pytest.mark.parametrize("op", [colsum, colsum_into, planesum, vecmat_vectors])
@pytest.mark.parametrize("sizes", [
    {"R": 1, "L": 1}, {"R": 128, "L": 33}, {"R": 255, "L": 4097}, {"R": 129, "L": 4096},
    {"R": 1031, "L": 7}, {"R": 9, "L": 5000}, {"R": 200, "L": 1}, {"R": 131, "L": 8193},
    {"R": 300, "L": 300}, {"R": 1024, "L": 1024}])
def test_column_sums_against_reference(op, sizes) -> None:
    """One untiled variant at every size (no cache tiles, ``L = 1`` apart) splits its
    sums."""
    k = _kernel(op)
    assert [(v.name, v.summary) for v in k.variants] == [
        ("M=1" if op is vecmat_vectors else "L=1", "untiled, threads when the work pays"),
        ("generic", "untiled, threads when the work pays")]
    assert "omp for schedule(static) nowait" in _variant_source(k, "generic")
    seed = sizes["R"]
    sizes = {**sizes, "P": 3} if op is planesum else sizes
    if op is vecmat_vectors:  # x[K] @ W[K, M]: K the reduction, M the columns
        sizes = {"K": sizes["R"], "M": sizes["L"]}
    for variant in (None, "generic"):
        check_kernel(k, sizes, seed=seed, variant=variant)


@pd.operator(assume="R >= 2 and L >= 1")
def transposed_scan(X: f32[R, L], S: inout(f32[L, R])):
    """One parallel member and a serial one that is not a reduction (the cells move along
    it, transposed): the band keeps its cache tiles, which serve the transposed cells."""
    for i in range(1, R):
        for j in range(L):
            S[j, i] = S[j, i - 1] + X[i, j]


def test_a_recurrence_with_transposed_cells_keeps_its_tiles() -> None:
    k = _kernel(transposed_scan)
    assert "tiled" in [v.name for v in k.variants]
    for sizes in ({"R": 2, "L": 1}, {"R": 49, "L": 257}, {"R": 300, "L": 97}):
        for variant in (None, "generic"):
            check_kernel(k, sizes, seed=sizes["R"], variant=variant)


def test_a_max_reduction_keeps_the_strips() -> None:
    k = _kernel(colmax)
    assert "pd_rf" not in k.source and "nowait" not in k.source
    for sizes in ({"R": 255, "L": 4097}, {"R": 1, "L": 5}):
        check_kernel(k, sizes, variant="generic")

