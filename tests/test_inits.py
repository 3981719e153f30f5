"""Initializations fused into register tiles (schedule/inits.py): the statement that sets a
register tile's cells (conv's ``Y = 0``, a bias) runs inside the tile, just before its
reduction, where the tile holds each cell's whole reduction.

Every variant of each operator is checked against the reference with its outputs filled
with NaN before the call (a cell the fused code forgets stays NaN), at sizes around the
register tiles (14 and 16 rows, 32 and 16 columns), at 1, at primes and where the reduction
is empty (C = 0: only the init runs). The schedules say where the init was fused, the
full tiles' accumulators start from its values, and an init whose zeros another statement
reads before the reduction stays where it is."""

from __future__ import annotations

import functools
import re

import islpy as isl
import numpy as np
import pytest

import polydyn as pd
from kernels.conv2d import conv2d
from kernels.matmul import matmul
from polydyn import f32, out
from polydyn.scop.interp import run_reference
from polydyn.testing import call_args, make_inputs
from tests import phrasings as ph

B, C, F, H, W, N, M, K = pd.sym("B C F H W N M K")


@pd.operator(assume="H >= 3 and W >= 3")
def conv_bias(X: f32[B, C, H, W], Wt: f32[F, C, 3, 3], Bias: f32[F],
              Y: out(f32[B, F, H - 2, W - 2])):
    """A 3 x 3 conv whose outputs start from a bias (the init reads another array)."""
    for b, f, oy, ox in pd.grid(B, F, H - 2, W - 2):
        Y[b, f, oy, ox] = Bias[f]
        for c, ky, kx in pd.grid(C, 3, 3):
            Y[b, f, oy, ox] += X[b, c, oy + ky, ox + kx] * Wt[f, c, ky, kx]


@pd.operator(assume="N >= 1 and M >= 1")
def matmul_peek(A: f32[N, K], Bm: f32[K, M], Cm: out(f32[N, M]), D: out(f32[N, M])):
    """D reads C's zeros between C's init and its reduction: the init cannot move into the
    reduction's tiles."""
    for i, j in pd.grid(N, M):
        Cm[i, j] = 0.0
    for i, j in pd.grid(N, M):
        D[i, j] = Cm[i, j] + 1.0
    for i, j, k in pd.grid(N, M, K):
        Cm[i, j] += A[i, k] * Bm[k, j]


@functools.cache
def _kernel(op) -> pd.Kernel:
    return pd.compile(op)


def _point(scop, sizes: dict[str, int]) -> isl.Set:
    text = " and ".join(f"{s} = {sizes[s]}" for s in scop.syms)
    return isl.Set(f"{scop.param_space_text()} -> {{ : {text} }}")


def _check_all_variants(op, sizes: dict[str, int], seed: int = 0) -> list[str]:
    """Every variant whose region holds ``sizes`` against the reference, outputs prefilled
    with NaN; the names of the variants run."""
    k = _kernel(op)
    scop = k.scop
    inputs = make_inputs(k, sizes, seed)
    args, kw = call_args(k, inputs, sizes)
    want = run_reference(scop, tuple(args), kw)
    want = want if isinstance(want, tuple) else (want,)
    outs = [a for a in scop.arg_arrays if a.kind == "out"]
    ran = []
    for variant in k.variants:
        if not variant.region.intersect(_point(scop, sizes)).is_empty():
            filled = {a.name: np.full(w.shape, np.nan, w.dtype)
                      for a, w in zip(outs, want, strict=True)}
            got = k.run_variant(variant.name, *args, **kw, **filled)
            got = got if isinstance(got, tuple) else (got,)
            for a, g, w in zip(outs, got, want, strict=True):
                scale = float(np.max(np.abs(w))) if w.size else 1.0
                np.testing.assert_allclose(
                    g, w, rtol=1e-4, atol=1e-5 * max(1.0, scale),
                    err_msg=f"{scop.name} {sizes} variant {variant.name}: {a.name}")
            ran.append(variant.name)
    return ran


def _summaries(op) -> dict[str, str]:
    return {v.name: v.summary for v in _kernel(op).variants}


# --------------------------------------------------------------------------------------------
# Where the init is fused


def test_conv_init_fused_where_the_tile_holds_the_whole_reduction() -> None:
    """The untiled variants (register tiles over every input channel) set Y in the tiles;
    the tiled ones, whose channel tiles split a cell's reduction, keep Y's pass."""
    summaries = _summaries(conv2d)
    fused = {name for name, text in summaries.items() if "S0 set in S1's register tiles" in text}
    assert {"channels", "small", "B=1", "vector64", "vector32", "vector16"} <= fused
    assert not fused & {"tiled", "full", "generic"}


def test_conv_small_region_takes_few_input_channels() -> None:
    """A conv with 3 input channels and 32 output channels (a network's first layer) has
    no full channel tile: it runs the untiled register tiles with Y set in the tiles."""
    k = _kernel(conv2d)
    variant = k.select(B=4, C=3, F=32, H=224, W=224, KH=3, KW=3)
    assert variant.name == "small"
    assert "S0 set in S1's register tiles" in variant.summary


def test_full_tiles_start_from_the_init_values() -> None:
    """Where the init's loops precede one register tile, the tile's accumulators start from
    the init's values (the bias) and its loops are gone from there."""
    source = _kernel(conv_bias).source
    assert re.search(r"pd_acc\d+\[pd_r\]\[pd_v\] = Bias\[", source)
    assert re.search(r"pd_acc\d+\[pd_r\]\[pd_v\] = 0\.0f;", _kernel(conv2d).source)


