"""Register tiles on OpenCL work-items (codegen_ocl/regtiles.py) on PoCL.

Matrix products written several ways (an update of a zeroed output, a local scalar
accumulator, nn.Linear's transposed weight with a bias), a batched product and a conv2d
written as loops, each against the reference interpreter at the edges of the 64 x 64 blocks
and of the 4 x 4 register tiles and 16-deep reduction tiles (0, 1, primes, 63, 64, 65), in
the device's order and with the work-items reversed; the kernel's text (private
accumulators, unrolled register loops), the decision rule, the off switch and the order
check. Skipped as a whole when no OpenCL platform exists.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import islpy as isl
import pytest

import polydyn as pd
from polydyn import f32, inout, out
from polydyn.codegen_ocl.legality import check_launches, out_of_order
from polydyn.codegen_ocl.regtiles import RegisterTiles, parse_override
from polydyn.errors import InternalError, UnsupportedError
from polydyn.runtime.opencl import opencl_available
from polydyn.scop.deps import compute_deps
from polydyn.testing import check_kernel
from tests.test_hold import bt_then_read as mm_then_scale  # R after a held sum

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

B, N, M, K, O = pd.sym("B N M K O")  # noqa: E741 (nn.Linear's output features)
C_, F, H, W, KH, KW = pd.sym("C F H W KH KW")


@pd.operator()
def mm_update(A: f32[N, K], Bm: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
    for i in range(N):
        for j in range(M):
            for k in range(K):
                C[i, j] += A[i, k] * Bm[k, j]


@pd.operator()
def mm_accumulate(A: f32[N, K], Bm: f32[K, M], C: inout(f32[N, M])):
    """``C += A @ B``: the cells start from C's values."""
    for i, j, k in pd.grid(N, M, K):
        C[i, j] += A[i, k] * Bm[k, j]


@pd.operator()
def mm_scalar(A: f32[N, K], Bm: f32[M, K], C: out(f32[N, M])):
    # B stored transposed: scop.forward keeps this sum in its scalar (one per point here)
    for i in range(N):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += A[i, k] * Bm[j, k]
            C[i, j] = s


@pd.operator()
def linear(X: f32[N, K], Wt: f32[O, K], bias: f32[O], Y: out(f32[N, O])):
    for n in range(N):
        for o in range(O):
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * Wt[o, k]
            Y[n, o] = acc + bias[o]


@pd.operator()
def bmm(A: f32[B, N, K], Bm: f32[B, K, M], C: out(f32[B, N, M])):
    for b in range(B):
        for i in range(N):
            for j in range(M):
                C[b, i, j] = 0.0
                for k in range(K):
                    C[b, i, j] += A[b, i, k] * Bm[b, k, j]


@pd.operator()
def tri_mm(A: f32[N, N], Bm: f32[N, M], C: out(f32[N, M])):
    # a triangle: row i sums k <= i only, so a partial block may not run every point
    for i in range(N):
        for j in range(M):
            C[i, j] = 0.0
            for k in range(i + 1):
                C[i, j] += A[i, k] * Bm[k, j]


@pd.operator(assume="KH >= 1 and KW >= 1 and H >= KH and W >= KW")
def conv_loops(X: f32[B, C_, H, W], Wt: f32[F, C_, KH, KW],
               Y: out(f32[B, F, H - KH + 1, W - KW + 1])):
    for n in range(B):
        for co in range(F):
            for y in range(H - KH + 1):
                for x in range(W - KW + 1):
                    Y[n, co, y, x] = 0.0
                    for ci in range(C_):
                        for ky in range(KH):
                            for kx in range(KW):
                                Y[n, co, y, x] += X[n, ci, y + ky, x + kx] * Wt[co, ci, ky, kx]


@pd.operator(assume="H >= 3 and W >= 3")
def depthwise(X: f32[B, C_, H, W], Wt: f32[C_, 3, 3], Y: inout(f32[B, C_, H - 2, W - 2])):
    """A depthwise 3 x 3 convolution added to Y: a channel per work-group, the batch a loop
    in the kernel around its copies (the weights' copy, 9 elements, is one per work-item)."""
    for b, c, y, x in pd.grid(B, C_, H - 2, W - 2):
        for ky, kx in pd.grid(3, 3):
            Y[b, c, y, x] += X[b, c, y + ky, x + kx] * Wt[c, ky, kx]


# sizes: 0, 1, primes, 63/64/65 (the block), 3/4/5 (the register tile), 15/16/17 (BK)
MM_SHAPES = [(1, 1, 1), (0, 5, 3), (3, 0, 5), (5, 7, 0), (7, 13, 31), (63, 64, 65),
             (64, 64, 16), (65, 63, 17), (17, 65, 15), (3, 5, 4), (1, 129, 2), (130, 1, 33),
             (128, 192, 48), (129, 130, 33)]
