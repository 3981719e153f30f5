"""The OpenCL mapping's sizes as recipe directives (SPEC section 3, ``gpu(...)``): work-group
extents, register-tiled work-items and reduction depth, lanes per row and values per group
are the recipe's, the automatic policy records the ones it used, a recipe that states them
maps to the same code again, sizes past the device's limit are refused, and kernels mapped
with other sizes agree with the reference at the edges of their groups and tiles (PoCL's CPU
device here). The operators are written as users write them."""

import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.pipeline import generate
from polydyn.runtime.opencl import opencl_available
from polydyn.target import GpuTarget
from polydyn.testing import check_kernel
from tests import phrasings as ph

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

N, M, K = pd.sym("N M K")
DEVICE = GpuTarget(max_group=256)
product = ph.matmul_scalar  # the sum in a scalar
row_softmax = ph.softmax_if  # rows: a lane kernel


@pd.operator(assume="N >= 1 and M >= 1")
def shifted_sum(A: f32[N, M], B: f32[N, M], C: out(f32[N, M])):
    for i, j in pd.grid(N, M):
        C[i, j] = A[i, j] * 2.0 + B[i, j]


@pd.operator(assume="M >= 1 and K >= 1")
def vector_matrix(x: f32[K], B: f32[K, M], y: out(f32[M])):
    for j in range(M):
        y[j] = 0.0
        for k in range(K):
            y[j] += x[k] * B[k, j]


def _one(op, recipe, target=DEVICE):
    return pd.compile(op, target=target, variants=[("true", recipe)])


def test_register_tiles_take_the_recipes_work_items_and_depth() -> None:
    """8 x 32 work-items of 2 x 2 register tiles, 8 reduction steps per local tile: blocks of
    16 x 64; sizes at each block's and each step's edges."""
    k = _one(product, pd.Schedule.isl().gpu(regtile="2x2", group=(8, 32), bk=8))
    (v,) = k.variants
    assert "register tiles 2x2 per work-item, 16x64x8 blocks" in v.summary
    assert v.recipe.gpu_mapping.group == ((8, 32),) and v.recipe.gpu_mapping.bk == 8
    for n, m, kk in [(16, 64, 8), (15, 65, 7), (17, 63, 9), (1, 1, 1), (33, 130, 17),
                     (3, 200, 1)]:
        check_kernel(k, {"N": n, "M": m, "K": kk})


def test_plain_kernels_take_the_recipes_group() -> None:
    k = _one(shifted_sum, pd.Schedule.isl().gpu(group=(4, 64)))
    assert "groups 4x64" in k.variants[0].summary
    for n, m in [(4, 64), (5, 63), (3, 65), (1, 1), (9, 130)]:
        check_kernel(k, {"N": n, "M": m})


def test_lane_kernels_take_the_recipes_lanes() -> None:
    k = _one(row_softmax, pd.Schedule.isl().gpu(lanes=(32, 128)))
    summary = k.variants[0].summary
    assert "a group of 32 lanes per value" in summary and "128 lanes" in summary
    for n, m in [(1, 1), (1, 300), (2, 31), (7, 33), (300, 5)]:
        check_kernel(k, {"N": n, "M": m})


def test_column_kernels_take_the_recipes_columns() -> None:
    k = _one(vector_matrix, pd.Schedule.isl().gpu(columns=(16, 4)))
    assert "a group of 4 lanes per 16 values" in k.variants[0].summary
    for m, kk in [(1, 1), (15, 3), (16, 4), (17, 5), (100, 33)]:
        check_kernel(k, {"M": m, "K": kk})


@pytest.mark.parametrize("op", [product, shifted_sum, row_softmax, vector_matrix],
                         ids=lambda op: op.scop.name)
def test_the_policy_records_the_sizes_it_used(op) -> None:
    """Every automatic OpenCL variant's recipe states the sizes of the kernels it maps, and
    stating them again (or other sizes' defaults left out) maps to the same sources."""
    gen = generate(op, DEVICE)
    for v in gen.scheduled:
        used = v.recipe.gpu_mapping
        assert used is not None and (used.group or used.lanes or used.columns), v.recipe
    again = generate(op, DEVICE, variants=[(v.region, v.recipe) for v in gen.scheduled])
    assert again.sources == gen.sources


def test_sizes_past_the_devices_limit_are_refused() -> None:
    with pytest.raises(pd.ScheduleError, match="512 work-items per group, the device allows 256"):
        _one(product, pd.Schedule.isl().gpu(group=(32, 16)))
    with pytest.raises(pd.ScheduleError, match=r"gpu\(lanes="):
        _one(row_softmax, pd.Schedule.isl().gpu(lanes=(64, 512)))


def test_the_c_target_ignores_the_sizes() -> None:
    plain = generate(product, "c", variants=[("true", pd.Schedule.isl())])
    sized = generate(product, "c", variants=[("true", pd.Schedule.isl().gpu(
        group=(8, 32), lanes=(64, 64), columns=(16, 4), bk=4))])
    assert sized.sources == plain.sources


def test_a_recipe_read_from_json_is_checked() -> None:
    """JSON written by an older version (three settings) maps with the defaults; sizes no
    method would take are refused when the recipe is compiled."""
    old = pd.Schedule.from_json([["isl", []], ["gpu", [False, "2x2", True]]])
    assert repr(old) == "pd.Schedule.isl().gpu(regtile='2x2')"
    check_kernel(_one(product, old), {"N": 40, "M": 70, "K": 9})
    bad = pd.Schedule.from_json([["isl", []], ["gpu", [False, "", True, [[0, 4]], [], [], 0]]])
    with pytest.raises(pd.ScheduleError, match="positive integers"):
        _one(product, bad)


@pytest.mark.parametrize("members", [1, 2])
def test_a_recipe_maps_fewer_loops(members: int) -> None:
    """``gpu(members=k)``: a kernel's grid takes the innermost k of its parallel loops (a
    batched product has three), the outer ones run in each work-item; the recipe states it
    and replays to the same code; sizes at the groups' edges agree with the reference."""
    k = _one(ph.batched_linear, pd.Schedule.isl().gpu(members=members))
    (v,) = k.variants
    assert v.recipe.gpu_mapping.members == members
    assert f"{members}-D grid" in v.summary
    assert f"members={members}" in repr(v.recipe)
    again = _one(ph.batched_linear, eval(repr(v.recipe), {"pd": pd}))
    assert again.source == k.source
    default = _one(ph.batched_linear, pd.Schedule.isl())
    assert default.source != k.source
    for b, n, m, kk in [(1, 1, 1, 1), (2, 17, 33, 5), (3, 16, 64, 9)]:
        check_kernel(k, {"B": b, "N": n, "M": m, "K": kk})


def test_members_out_of_range_are_refused() -> None:
    for bad in (4, -1, 1.5, True):
        with pytest.raises(pd.ScheduleError, match="members"):
            pd.Schedule.isl().gpu(members=bad)
