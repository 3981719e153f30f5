"""Double buffering (scop/buffers.py): a temporary computed from an array and copied back
every time step becomes the other half of a double buffer, the copy gone.

The rewritten Scop runs, on the reference interpreter, to the very values of the program as
written, with the temporary starting as NaN (no cell of it is read before it is written);
the compiled kernels (whose reference is always the operator as written) are checked at
step counts 0-3, around the wavefront region's edge (T = 9, 10, 11) and odd and even, and
at sizes around the 32-row tiles. Loops that do not have the form keep their copy.
"""

from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

import polydyn as pd
from kernels.jacobi2d import jacobi2d
from polydyn import f32, f64, inout, out, temp
from polydyn.scop.buffers import double_buffer
from polydyn.scop.exprs import Load
from polydyn.scop.interp import compiled_runner
from polydyn.scop.ir import Scop
from polydyn.testing import check_kernel

N, M = pd.sym("N M")


# --------------------------------------------------------------------------------------------
# Operators that take the rewrite


@pd.operator(assume="N >= 3")
def heat1d(A: inout(f64[N]), W: f64[N], S: pd.index, T: pd.index):
    """A 1-D stencil from step S (a sym) with a coefficient per cell; the copy's loop is
    written the other way round."""
    B = temp(f64[N])
    for t in range(S, T):  # noqa: B007
        for i in range(1, N - 1):
            B[i] = W[i] * (A[i - 1] + A[i + 1]) + (1.0 - 2.0 * W[i]) * A[i]
        for i in range(N - 2, 0, -1):
            A[i] = B[i]


@pd.operator(assume="N >= 2")
def triangle(A: inout(f32[N, N]), T: pd.index):
    """The written cells are a triangle (not a box): the first copy takes every other one."""
    B = temp(f32[N, N])
    for t in range(1, T + 1):  # noqa: B007
        for i in range(1, N):
            for j in range(0, i):
                B[i, j] = 0.25 * (A[i, j] + A[i - 1, j] + A[i, j + 1]) + 0.25 * A[j, i]
        for i in range(1, N):
            for j in range(0, i):
                A[i, j] = B[i, j]


@pd.operator(assume="N >= 3")
def rows_out(A: inout(f32[N, M]), T: pd.index, Y: out(f32[N])):
    """A double buffer followed by a statement that reads the array (not the temporary)."""
    B = temp(f32[N, M])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            for j in range(M):
                B[i, j] = 0.5 * (A[i - 1, j] + A[i + 1, j])
        for i in range(1, N - 1):
            for j in range(M):
                A[i, j] = B[i, j]
    for i in range(N):
        for j in range(M):
            Y[i] += A[i, j]


# --------------------------------------------------------------------------------------------
# Operators that keep their copy