SHAPES = {
    mm_update: ("N M K", MM_SHAPES),
    mm_then_scale: ("N M K", MM_SHAPES),
    mm_accumulate: ("N M K", [(1, 1, 1), (0, 5, 3), (65, 63, 17), (129, 130, 33)]),
    tri_mm: ("N M", [(1, 1), (0, 3), (5, 3), (65, 70), (70, 65), (129, 33), (128, 64)]),
    mm_scalar: ("N M K", MM_SHAPES),
    linear: ("N O K", MM_SHAPES),
    bmm: ("B N M K", [(1, 1, 1, 1), (0, 3, 4, 5), (2, 7, 13, 5), (2, 65, 63, 17),
                      (3, 16, 64, 15)]),
    conv_loops: ("B C F H W KH KW", [(1, 1, 1, 1, 1, 1, 1), (1, 2, 3, 7, 13, 3, 3),
                                     (2, 1, 2, 16, 17, 1, 1), (1, 3, 2, 15, 16, 5, 3),
                                     (1, 2, 1, 67, 70, 3, 3), (1, 17, 2, 5, 66, 2, 3)]),
    depthwise: ("B C H W", [(2, 3, 7, 15), (1, 1, 3, 3), (3, 2, 66, 67), (2, 1, 70, 5)]),
}
OPS = list(SHAPES)

_COMPILED: dict[tuple[str, str, str], pd.Kernel] = {}


def compiled(op, permute: str = "", regtile: str = "") -> pd.Kernel:
    key = (op.name, permute, regtile)
    if key not in _COMPILED:
        _COMPILED[key] = pd.compile(op, target="opencl", ocl_permute=permute,
                                    ocl_regtile=regtile)
    return _COMPILED[key]


def tiled_specs(k: pd.Kernel) -> list:
    return [spec for m in k.mappings for spec in m.kernels if spec.regtiles is not None]


# work-items in reverse order: a compile of its own per operator; the convolution's and the
# batched product's (half a minute) are in the slow set, the products' run in CI
SLOW_REVERSE = {conv_loops, bmm}
CASES = [pytest.param(op, dict(zip(syms.split(), shape, strict=True)), permute,
                      id=f"{op.name}-{'-'.join(map(str, shape))}{'-' + permute if permute else ''}",
                      marks=[pytest.mark.slow] if permute and op in SLOW_REVERSE else [])
         for op, (syms, shapes) in SHAPES.items() for shape in shapes
         for permute in ("", "reverse")]


@pytest.mark.parametrize(("op", "sizes", "permute"), CASES)
def test_matches_reference(op, sizes: dict[str, int], permute: str) -> None:
    k = compiled(op, permute)
    seed = zlib.crc32(repr(sorted(sizes.items())).encode())
    check_kernel(k, sizes, seed=seed)


@pytest.mark.parametrize("units", [16, 10**9])
@pytest.mark.parametrize(("op", "sizes"), [c.values[:2] for c in CASES if not c.values[2]],
                         ids=[c.id for c in CASES if not c.values[2]])
def test_alternatives_match_reference(op, sizes: dict[str, int], units: int) -> None:
    """A launch runs the first of its kernels (4x4, 2x2 register tiles, one point per
    work-item) whose groups reach the device's compute units: 16 picks the 2x2 kernel at
    129x130 and 128x192, 10**9 always the last."""
    k = compiled(op)
    seed = zlib.crc32(repr(sorted(sizes.items())).encode())
    old = k.compute_units
    k.compute_units = units
    try:
        check_kernel(k, sizes, seed=seed)
    finally:
        k.compute_units = old


def test_launch_picks_the_kernel_that_fills_the_device() -> None:
    k = compiled(mm_update)
    ids = {spec.name: n for n, spec in enumerate(
        x for m in k.mappings for spec in m.kernels for x in spec.family())}
    generic = k.mappings[-1].kernels[0]
    names = [generic.name, *(alt.name for alt in generic.alternatives)]
    assert [x.regtiles.tm if x.regtiles else 1 for x in (generic, *generic.alternatives)] == \
        [4, 2, 1]
    launched = []
    old = k.compute_units
    try:
        for units, want in ((1, 0), (9, 0), (10, 1), (25, 1), (26, 2)):
            k.compute_units = units
            launched.clear()
            k._host[f"variant_{len(k.mappings) - 1}"](
                lambda kid, *rest: launched.append(kid), N=129, M=130, K=33)
            assert launched == [ids[names[want]]], units  # groups: 3x3, 5x5, 9x9
    finally:
        k.compute_units = old


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_generic_variant_is_register_tiled(op) -> None:
    k = compiled(op)
    generic = k.mappings[-1]
    tiled = [spec for spec in generic.kernels if spec.regtiles is not None]
    assert tiled, f"{op.name}: {generic.variant.summary}"
    # two buffers per copy (conv reads its window in place: no copy, one stage; the
    # depthwise convolution's 3 taps are one reduction tile, no barrier under a loop)
    stages = 2 if tiled[0].local and op is not depthwise else 1
    assert tiled[0].regtiles == RegisterTiles(4, 4, 16, 16, 16, stages)
    assert tiled[0].local_size[:2] == (16, 16)
    assert "register tiles 4x4 per work-item, 64x64x16 blocks" + \
        (", two buffers" if stages == 2 else "") in generic.variant.summary


