"""Dependence analysis keeps order where it must.

Each operator here has a dependence that a careless schedule would break (a loop-carried flow,
an anti or output dependence, a temporary shared between statements, local scalars under
threads, a reversed loop, triangular bounds). Every one is compiled and compared with the
reference interpreter at several sizes, and, where the point is that a loop must stay
sequential, the generated C is checked for the absence of an OpenMP pragma on it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import islpy as isl
import numpy as np
import pytest

import polydyn as pd
from kernels.jacobi2d import jacobi2d
from kernels.matmul import matmul
from kernels.softmax import softmax
from polydyn import f32, f64, i64, inout, out, temp
from polydyn.scop.deps import compute_deps
from polydyn.testing import check_kernel

N, M = pd.sym("N M")
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------
# Operators


@pd.operator
def prefix_sum(X: inout(i64[N])):
    for i in range(1, N):
        X[i] += X[i - 1]


@pd.operator
def prefix_sum_f32(X: inout(f32[N])):
    for i in range(1, N):
        X[i] = X[i] + X[i - 1]


@pd.operator
def prefix_rows(X: inout(f64[N, M])):
    """Rows are independent (parallel), columns carry a prefix sum (sequential)."""
    for i in range(N):
        for j in range(1, M):
            X[i, j] += X[i, j - 1]


@pd.operator(assume="N >= 1")
def war_shift(A: inout(f32[N]), B: out(f32[N])):
    """Anti dependence: B[i] reads A[i + 1] before iteration i + 1 overwrites it."""
    for i in range(N - 1):
        B[i] = A[i + 1]
        A[i] = A[i] * 2.0 + 1.0
    B[N - 1] = 0.0


@pd.operator
def war_in_place_left(A: inout(i64[N])):
    """A[i] = A[i + 1] + A[i]: each iteration must read the old A[i + 1]."""
    for i in range(N - 1):
        A[i] = A[i + 1] + A[i] * 3


@pd.operator
def waw_last_write(X: f32[N, M], Y: out(f32[N])):
    """Output dependence: Y[i] keeps the last j's value."""
    for i in range(N):
        for j in range(M):
            Y[i] = X[i, j] * 2.0


@pd.operator
def waw_two_loops(A: f32[N], Y: out(f32[N])):
    """Two loops write every Y[i]; the second must win."""
    for i in range(N):
        Y[i] = A[i] + 1.0
    for i in range(N):
        Y[N - 1 - i] = A[N - 1 - i] * 3.0


