"""Register-tiled OpenCL kernels with two local buffers per copy (``gpu(stages=2)``, the
default: the next reduction tile is copied while the current one is computed, one barrier per
tile) and copies that load 16-byte vectors where the rows allow (``gpu(vector=True)``, the
default; tested in the kernel). Each combination agrees with the reference on PoCL at the
edges that choose between them: reductions of one tile, a tile +- 1, rows whose length is or
is not a multiple of the vector, blocks +- 1. Operators written as users write them."""

import pytest

import polydyn as pd
from polydyn import f32, f64, out
from polydyn.runtime.opencl import opencl_available
from polydyn.target import GpuTarget
from polydyn.testing import check_kernel
from tests import phrasings as ph

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

N, M, K = pd.sym("N M K")
B, H, L, D = pd.sym("B H L D")
DEVICE = GpuTarget(max_group=256)
# 4x4 register tiles on 16x16 work-items, 16-deep tiles: blocks of 64 x 64 x 16
EDGES = [(1, 1, 1), (64, 64, 16), (65, 63, 17), (63, 68, 15), (64, 64, 32), (70, 129, 33),
         (3, 4, 4), (130, 64, 8)]


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def product_f64(A: f64[N, K], B: f64[K, M], C: out(f64[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator(assume="L >= 1 and D >= 1")
def scores_by_batch(Q: f32[B, H, L, D], Kt: f32[B, H, L, D], S: out(f32[B, H, L, L])):
    for b in range(B):
        for h in range(H):
            for i in range(L):
                for j in range(L):
                    S[b, h, i, j] = 0.0
                    for d in range(D):
                        S[b, h, i, j] += Q[b, h, i, d] * Kt[b, h, j, d]


def _one(op, **gpu):
    return pd.compile(op, target=DEVICE,
                      variants=[("true", pd.Schedule.isl().gpu(regtile="4x4", **gpu))])


def _tiled(k):
    return [spec for m in k.mappings for spec in m.kernels if spec.regtiles is not None]


# every phrasing with the defaults (two buffers, vector copies); the other settings on two
COMBOS = [(op, 2, True) for op in (ph.matmul_scalar, ph.matmul_bt, ph.linear_relu,
                                   product_f64)] + \
    [(op, stages, vector) for op in (ph.matmul_scalar, product_f64)
     for stages, vector in ((2, False), (1, True), (1, False))]


@pytest.mark.parametrize(("op", "stages", "vector"), COMBOS,
                         ids=[f"{op.name}-{s}-{v}" for op, s, v in COMBOS])
def test_buffers_and_vectors_agree_with_the_reference(op, stages, vector) -> None:
    k = _one(op, stages=stages, vector=vector)
    (spec,) = _tiled(k)[:1]
    assert spec.regtiles.stages == stages and spec.local
    text = k.source
    assert ("pd_db ^= 1" in text) == (stages == 2)
    vtype = "double2" if op is product_f64 else "float4"
    assert (f"*(__global const {vtype} *)" in text) == vector
    assert k.variants[0].recipe.gpu_mapping.stages == stages
    for n, m, kk in EDGES:
        check_kernel(k, {"N": n, "M": m, "K": kk}, seed=n * 10007 + m * 101 + kk)


@pytest.mark.parametrize(("op", "cases"), [
    (ph.linear_scalar_gelu, [{"N": n, "M": m, "K": kk} for n, m, kk in EDGES[:5]]),
    (ph.scores_scaled, [{"H": 2, "L": 65, "D": 17}, {"H": 1, "L": 64, "D": 16},
                        {"H": 1, "L": 63, "D": 33}, {"H": 3, "L": 1, "D": 1}]),
    (scores_by_batch, [{"B": 2, "H": 3, "L": 65, "D": 17}, {"B": 3, "H": 1, "L": 64, "D": 16},
                       {"B": 2, "H": 2, "L": 1, "D": 1}])],
    ids=lambda x: getattr(x, "name", ""))
def test_buffers_in_sequences_and_loops(op, cases) -> None:
    """The sum kept in a local scalar, set before the reduction and stored after it (the band
    one child of a sequence, its copies and barriers at the band's position), and a batch loop
    inside each work-item around the reduction tiles (four parallel loops, three mapped)."""
    k = pd.compile(op, target=DEVICE)
    assert any(spec.regtiles.stages == 2 for spec in _tiled(k))
    k.compute_units = 1  # each launch runs its largest register tiles
    for sizes in cases:
        check_kernel(k, sizes)


def test_two_buffers_fall_back_to_one_where_they_do_not_fit() -> None:
    """8x8 register tiles 32 deep on 16x16 work-items: A's 128 x 32 and B's 32 x 128 tiles
    fill the 32 KiB of local memory once; twice would not fit, so one buffer each."""
    k = pd.compile(ph.matmul_scalar, target=DEVICE,
                   variants=[("true", pd.Schedule.isl().gpu(regtile="8x8", bk=32))])
    (spec,) = _tiled(k)[:1]
    assert spec.regtiles.stages == 1 and sorted(c.sizes for c in spec.local) == \
        [(32, 128), (128, 32)]
    assert "pd_db" not in k.source
    for n, m, kk in [(128, 128, 32), (129, 127, 33), (5, 3, 31)]:
        check_kernel(k, {"N": n, "M": m, "K": kk})


def test_the_policy_states_its_buffers_and_replays() -> None:
    """The automatic mapping takes two buffers and records them; its recipe replays."""
    k = pd.compile(ph.matmul_scalar, target=DEVICE)
    assert any(spec.regtiles.stages == 2 for spec in _tiled(k))
    assert all(v.recipe.gpu_mapping.stages == 2 for v in k.variants
               if "register tiles" in v.summary)
    again = pd.compile(ph.matmul_scalar, target=DEVICE,
                       variants=[(v.region, v.recipe) for v in k.variants])
    assert again.source == k.source


@pytest.mark.parametrize("bad", [3, -1, True, "2"])
def test_bad_stages_are_refused(bad) -> None:
    with pytest.raises(pd.ScheduleError, match="stages"):
        pd.Schedule.isl().gpu(stages=bad)


def test_bad_vector_is_refused() -> None:
    with pytest.raises(pd.ScheduleError, match="vector"):
        pd.Schedule.isl().gpu(vector="yes")