@pd.operator(assume="N >= 3")
def copy_shifted(A: inout(f32[N]), T: pd.index):
    B = temp(f32[N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            B[i] = A[i - 1] + A[i + 1]
        for i in range(2, N - 1):
            A[i] = B[i - 1]


@pd.operator(assume="N >= 3")
def copy_part(A: inout(f32[N]), T: pd.index):
    """The copy writes back only some of the cells computed."""
    B = temp(f32[N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            B[i] = 0.5 * (A[i - 1] + A[i + 1])
        for i in range(2, N - 1):
            A[i] = B[i]


@pd.operator(assume="N >= 3")
def temp_read_later(A: inout(f32[N]), T: pd.index, Y: out(f32[N])):
    B = temp(f32[N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            B[i] = 0.5 * (A[i - 1] + A[i + 1])
        for i in range(1, N - 1):
            A[i] = B[i]
    for i in range(N):
        Y[i] = B[i]


@pd.operator(assume="N >= 3")
def time_in_guard(A: inout(f32[N]), T: pd.index):
    B = temp(f32[N])
    for t in range(T):
        for i in range(1, N - 1):
            if i != t:
                B[i] = 0.5 * (A[i - 1] + A[i + 1])
        for i in range(1, N - 1):
            if i != t:
                A[i] = B[i]


@pd.operator(assume="N >= 3")
def written_twice(A: inout(f32[N]), T: pd.index):
    """Each cell of the temporary is written twice a step (the last write counts)."""
    B = temp(f32[N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            for k in range(2):
                B[i] = 0.5 * (A[i - 1] + A[i + 1]) + k
        for i in range(1, N - 1):
            A[i] = B[i]


@pd.operator(assume="N >= 3")
def not_a_temp(A: inout(f32[N]), B: inout(f32[N]), T: pd.index):
    """The copied array is an argument: its last values are part of the result."""
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            B[i] = 0.5 * (A[i - 1] + A[i + 1])
        for i in range(1, N - 1):
            A[i] = B[i]


# --------------------------------------------------------------------------------------------
# The rewritten Scop on the reference interpreter


def _run(scop: Scop, syms: dict[str, int], arrays: dict[str, np.ndarray]) -> None:
    tensors = [arrays[a.name] for a in scop.arrays if a.is_tensor]
    compiled_runner(scop)(*[syms[s] for s in scop.syms], *tensors)


CASES = [
    (jacobi2d, [{"N": n, "T": t} for n in (3, 4, 7) for t in range(6)]),
    (heat1d, [{"N": n, "S": s, "T": t} for n in (3, 6) for s, t in
              ((0, 0), (0, 1), (2, 4), (1, 4), (3, 2), (5, 10))]),
    (triangle, [{"N": n, "T": t} for n in (2, 3, 6) for t in (0, 1, 2, 5)]),
    (rows_out, [{"N": n, "M": m, "T": t} for n, m in ((3, 1), (5, 4)) for t in (0, 1, 3, 4)]),
]


@pytest.mark.parametrize(("op", "sizes_list"), CASES, ids=lambda x: getattr(x, "name", ""))
def test_rewritten_scop_computes_the_same_values(op, sizes_list) -> None:
    new, notes = double_buffer(op.scop)
    assert len(notes) == 1  # the copy is gone; the first copy and the swapped step are new
    assert len(new.statements) == len(op.scop.statements) + 1
    rng = np.random.default_rng(3)
    for sizes in sizes_list:
        shapes = {a.name: tuple(d.eval(sizes) for d in a.shape) for a in op.scop.arrays
                  if a.is_tensor}
        given = {a.name: rng.uniform(-1, 1, shapes[a.name]).astype(
                     np.float32 if a.dtype == "f32" else np.float64)
                 for a in op.scop.arrays if a.is_tensor and a.kind != "temp"}
        for a in op.scop.arrays:
            if a.kind == "out":
                given[a.name][...] = 0
        want = {k: v.copy() for k, v in given.items()}
        got = {k: v.copy() for k, v in given.items()}
        for a in op.scop.arrays:
            if a.kind == "temp":
                dtype = np.float32 if a.dtype == "f32" else np.float64
                want[a.name] = np.zeros(shapes[a.name], dtype)
                got[a.name] = np.full(shapes[a.name], np.nan, dtype)
        _run(op.scop, sizes, want)
        _run(new, sizes, got)
        for a in op.scop.arrays:
            if a.kind != "temp":
                assert np.array_equal(want[a.name], got[a.name]), (a.name, sizes)


def test_jacobi2d_scop_rewritten() -> None:
    new, notes = double_buffer(jacobi2d.scop)
    assert notes == ("loop t: B and A alternate as double buffers; the copy "
                     "A[i, j] = B[i, j] (S1) is gone",)
    names = [s.name for s in new.statements]
    assert names == ["B_first", "S0", "S0_swapped"]
    first, as_written, swapped = new.statements
    assert (first.target.array, first.value.array) == ("B", "A")
    assert as_written.target.array == "B" and swapped.target.array == "A"
    assert {e.array for e in swapped.value.walk() if isinstance(e, Load)} == {"B"}
    # the first copy: B's edges for an even step count, every cell for an odd one
    for t, cells in ((0, 0), (1, 25), (2, 16), (3, 25), (4, 16)):
        point = isl.Set(f"[N, T] -> {{ : N = 5 and T = {t} }}")
        assert first.domain.intersect_params(point).count_val().to_python() == cells, t


@pytest.mark.parametrize("op", [copy_shifted, copy_part, temp_read_later, time_in_guard,
                                written_twice, not_a_temp], ids=lambda op: op.name)
def test_other_loops_keep_their_copy(op) -> None:
    new, notes = double_buffer(op.scop)
    assert notes == () and new is op.scop
    k = pd.compile(op)
    assert k.notes == ()
    for seed, (n, t) in enumerate(((3, 0), (3, 1), (6, 2), (9, 5))):
        check_kernel(k, {"N": n, "T": t}, seed=seed)


# --------------------------------------------------------------------------------------------
# Compiled kernels


def test_jacobi2d_double_buffered_kernel() -> None:
    k = pd.compile(jacobi2d)
    assert k.notes and "double buffers" in k.explain(N=40, T=12)
    for v in k.variants:  # no variant copies B back
        assert "A[(i) * N + j] = B[(i) * N + j]" not in v.source
    sizes = [(3, 0), (3, 1), (4, 2), (5, 3), (31, 9), (32, 10), (33, 11), (34, 12),
             (37, 20), (65, 21), (70, 23), (3, 10), (4, 19)]
    for seed, (n, t) in enumerate(sizes):
        check_kernel(k, {"N": n, "T": t}, seed=seed)
    for seed, (n, t) in enumerate(((33, 10), (40, 13), (67, 20))):  # both variants
        for variant in ("wavefront", "generic"):
            check_kernel(k, {"N": n, "T": t}, seed=seed, variant=variant)


def test_explicit_schedules_run_the_program_as_written() -> None:
    k = pd.compile(jacobi2d, variants=[("true", pd.Schedule.original().parallel("i"))])
    assert k.notes == ()
    assert "A[(i) * N + j] = B[(i) * N + j]" in k.source
    check_kernel(k, {"N": 9, "T": 3})


@pytest.mark.parametrize(("op", "sizes_list"), CASES[1:], ids=lambda x: getattr(x, "name", ""))
def test_double_buffered_kernels(op, sizes_list) -> None:
    k = pd.compile(op)
    assert len(k.notes) == 1
    more = {"heat1d": [{"N": 97, "S": 0, "T": 21}, {"N": 33, "S": 7, "T": 20}],
            "triangle": [{"N": 33, "T": 11}, {"N": 64, "T": 10}],
            "rows_out": [{"N": 70, "M": 33, "T": 12}, {"N": 31, "M": 2, "T": 9}]}[op.name]
    for seed, sizes in enumerate(sizes_list + more):
        check_kernel(k, sizes, seed=seed)