def test_kernel_text_has_private_accumulators_and_unrolled_fmas() -> None:
    src = compiled(mm_update).source
    generic = src.split("---- variant")[-1]
    assert "float pd_acc_C[4][4];" in generic
    assert "#pragma unroll\n" in generic
    assert "for (int pd_ra = 0; pd_ra < 4; pd_ra += 1)" in generic
    assert "for (int pd_rb = 0; pd_rb < 4; pd_rb += 1)" in generic
    # the work-item's points are strided by the 16 work-items along each member
    assert "+ 16 * pd_ra + pd_l0" in generic and "+ 16 * pd_rb + pd_l1" in generic
    fma = "pd_acc_C[pd_ra][pd_rb] = (pd_acc_C[pd_ra][pd_rb] + (pd_loc_A["
    assert fma in generic and "* pd_loc_Bm[" in generic.split(fma)[1].split(";")[0]
    assert "__local float pd_loc_A[1024]" in generic  # 64 x 16 of A
    assert "C[(pd_u0) * (M) + pd_u1] = pd_acc_C[pd_ra][pd_rb]" in generic  # written back
    scalar = compiled(mm_scalar).source.split("---- variant")[-1]
    assert "float s[4][4];" in scalar and "s[pd_ra][pd_rb] = (s[pd_ra][pd_rb] + " in scalar


def test_whole_tiles_run_without_guards() -> None:
    """A whole block's register loops have no guard, and a whole reduction tile's loop runs
    exactly ``bk`` points (isl's bounds without min/max); partial ones keep both."""
    generic = compiled(mm_update).source.split("---- variant")[-1]
    lines = [line.strip() for line in generic.splitlines()]
    points = [k for k, line in enumerate(lines) if line.startswith("const int64_t pd_c") and
              "+ 16 * pd_rb + pd_l1" in line]
    guarded = [k for k in points if lines[k + 1].startswith("if (")]
    assert guarded and len(guarded) < len(points)
    whole = [line for line in lines if line.startswith("for (int64_t pd_c") and
             "+ 15); " in line and "pd_min" not in line]
    assert whole
    assert any(line.startswith("for (int64_t pd_c") and "< K; " in line and "+= 1)" in line
               for line in lines)  # the last, partial reduction tile


def _guarded_statements(source: str, out_array: str) -> set[str]:
    """The statements under a register loop's guard in ``source``: ``load``/``store`` of the
    cells of ``out_array``, ``compute`` for anything else."""
    lines = [line.strip() for line in source.splitlines()]
    out = set()
    for k, line in enumerate(lines):
        if line.startswith("const int64_t pd_c") and "* pd_rb + pd_l" in line and \
                lines[k + 1].startswith("if ("):
            body = " ".join(lines[k + 2:k + 8])
            out.add("load" if f"] = {out_array}[" in body else
                    "store" if f"] = pd_acc_{out_array}[" in body else "compute")
    return out


def test_partial_blocks_run_every_point_where_reads_stay_in_local_memory() -> None:
    """A partial block's register loops carry no guard when its statements read only local
    copies and held cells and its rows and columns do not depend on the reduction (stale
    local values go to registers that are never stored); the cells' loads and stores keep
    theirs. A triangle, a kernel that writes global memory beside its cells and one that
    reads it in place keep their guards (the reference checks above cover all four)."""
    generic = compiled(mm_accumulate).source.split("---- variant")[-1]
    assert _guarded_statements(generic, "C") == {"load", "store"}
    triangle = compiled(tri_mm).source.split("---- variant")[-1]
    assert "compute" in _guarded_statements(triangle, "C")
    then = compiled(mm_then_scale).source.split("---- variant")[-1]
    assert "compute" in _guarded_statements(then, "C")
    # conv reads its input in place (its window's box grows with the syms): guarded
    conv = compiled(conv_loops).source.split("---- variant")[-1]
    assert "compute" in _guarded_statements(conv, "Y")