@pd.operator
def waw_pairs(X: f32[N], Y: out(f32[(N + 1) // 2])):
    """Y[k] is written at i = 2k and i = 2k + 1: the odd element must win."""
    for i in range(N):
        Y[i // 2] = X[i]


@pd.operator
def shared_temp(A: f32[N], Y: out(f32[N])):
    """A temporary filled by one loop and read reversed by the next: no fusion possible."""
    T = temp(f32[N])
    for i in range(N):
        T[i] = A[i] * 2.0 + 1.0
    for i in range(N):
        Y[i] = T[N - 1 - i] - T[i]


@pd.operator
def shared_temp_reuse(A: f32[N, M], Y: out(f32[N, M])):
    """One row buffer reused by every row: its writes for row i + 1 must wait for row i."""
    T = temp(f32[M])
    for i in range(N):
        for j in range(M):
            T[j] = A[i, j] * A[i, j]
        for j in range(M):
            Y[i, j] = T[M - 1 - j] + T[j]


# A literal negative step (`range(N - 1, 0, -1)`) is refused by the frontend today (see
# test_reverse_literal_step); the same loops with the step held in a module constant go
# through the rest of the compiler and test the dependences.
DOWN = -1
DOWN2 = -2


@pd.operator
def reverse_in_place(X: inout(i64[N])):
    """Walking down, X[i] reads the old X[i - 1]; walking up would make a prefix sum."""
    for i in range(N - 1, 0, DOWN):
        X[i] = X[i] + X[i - 1]


@pd.operator
def reverse_step2(X: inout(i64[N])):
    for i in range(N - 1, 1, DOWN2):
        X[i] = X[i] * 2 + X[i - 2]


@pd.operator
def reverse_prefix(X: inout(i64[N])):
    """A suffix sum walking down: a carried flow dependence in a reversed loop."""
    for i in range(N - 2, -1, DOWN):
        X[i] += X[i + 1]


@pd.operator
def triangular_sum(X: inout(i64[N])):
    """X[i] += X[0] + ... + X[i - 1] (already updated ones): a triangular flow dependence."""
    for i in range(1, N):
        for j in range(i):
            X[i] += X[j]


@pd.operator
def triangular_solve(L: f64[N, N], b: f64[N], x: out(f64[N])):
    """Forward substitution on a unit lower triangle."""
    for i in range(N):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]


@pd.operator
def gauss_seidel(A: inout(f64[N, N])):
    """In-place 5-point sweep: flow and anti dependences in both directions."""
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            A[i, j] = (A[i - 1, j] + A[i, j - 1] + A[i, j] + A[i + 1, j] + A[i, j + 1]) * 0.2


@pd.operator
def carried_scalar(A: f32[N], Y: out(f32[N])):
    """A scalar assigned before the loop and at the end of each iteration carries A[i - 1]."""
    s = 0.0
    for i in range(N):
        Y[i] = s + A[i]
        s = A[i]


@pd.operator
def row_scalars(X: f32[N, M], Y: out(f32[N, M])):
    """Two local scalars per row (like softmax): private per row under threads."""
    for i in range(N):
        lo = pd.inf
        hi = -pd.inf
        for j in range(M):
            lo = min(lo, X[i, j])
            hi = max(hi, X[i, j])
        width = hi - lo + 1.0
        for j in range(M):
            Y[i, j] = (X[i, j] - lo) / width


@pd.operator
def swap_transpose(A: inout(i64[N, N])):
    """In-place transpose through a local scalar: each pair is read before it is written."""
    for i in range(N):
        for j in range(i + 1, N):
            t = A[i, j]
            A[i, j] = A[j, i]
            A[j, i] = t


@pd.operator
def running_total(X: f64[N], Y: out(f64[N])):
    """A scalar assigned outside the loop and accumulated in it: a sequential reduction."""
    s = 0.0
    for i in range(N):
        s += X[i]
        Y[i] = s


@pd.operator
def halving(X: inout(i64[N])):
    """A quasi-affine flow dependence: X[i] reads the already updated X[i // 2]."""
    for i in range(2, N):
        X[i] += X[i // 2]


@pd.operator
def odd_then_even(X: inout(i64[N])):
    """Strided loops: the even pass reads what the odd pass wrote."""
    for i in range(1, N, 2):
        X[i] += X[i - 1]
    for i in range(2, N, 2):
        X[i] += X[i - 1]


@pd.operator
def diagonal_sweep(A: inout(i64[N, N])):
    for i in range(1, N):
        for j in range(1, N):
            A[i, j] = A[i - 1, j - 1] + A[i, j]


@pd.operator
def lu_modular(A: inout(i64[N, N])):
    """LU-shaped triangular nest (k, i > k, j > k) with exact integer arithmetic."""
    for k in range(N):
        for i in range(k + 1, N):
            A[i, k] = A[i, k] % 3
            for j in range(k + 1, N):
                A[i, j] = (A[i, j] - A[i, k] * A[k, j]) % 7


SMALL = (1, 2, 3, 7, 16, 31, 64, 100)


def _check_all(k: pd.Kernel, sizes_list) -> None:
    for seed, sizes in enumerate(sizes_list):
        check_kernel(k, sizes, seed=seed)


def _sizes_in(k: pd.Kernel, region: isl.Set, cap: int) -> dict[str, int]:
    """Sym values inside ``region``: the largest point with every sym <= cap, else the
    region's smallest point (regions such as "multiples of the tile sizes" start higher)."""
    syms = k.scop.syms
    box = " and ".join(f"{s} <= {cap}" for s in syms)
    bounded = region.intersect(isl.Set(f"{k.scop.param_space_text()} -> {{ : {box} }}"))
    n = region.dim(isl.dim_type.param)
    names = [region.get_dim_name(isl.dim_type.param, d) for d in range(n)]
    if bounded.is_empty():
        as_set = region.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
        point = as_set.lexmin().sample_point()
    else:
        as_set = bounded.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
        point = as_set.lexmax().sample_point()
    assert not point.is_void(), f"region {region} is empty"
    values = {name: point.get_coordinate_val(isl.dim_type.set, d).to_python()
              for d, name in enumerate(names)}
    return {s: values[s] for s in syms}


def _check_every_variant(k: pd.Kernel, cap: int) -> None:
    """Run each variant (whatever the dispatcher would pick) at a point of its region."""
    for v, variant in enumerate(k.variants):
        check_kernel(k, _sizes_in(k, variant.region, cap), seed=v, variant=v)


# --------------------------------------------------------------------------------------------
# Prefix sums: the loop stays sequential


def test_prefix_sum_matches_reference() -> None:
    k = pd.compile(prefix_sum)
    _check_all(k, [{"N": n} for n in (*SMALL, 0)])
    X = np.arange(1, 101, dtype=np.int64)
    k(X)
    assert np.array_equal(X, np.cumsum(np.arange(1, 101)))


def test_prefix_sum_loop_is_sequential() -> None:
    k = pd.compile(prefix_sum)
    assert "#pragma omp" not in k.source  # neither threads nor simd on the carried loop
    for v in k.variants:
        assert "#pragma omp" not in v.source
    _check_every_variant(k, cap=100)
    f = pd.compile(prefix_sum_f32)
    assert "omp parallel" not in f.source
    _check_all(f, [{"N": n} for n in SMALL])


def test_prefix_rows_parallel_rows_sequential_columns() -> None:
    k = pd.compile(prefix_rows)
    _check_all(k, [{"N": n, "M": m} for n, m in ((1, 1), (3, 100), (64, 17), (100, 2))])
    _check_every_variant(k, cap=40)
    X = np.ones((40, 50))
    k(X)
    assert np.array_equal(X, np.tile(np.arange(1.0, 51.0), (40, 1)))


def test_loops_isl_cannot_judge_in_time_stay_sequential(monkeypatch, tmp_path) -> None:
    """Past ``CARRY_MAX_OPERATIONS`` a loop counts as carrying a dependence: with no budget
    at all, prefix_rows' parallel rows lose their threads, the results stay right, and isl's
    context is left without a limit."""
    from polydyn.schedule import reductions

    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path))
    assert "omp parallel" in pd.compile(prefix_rows).source
    monkeypatch.setattr(reductions, "CARRY_MAX_OPERATIONS", 1)
    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path / "limited"))
    k = pd.compile(prefix_rows)
    assert "omp parallel" not in k.source
    _check_all(k, [{"N": n, "M": m} for n, m in ((1, 1), (3, 100), (64, 17))])
    assert isl.DEFAULT_CONTEXT.get_max_operations() == 0


