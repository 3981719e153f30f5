"""User schedules (SPEC section 3): directives replayed on the operator's loops, every variant
checked against the reference, and refusals that name what they would break."""

import re

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, out, temp
from polydyn.testing import check_kernel, region_points

N = pd.sym("N")


@pd.operator(assume="N >= 2")
def shift(X: f32[N], Y: out(f32[N])):
    A = temp(f32[N])
    for i in range(N):
        A[i] = X[i] * 2.0
    for i in range(N - 1):
        Y[i] = A[i + 1]
    Y[N - 1] = 0.0


@pd.operator(assume="N >= 1")
def twice(X: f32[N], Y: out(f32[N])):
    A = temp(f32[N])
    for i in range(N):
        A[i] = X[i] * 2.0
    for i in range(N):
        Y[i] = A[i] + 1.0


def test_spec_example_variants_agree_with_reference() -> None:
    big = pd.Schedule().tile(i=64, j=256, k=128).parallel("i").vectorize("j")
    k = pd.compile(load("matmul")[0], variants=[("N >= 256 and M >= 256", big),
                                                ("true", pd.Schedule.auto())])
    assert [v.name for v in k.variants] == ["user0", "user1"]
    assert "tile(i=64, j=256, k=128)" in k.variants[0].summary
    assert "#pragma omp parallel for" in k.source
    for sizes in ({"N": 256, "M": 256, "K": 3}, {"N": 257, "M": 300, "K": 129},
                  {"N": 5, "M": 7, "K": 3}, {"N": 255, "M": 1, "K": 2}):
        check_kernel(k, sizes)


@pytest.mark.parametrize("schedule", [
    pd.Schedule().tile(i=8, j=16, k=4).parallel("i").vectorize("j"),
    pd.Schedule().tile(i=3, j=5),
    pd.Schedule().distribute("j").distribute("i").interchange("i", "k", "j").unroll("j", 4),
    pd.Schedule().distribute("j").distribute("i").interchange("k", "i", "j").parallel("i"),
    pd.Schedule().parallel("i", "j").unroll("k", 2),
])
def test_matmul_schedules_at_region_edges(schedule: pd.Schedule) -> None:
    k = pd.compile(load("matmul")[0], variants=[("true", schedule)])
    for sizes in region_points(k.scop, k.variants[0].region, hi=21, limit=6):
        check_kernel(k, sizes)


def test_unrolled_reduction_keeps_its_cell_in_a_local() -> None:
    """An unrolled loop whose statement updates one cell (k of C[i, j] += ...) reads it into
    a local before the loop and stores it after; an unrolled loop that moves the cell (j)
    writes the array in place. Both against the reference around the unroll factor."""
    by_k = pd.compile(load("matmul")[0],
                      variants=[("true", pd.Schedule().parallel("i", "j").unroll("k", 4))])
    assert re.search(r"float pd_cell\d+ = C\[\(i\) \* M \+ j\];", by_k.source)
    assert "C[(i) * M + j] = pd_cell" in by_k.source
    assert not re.search(r"C\[\(i\) \* M \+ j\] = \(C\[", by_k.source)
    moving = pd.Schedule().distribute("j").distribute("i").interchange("i", "k", "j")
    by_j = pd.compile(load("matmul")[0], variants=[("true", moving.unroll("j", 4))])
    assert "GCC unroll 4" in by_j.source and "pd_cell" not in by_j.source
    for k in (by_k, by_j):
        for n, m, depth in ((1, 1, 1), (3, 5, 4), (2, 7, 9), (5, 3, 13)):
            check_kernel(k, {"N": n, "M": m, "K": depth})


def test_fuse_and_tile_other_kernels() -> None:
    jac = pd.compile(load("jacobi2d")[0],
                     variants=[("true", pd.Schedule().tile(i=4, j=8).parallel("i"))])
    check_kernel(jac, {"N": 13, "T": 3})
    tr = pd.compile(load("transpose")[0],
                    variants=[("true", pd.Schedule().tile(i=8, j=8).parallel("i"))])
    check_kernel(tr, {"N": 17, "M": 31})
    ln = pd.compile(load("layernorm")[0], variants=[("true", pd.Schedule().parallel("i"))])
    check_kernel(ln, {"N": 9, "D": 33})


def test_fusion_that_breaks_a_dependence_is_refused() -> None:
    # fused, Y[i] = A[i + 1] would read A[i + 1] before iteration i + 1 writes it
    with pytest.raises(pd.ScheduleError, match=r"breaks dependences: S0 -> S1"):
        pd.compile(shift, variants=[("true", pd.Schedule().fuse("i"))])
    with pytest.raises(pd.ScheduleError, match="no two adjacent loops over j"):
        pd.compile(load("softmax")[0], variants=[("true", pd.Schedule().fuse("j"))])


def test_legal_fusion_runs() -> None:
    k = pd.compile(twice, variants=[("true", pd.Schedule().fuse("i").vectorize("i"))])
    assert k.source.count("for (int64_t") == 1  # one fused loop
    for n in (1, 2, 17, 64):
        check_kernel(k, {"N": n})


def test_interchange_that_breaks_a_dependence_is_refused() -> None:
    jac = load("jacobi2d")[0]
    with pytest.raises(pd.ScheduleError, match="breaks dependences"):
        pd.compile(jac, variants=[("true", pd.Schedule().distribute("t").interchange("i", "t"))])


@pytest.mark.parametrize(("schedule", "message"), [
    (pd.Schedule().parallel("k"), r"parallel\('k'\): loop k of matmul carries a dependence"),
    (pd.Schedule().vectorize("k"), r"vectorize\('k'\)"),
    (pd.Schedule().tile(q=4), r"unknown loop 'q'; the loops of matmul are i, j, k"),
    (pd.Schedule().interchange("k", "j"), "not a perfect nest"),
])
def test_refusals_name_the_loop(schedule: pd.Schedule, message: str) -> None:
    with pytest.raises(pd.ScheduleError, match=message):
        pd.compile(load("matmul")[0], variants=[("true", schedule)])


def test_bad_directive_arguments() -> None:
    with pytest.raises(pd.ScheduleError, match="positive integers"):
        pd.Schedule().tile(i=0)
    with pytest.raises(pd.CompileError, match="pd.Schedule"):
        pd.compile(load("matmul")[0], variants=[("true", "tile please")])


def test_recipes_are_data_and_replay_to_the_same_code() -> None:
    s = pd.Schedule().tile(i=16, j=32, k=8).parallel("i").vectorize("j").unroll("k", 2)
    again = pd.Schedule.from_json(s.to_json())
    assert again == s
    op = load("matmul")[0]
    a = pd.compile(op, variants=[("true", s)])
    b = pd.compile(op, variants=[("true", again)])
    assert a.source == b.source
    rng = np.random.default_rng(0)
    A = rng.standard_normal((33, 17), dtype=np.float32)
    B = rng.standard_normal((17, 40), dtype=np.float32)
    np.testing.assert_allclose(a(A, B), A @ B, rtol=1e-4, atol=1e-4)