def test_cells_load_only_values_read_before_written() -> None:
    """The accumulators start from the output where a statement reads a cell before any
    writes it (``C += ...``); after ``C = 0`` they load nothing."""
    loads = "pd_acc_C[pd_ra][pd_rb] = C["
    assert loads in compiled(mm_accumulate).source
    zeroed = compiled(mm_update)
    assert tiled_specs(zeroed) and loads not in zeroed.source


def test_copies_within_one_pass_of_the_group_are_an_if() -> None:
    """A copy with no more elements than the work-group has work-items (the depthwise
    weights' 9) is an ``if``, not a loop that runs once: PoCL's vectorized work-group loops
    lost such a loop's copy in the 32-bit build while the register loops were rolled."""
    generic = compiled(depthwise).source.split("---- variant")[-1]
    assert "if (pd_lid < 1 * 3 * 3)" in generic and "pd_e < 1 * 3 * 3;" not in generic
    assert "pd_e < 1 * 1 * 66 * 66; pd_e += 256)" in generic  # X's box: a loop


def test_explain_names_the_register_tiles() -> None:
    text = compiled(linear).explain(N=70, O=40, K=9)
    assert "register tiles 4x4 per work-item, 64x64x16 blocks" in text
    assert "16x16 work-items" in text


def test_off_switch_and_forced_sizes(monkeypatch) -> None:
    off = compiled(mm_scalar, regtile="off")
    assert not tiled_specs(off) and "pd_ra" not in off.source
    assert "reqd_work_group_size(16, 16, 1)" in off.source
    check_kernel(off, {"N": 65, "M": 17, "K": 5}, seed=3)
    monkeypatch.setenv("POLYDYN_OCL_REGTILE", "2x2")
    forced = pd.compile(mm_scalar, target="opencl")
    assert {spec.regtiles for spec in tiled_specs(forced)} == {RegisterTiles(2, 2, stages=2)}
    assert "float s[2][2];" in forced.source
    check_kernel(forced, {"N": 33, "M": 31, "K": 18}, seed=4)
    with pytest.raises(UnsupportedError, match="POLYDYN_OCL_REGTILE"):
        pd.compile(mm_scalar, target="opencl", ocl_regtile="4by4")


@pd.operator(assume="O <= 40")
def linear_narrow(X: f32[N, K], Wt: f32[O, K], Y: out(f32[N, O])):
    for n in range(N):
        for o in range(O):
            Y[n, o] = 0.0
            for k in range(K):
                Y[n, o] += X[n, k] * Wt[o, k]


@pd.operator(assume="O <= 20")
def linear_thin(X: f32[N, K], Wt: f32[O, K], Y: out(f32[N, O])):
    for n in range(N):
        for o in range(O):
            Y[n, o] = 0.0
            for k in range(K):
                Y[n, o] += X[n, k] * Wt[o, k]


@pd.operator()
def add_one(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            Y[i, j] = X[i, j] + 1.0


def test_tile_sizes_follow_the_extents() -> None:
    """A member whose extent in the region is under 64 gets 2 points per work-item (under
    32: one, and then the kernel keeps the old mapping unless forced); a kernel with no
    reduction below its mapped members keeps the old mapping."""
    narrow = compiled(linear_narrow)
    assert {s.regtiles for s in tiled_specs(narrow)} == {RegisterTiles(4, 2, stages=2)}
    check_kernel(narrow, {"N": 70, "O": 37, "K": 17}, seed=5)
    thin = compiled(linear_thin)
    assert not tiled_specs(thin)
    check_kernel(thin, {"N": 67, "O": 19, "K": 3}, seed=6)
    forced = compiled(linear_thin, regtile="4x1")
    assert {s.regtiles for s in tiled_specs(forced)} == {RegisterTiles(4, 1, stages=2)}
    check_kernel(forced, {"N": 67, "O": 19, "K": 3}, seed=6)
    assert parse_override("") is None and parse_override("off") == (1, 1)
    assert parse_override("4x2") == (4, 2)
    assert not tiled_specs(compiled(add_one))


def test_order_check_catches_a_wrong_order() -> None:
    """The race check accepts the register-tiled kernels and rejects one whose order runs
    the reduction backwards (each step's read of the accumulator before its write)."""
    k = compiled(mm_update)
    spec = tiled_specs(k)[-1]
    deps = compute_deps(k.scop).all
    check_launches([spec], deps, "mm_update")
    assert out_of_order(deps, spec.order).is_empty()
    # [phase, k tile, slot, k, position, i, j] with the k tile and k negated
    flip = isl.UnionMap("{ [p, t, s, r, q, i, j] -> [p, -t, s, -r, q, i, j] }")
    wrong = spec.order.apply_range(flip)
    assert not out_of_order(deps, wrong).is_empty()
    with pytest.raises(InternalError, match="wrong order"):
        check_launches([replace(spec, order=wrong)], deps, "mm_update")