def test_dataflow_isl_cannot_finish_in_time_is_memory_based(monkeypatch, tmp_path) -> None:
    """Past ``DEPS_MAX_OPERATIONS`` the dependences are every earlier access of the same
    element: a superset of isl's exact ones (matmul's), every read possibly live-in, and the
    compiled operators still right."""
    from polydyn.scop import deps as deps_module

    exact = compute_deps(matmul.scop)
    monkeypatch.setattr(deps_module, "DEPS_MAX_OPERATIONS", 1)
    assert isl.DEFAULT_CONTEXT.get_max_operations() == 0
    memory = compute_deps(matmul.scop)
    for kind in ("flow", "anti", "output"):
        assert getattr(exact, kind).is_subset(getattr(memory, kind)), kind
    assert not exact.flow.is_equal(memory.flow)  # C[i, j, k] -> C[i, j, k + 2] as well
    assert memory.live_in.is_equal(matmul.scop.accesses("read"))
    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path))
    for op, points in ((prefix_rows, [{"N": 1, "M": 1}, {"N": 3, "M": 100}, {"N": 64, "M": 17}]),
                       (war_shift, [{"N": 1}, {"N": 2}, {"N": 37}]),
                       (matmul, [{"N": 1, "M": 1, "K": 1}, {"N": 17, "M": 33, "K": 31}])):
        k = pd.compile(op)
        for seed, sizes in enumerate(points):
            check_kernel(k, sizes, seed=seed)


# --------------------------------------------------------------------------------------------
# matmul: the initialization stays before the accumulation


def test_matmul_flow_from_init_to_accumulate() -> None:
    deps = compute_deps(matmul.scop)
    text = str(deps)
    assert re.search(r"S0\[i, j\] -> S1\[i' = i, j' = j, k = 0\]", text), text
    flow_init = isl.UnionMap(
        "[N, K, M] -> { S0[i, j] -> S1[i, j, 0] : 0 <= i < N and 0 <= j < M and K > 0 }")
    assert flow_init.is_subset(deps.flow)
    carried = isl.UnionMap(
        "[N, K, M] -> { S1[i, j, k] -> S1[i, j, k + 1] : 0 <= i < N and 0 <= j < M "
        "and 0 <= k < K - 1 }")
    assert carried.is_subset(deps.flow)
    assert "S0" in str(deps.output) and "S1" in str(deps.anti)


