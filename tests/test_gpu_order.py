"""The GPU target's order of parallel loops (codegen_ocl/order.py): where the two innermost
parallel loops above a reduction are not an outer product (each operand moving along one of
them only), a loop that makes one moves inside, so that the work-items' register tiles run
over it: a convolution's output channels x output columns (an implicit GEMM) rather than its
output rows x columns. Products already in that order, and loops with no such pair (a
depthwise convolution), keep isl's order. Operators written as users write them."""

import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.runtime.opencl import opencl_available
from polydyn.target import GpuTarget
from polydyn.testing import check_kernel

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

B, C, F, H, W, KH, KW = pd.sym("B C F H W KH KW")
DEVICE = GpuTarget(max_group=256)
N, M, K = pd.sym("N M K")


@pd.operator(assume="KH >= 1 and KW >= 1 and H >= KH and W >= KW")
def conv_scalar(X: f32[B, C, H, W], Wt: f32[F, C, KH, KW],
                Y: out(f32[B, F, H - KH + 1, W - KW + 1])):
    for b in range(B):
        for f in range(F):
            for y in range(H - KH + 1):
                for x in range(W - KW + 1):
                    acc = 0.0
                    for c in range(C):
                        for i in range(KH):
                            for j in range(KW):
                                acc += X[b, c, y + i, x + j] * Wt[f, c, i, j]
                    Y[b, f, y, x] = acc


@pd.operator(assume="KH >= 1 and KW >= 1 and H >= KH and W >= KW")
def conv_cell(X: f32[B, C, H, W], Wt: f32[F, C, KH, KW],
              Y: out(f32[B, F, H - KH + 1, W - KW + 1])):
    for b, f, y, x in pd.grid(B, F, H - KH + 1, W - KW + 1):
        Y[b, f, y, x] = 0.0
        for c, i, j in pd.grid(C, KH, KW):
            Y[b, f, y, x] += X[b, c, y + i, x + j] * Wt[f, c, i, j]


@pd.operator(assume="KH >= 1 and KW >= 1 and H >= KH and W >= KW")
def depthwise(X: f32[B, C, H, W], Wt: f32[C, KH, KW],
              Y: out(f32[B, C, H - KH + 1, W - KW + 1])):
    for b, c, y, x in pd.grid(B, C, H - KH + 1, W - KW + 1):
        Y[b, c, y, x] = 0.0
        for i, j in pd.grid(KH, KW):
            Y[b, c, y, x] += X[b, c, y + i, x + j] * Wt[c, i, j]


@pd.operator()
def batched(A: f32[B, N, K], Bm: f32[B, K, M], Cm: out(f32[B, N, M])):
    for b, i, j in pd.grid(B, N, M):
        Cm[b, i, j] = 0.0
        for k in range(K):
            Cm[b, i, j] += A[b, i, k] * Bm[b, k, j]


def _mapped(op, ordered: bool = True, regtile: str = "") -> list[tuple[str, ...]]:
    """The last value (a host expression) of each mapped loop of every kernel, outermost
    first: the loops the work-items run over, register tiles on the last two."""
    recipe = pd.Schedule.isl().gpu(regtile=regtile, product_order=ordered)
    k = pd.compile(op, target=DEVICE, variants=[("true", recipe)])
    assert k.variants[0].recipe.gpu_mapping.product_order == ordered
    return [s.grid.hi for m in k.mappings for s in m.kernels if s.grid is not None]


@pytest.mark.parametrize("op", [conv_cell, conv_scalar], ids=lambda op: op.name)
def test_a_convolution_takes_channels_by_columns_innermost(op) -> None:
    assert _mapped(op) == [("(H - KH)", "(F - 1)", "(W - KW)")]
    assert _mapped(op, ordered=False) == [("(F - 1)", "(H - KH)", "(W - KW)")]


@pytest.mark.parametrize("op", [batched, depthwise], ids=lambda op: op.name)
def test_other_orders_stay(op) -> None:
    assert _mapped(op) == _mapped(op, ordered=False)


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("op", [conv_cell, conv_scalar], ids=lambda op: op.name)
def test_convolutions_agree_in_either_order(op, ordered) -> None:
    """Register tiles over output channels x columns (4 x 4 on 16 x 16 work-items: blocks
    of 64 x 64), or rows x columns with ``product_order=False``, at the blocks' edges."""
    recipe = pd.Schedule.isl().gpu(regtile="4x4", product_order=ordered)
    k = pd.compile(op, target=DEVICE, variants=[("true", recipe)])
    tiled = [s for m in k.mappings for s in m.kernels if s.regtiles is not None]
    assert tiled, k.variants[0].summary
    assert k.variants[0].recipe.gpu_mapping.product_order == ordered
    for b, c, f, h, w, kh, kw in [(1, 3, 64, 5, 67, 3, 3), (2, 2, 65, 4, 66, 1, 2),
                                  (1, 1, 63, 3, 70, 2, 3), (1, 4, 1, 6, 6, 3, 3),
                                  (1, 1, 1, 1, 1, 1, 1)]:
        check_kernel(k, {"B": b, "C": c, "F": f, "H": h, "W": w, "KH": kh, "KW": kw})