def test_matmul_untiled_variant_fuses_the_init() -> None:
    summaries = _summaries(matmul)
    assert "S0 set in S1's register tiles" in summaries["small"]
    assert "S0 set" not in summaries["tiled"]  # K is tiled: a cell's sum spans tiles


def test_init_read_before_the_reduction_stays() -> None:
    """D reads C's zeros: moving the init into the reduction's tiles would break that flow,
    so no variant moves it, and D is C's zeros plus one."""
    assert not any("set in" in text for text in _summaries(matmul_peek).values())
    for n, m, kk in [(1, 1, 1), (7, 33, 5), (13, 40, 300)]:
        _check_all_variants(matmul_peek, {"N": n, "M": m, "K": kk}, seed=n)


# --------------------------------------------------------------------------------------------
# Values


CONV_SIZES = [
    # (B, C, F, H = W): around 14 and 16 rows of output channels, 32 and 16 columns
    (1, 3, 32, 34), (2, 3, 13, 35), (1, 3, 14, 33), (2, 3, 15, 36), (1, 1, 1, 3),
    (3, 5, 29, 40), (1, 2, 16, 18), (2, 3, 17, 19), (1, 7, 28, 50), (1, 64, 33, 12),
    (1, 65, 32, 10), (1, 3, 14, 70),
    pytest.param(2, 65, 31, 35, marks=pytest.mark.slow),
    pytest.param(1, 3, 14, 226, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("b", "c", "f", "hw"), CONV_SIZES)
def test_conv_every_variant(b, c, f, hw) -> None:
    sizes = {"B": b, "C": c, "F": f, "H": hw, "W": hw, "KH": 3, "KW": 3}
    assert _check_all_variants(conv2d, sizes, seed=b * 1000 + c * 100 + f)


@pytest.mark.parametrize(("b", "c", "f", "hw"), [(1, 3, 32, 34), (2, 5, 15, 19),
                                                 (1, 64, 40, 12), (2, 2, 29, 40)])
def test_conv_bias_every_variant(b, c, f, hw) -> None:
    sizes = {"B": b, "C": c, "F": f, "H": hw, "W": hw}
    assert "S0 set in S1's register tiles" in _kernel(conv_bias).select(**sizes).summary
    assert _check_all_variants(conv_bias, sizes, seed=f)


@pytest.mark.parametrize(("b", "f", "hw"), [(2, 30, 40), (1, 14, 3), (3, 33, 20)])
def test_conv_without_input_channels_is_the_init(b, f, hw) -> None:
    """C = 0: no reduction at all; every cell is the init's (the part of the init no tile
    takes runs on its own)."""
    k = _kernel(conv_bias)
    sizes = {"B": b, "C": 0, "F": f, "H": hw, "W": hw}
    X = np.zeros((b, 0, hw, hw), np.float32)
    Wt = np.zeros((f, 0, 3, 3), np.float32)
    bias = np.arange(1, f + 1, dtype=np.float32)
    want = np.broadcast_to(bias[None, :, None, None], (b, f, hw - 2, hw - 2))
    for variant in k.variants:
        if not variant.region.intersect(_point(k.scop, sizes)).is_empty():
            Y = np.full((b, f, hw - 2, hw - 2), np.nan, np.float32)
            np.testing.assert_array_equal(k.run_variant(variant.name, X, Wt, bias, Y=Y), want)


@pytest.mark.parametrize(("n", "m", "kk"), [(1, 1, 1), (5, 31, 7), (6, 32, 1), (7, 33, 2),
                                            (13, 95, 64), (12, 97, 300), (47, 3, 11)])
def test_matmul_every_variant(n, m, kk) -> None:
    assert _check_all_variants(matmul, {"N": n, "M": m, "K": kk}, seed=n + m)


def test_broadcast_init_is_not_tiled() -> None:
    """A linear layer's bias on a [batch, rows, features] input is a nest of its own in
    isl's schedule, before the product. It reads one vector along one loop, which the cache
    keeps without tiles: that nest is not tiled, and the product's regions do not depend on
    its sizes (tiled, it sent every batch under 48 to the untiled variant, up to 1.7x
    slower)."""
    from polydyn.parametric.regions import partition
    from polydyn.schedule.auto import isl_schedule
    from polydyn.scop.deps import compute_deps

    scop = ph.batched_linear.scop
    base = isl_schedule(scop, compute_deps(scop), scop.context)
    plans = {p.name: p for p in partition(scop, base)}
    assert [t.path for t in plans["tiled"].recipe.tile] == [(0, 1, 0)]
    for sizes in ({"B": 2, "N": 128, "M": 768, "K": 768}, {"B": 47, "N": 64, "M": 96, "K": 1}):
        assert not plans["tiled"].region.intersect(_point(scop, sizes)).is_empty(), sizes


@pytest.mark.parametrize(("b", "n", "m", "kk"), [(1, 1, 1, 1), (2, 5, 31, 7), (3, 49, 97, 3),
                                                 (2, 48, 256, 256), (1, 17, 300, 2)])
def test_batched_linear_every_variant(b, n, m, kk) -> None:
    assert _check_all_variants(ph.batched_linear, {"B": b, "N": n, "M": m, "K": kk}, seed=b + n)