@pytest.mark.parametrize("sizes", [(1, 1, 1), (1, 7, 3), (5, 1, 9), (17, 33, 1), (32, 31, 33),
                                   (40, 65, 64)])
def test_matmul_init_before_accumulate(sizes) -> None:
    n, m, kk = sizes
    k = pd.compile(matmul)
    check_kernel(k, {"N": n, "M": m, "K": kk}, seed=n + m + kk)
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (n, kk)).astype(np.float32)
    B = rng.uniform(-1, 1, (kk, m)).astype(np.float32)
    C = np.full((n, m), np.nan, np.float32)  # garbage the initialization must replace
    k(A, B, C=C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-5)


def test_matmul_every_variant_keeps_init_first() -> None:
    k = pd.compile(matmul)
    _check_every_variant(k, cap=48)
    for v, variant in enumerate(k.variants):
        sizes = _sizes_in(k, variant.region, cap=48)
        n, kk, m = sizes["N"], sizes["K"], sizes["M"]
        got = k.run_variant(v, np.ones((n, kk), np.float32), np.ones((kk, m), np.float32),
                            C=np.full((n, m), 5.0, np.float32))
        assert np.all(got == kk), variant.name


# --------------------------------------------------------------------------------------------
# Anti and output dependences


def test_war_shift() -> None:
    k = pd.compile(war_shift)
    _check_all(k, [{"N": n} for n in SMALL])
    A = np.arange(10, dtype=np.float32)
    B = k(A)
    assert np.array_equal(B, np.r_[np.arange(1, 10), 0].astype(np.float32))
    assert np.array_equal(A, np.r_[np.arange(9) * 2 + 1, 9].astype(np.float32))
    deps = compute_deps(war_shift.scop)
    assert isl.UnionMap("[N] -> { S0[i] -> S1[i + 1] : 0 <= i and i + 2 < N }") \
        .is_subset(deps.anti), str(deps.anti)


def test_war_in_place_left() -> None:
    k = pd.compile(war_in_place_left)
    _check_all(k, [{"N": n} for n in SMALL])
    assert "omp parallel" not in k.source
    A = np.arange(6, dtype=np.int64)
    k(A)
    assert np.array_equal(A, [1, 5, 9, 13, 17, 5])


def test_waw_last_write_wins() -> None:
    k = pd.compile(waw_last_write)
    _check_all(k, [{"N": n, "M": m} for n, m in ((1, 1), (3, 64), (64, 3), (100, 17))])
    X = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(k(X), X[:, -1] * 2)
    deps = compute_deps(waw_last_write.scop)
    assert isl.UnionMap("[N, M] -> { S0[i, j] -> S0[i, j + 1] : 0 <= i < N and 0 <= j < M - 1 }"
                        ).is_subset(deps.output), str(deps.output)


def test_waw_two_loops() -> None:
    k = pd.compile(waw_two_loops)
    _check_all(k, [{"N": n} for n in SMALL])
    A = np.arange(5, dtype=np.float32)
    assert np.array_equal(k(A), A * 3)


def test_waw_pairs() -> None:
    k = pd.compile(waw_pairs)
    _check_all(k, [{"N": n} for n in SMALL])
    X = np.arange(7, dtype=np.float32)
    assert np.array_equal(k(X), [1, 3, 5, 6])


# --------------------------------------------------------------------------------------------
# Temporaries and local scalars


def test_shared_temp() -> None:
    k = pd.compile(shared_temp)
    _check_all(k, [{"N": n} for n in SMALL])


def test_shared_temp_reused_per_row() -> None:
    k = pd.compile(shared_temp_reuse)
    _check_all(k, [{"N": n, "M": m} for n, m in ((1, 1), (2, 5), (64, 33), (100, 8))])


def test_jacobi2d_temp_between_time_steps() -> None:
    k = pd.compile(jacobi2d)
    _check_all(k, [{"N": n, "T": t} for n, t in ((3, 1), (5, 4), (17, 3), (32, 2))])


def test_softmax_rows_with_threads() -> None:
    k = pd.compile(softmax)
    assert "omp parallel" in k.source  # the row loop runs on threads
    _check_every_variant(k, cap=64)
    # Enough work that the parallel loop runs on threads (the pragma's `if` clause asks for
    # PARALLEL_MIN_WORK statement instances, four passes of N * L and a few per row, today
    # 8192): each thread needs its own m, s, inv.
    _check_all(k, [{"N": n, "L": ell} for n, ell in ((1, 1), (2, 3), (257, 7), (300, 128),
                                                     (64, 100))])
    X = np.random.default_rng(5).normal(size=(1024, 48)).astype(np.float32)
    Y = k(X)
    np.testing.assert_allclose(Y.sum(axis=1), 1.0, rtol=1e-5)
    e = np.exp(X - X.max(axis=1, keepdims=True))
    np.testing.assert_allclose(Y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


THREADED_SOFTMAX = """
import ctypes
import numpy as np
import polydyn as pd
from kernels.softmax import softmax
from polydyn.testing import check_kernel
k = pd.compile(softmax)
for n, ell in ((300, 128), (1024, 48), (37, 1024)):
    check_kernel(k, {"N": n, "L": ell}, seed=n)
print("threads", ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
"""


def test_softmax_rows_with_four_threads() -> None:
    """The same check in a fresh process with OMP_NUM_THREADS=4, whatever the machine."""
    env = {**os.environ, "OMP_NUM_THREADS": "4"}
    result = subprocess.run([sys.executable, "-c", THREADED_SOFTMAX], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "threads 4" in result.stdout, result.stdout


def test_row_scalars_with_threads() -> None:
    k = pd.compile(row_scalars)
    _check_all(k, [{"N": n, "M": m} for n, m in ((1, 1), (3, 2), (300, 9), (520, 72))])


def test_carried_scalar() -> None:
    k = pd.compile(carried_scalar)
    _check_all(k, [{"N": n} for n in SMALL])
    A = np.arange(1, 6, dtype=np.float32)
    assert np.array_equal(k(A), [1, 3, 5, 7, 9])


# --------------------------------------------------------------------------------------------
# Reversed and triangular loops


def test_reverse_in_place() -> None:
    k = pd.compile(reverse_in_place)
    _check_all(k, [{"N": n} for n in (*SMALL, 0)])
    X = np.arange(1, 7, dtype=np.int64)
    k(X)
    assert np.array_equal(X, [1, 3, 5, 7, 9, 11])  # not the prefix sum 1, 3, 6, ...


def test_reverse_step2() -> None:
    k = pd.compile(reverse_step2)
    _check_all(k, [{"N": n} for n in SMALL])


def test_reverse_prefix_stays_sequential() -> None:
    k = pd.compile(reverse_prefix)
    _check_all(k, [{"N": n} for n in (*SMALL, 0)])
    assert "omp parallel" not in k.source
    X = np.ones(5, dtype=np.int64)
    k(X)
    assert np.array_equal(X, [5, 4, 3, 2, 1])


def test_reverse_literal_step() -> None:
    @pd.operator
    def reverse_literal(X: inout(i64[N])):
        for i in range(N - 1, 0, -1):
            X[i] = X[i] + X[i - 1]

    k = pd.compile(reverse_literal)
    _check_all(k, [{"N": n} for n in SMALL])
    X = np.arange(1, 7, dtype=np.int64)
    k(X)
    assert np.array_equal(X, [1, 3, 5, 7, 9, 11])


def test_constant_expression_step() -> None:
    @pd.operator
    def every_fourth(X: inout(i64[N])):
        for i in range(0, N, 2 * 2):
            X[i] = X[i] * 2

    k = pd.compile(every_fourth)
    _check_all(k, [{"N": n} for n in SMALL])


def test_triangular_sum() -> None:
    k = pd.compile(triangular_sum)
    _check_all(k, [{"N": n} for n in (1, 2, 3, 7, 16, 31, 50)])
    X = np.ones(6, dtype=np.int64)
    k(X)
    assert np.array_equal(X, [1, 2, 4, 8, 16, 32])


def test_triangular_solve() -> None:
    k = pd.compile(triangular_solve)
    for n in (1, 2, 5, 16, 40):
        rng = np.random.default_rng(n)
        L = np.tril(rng.uniform(-0.3, 0.3, (n, n)))
        b = rng.uniform(-1, 1, n)
        x = k(L, b)
        np.testing.assert_allclose(x, triangular_solve.reference(L, b), rtol=1e-12, atol=1e-12)
        np.fill_diagonal(L, 1.0)
        np.testing.assert_allclose(L @ x, b, rtol=1e-9, atol=1e-9)


def test_gauss_seidel() -> None:
    k = pd.compile(gauss_seidel)
    _check_all(k, [{"N": n} for n in (0, 1, 2, 3, 4, 9, 33, 64)])
    _check_every_variant(k, cap=40)


@pytest.mark.parametrize(("op", "sizes"), [
    (swap_transpose, (0, 1, 2, 5, 33, 64)),
    (running_total, (0, 1, 2, 17, 100)),
    (halving, (0, 1, 2, 3, 9, 64, 100)),
    (odd_then_even, (0, 1, 2, 3, 8, 9, 100)),
    (diagonal_sweep, (0, 1, 2, 5, 33, 64)),
    (lu_modular, (0, 1, 2, 5, 17, 30)),
], ids=lambda x: getattr(x, "name", None))
def test_more_orders_every_covering_variant(op, sizes) -> None:
    """Each variant whose region holds the sizes is run there, not only the dispatched one."""
    k = pd.compile(op)
    for n in sizes:
        point = isl.Set(f"{k.scop.param_space_text()} -> {{ : N = {n} }}")
        for v, variant in enumerate(k.variants):
            if not point.intersect(variant.region).is_empty():
                check_kernel(k, {"N": n}, seed=n, variant=v)
        check_kernel(k, {"N": n}, seed=n + 1)


def test_deps_text_names_every_kind() -> None:
    text = str(compute_deps(gauss_seidel.scop))
    for kind in ("flow:", "anti:", "output:"):
        assert kind in text
    assert "S0[i, j] -> S0[" in text


# --------------------------------------------------------------------------------------------
# Array reductions: their updates may be reordered among themselves, nothing else may move


@pd.operator
def running_sum(A: f32[N, M], s: out(f32[N]), T: out(f32[N, M])):
    """``T`` reads every partial sum of ``s``: the updates keep their order."""
    for i in range(N):
        for k in range(M):
            s[i] += A[i, k]
            T[i, k] = s[i]


def _legal(scop, sched: str, validity: isl.UnionMap) -> bool:
    from polydyn.schedule.legality import is_legal

    domain = scop.domain()
    tree = isl.Schedule.from_domain(domain).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(isl.UnionMap(sched).intersect_domain(domain)))
    return is_legal(tree, validity)


def test_reassociable_validity_reorders_a_reduction_only() -> None:
    from polydyn.schedule.reductions import reassociable_validity

    scop = matmul.scop
    deps = compute_deps(scop)
    relaxed = reassociable_validity(scop, deps)
    ctx = "[N, K, M] -> "
    reversed_k = ctx + "{ S0[i, j] -> [0, i, j, 0]; S1[i, j, k] -> [1, i, j, -k] }"
    assert not _legal(scop, reversed_k, deps.validity)
    assert _legal(scop, reversed_k, relaxed)
    # the initialization may not land among the updates (after the first one)
    init_inside = ctx + "{ S0[i, j] -> [1, i, j, 1]; S1[i, j, k] -> [1, i, j, 2 * k] }"
    assert not _legal(scop, init_inside, relaxed)
    assert _legal(scop, ctx + "{ S0[i, j] -> [1, i, j, -1]; S1[i, j, k] -> [1, i, j, 2 * k] }",
                  relaxed)

    scop = running_sum.scop
    deps = compute_deps(scop)
    relaxed = reassociable_validity(scop, deps)
    ctx = "[N, M] -> "
    assert _legal(scop, ctx + "{ S0[i, k] -> [i, k, 0]; S1[i, k] -> [i, k, 1] }", relaxed)
    # a statement that reads the partial sums pins the updates' order
    assert not _legal(scop, ctx + "{ S0[i, k] -> [i, -k, 0]; S1[i, k] -> [i, -k, 1] }",
                      relaxed)


def test_running_sum_matches_reference() -> None:
    k = pd.compile(running_sum)
    for sizes in ({"N": 1, "M": 1}, {"N": 5, "M": 33}, {"N": 17, "M": 64}):
        check_kernel(k, sizes, seed=sizes["M"])
