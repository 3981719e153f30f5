"""Transposed statements (schedule/transposes.py, codegen_c/transposes.py): copies written
several ways (the batched and the channels-last copies of tests/phrasings.py, and others
here) and element-wise statements over a transposed read,
checked against NumPy and the reference at sizes around the 16 x 16 tiles (0, 1, 15, 16,
17, primes) and in every variant's region; full tiles of f32 copied through registers
(``pd_tr16_f32``), with AVX-512, with AVX alone and without either; other element types and
other tile sizes by plain loops."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, f64, i32, inout, out
from polydyn.testing import check_everywhere, check_kernel
from tests.phrasings import nchw_to_nhwc, permute_last_two, permute_scale_bias
from tests.targets import op_targets

B, C, H, W, N, M = pd.sym("B C H W N M")


@pd.operator
def transpose_target_order(X: f32[N, M], Y: out(f32[M, N])):
    """The loops in the target's order."""
    for j in range(M):
        for i in range(N):
            Y[j, i] = X[i, j]


@pd.operator
def heads_to_front(X: f32[N, B, M], Y: out(f32[B, M, N])):
    """A batch in the middle of the source, in front of the target."""
    for i, b, j in pd.grid(N, B, M):
        Y[b, j, i] = X[i, b, j]


@pd.operator
def transpose_add_inout(X: f32[N, M], Y: inout(f32[M, N])):
    """Added into the target, which is also read where it is written."""
    for i, j in pd.grid(N, M):
        Y[j, i] += X[i, j] * X[i, j]


@pd.operator
def symmetric_part(X: f32[N, N], Y: out(f32[N, N])):
    """The same array read in both orders: only the transposed read is staged."""
    for i, j in pd.grid(N, N):
        Y[j, i] = 0.5 * (X[i, j] + X[j, i])


@pd.operator
def transposed_scan(X: f32[N, M], Y: out(f32[M, N])):
    """A transposed read beside a dependence along the target's rows: the tiles' points run
    in their order, not through registers."""
    for i, j in pd.grid(N, M):
        Y[j, i] = X[i, j] + (Y[j, i - 1] if i >= 1 else 0.0)


@pd.operator
def transpose_f64(X: f64[N, M], Y: out(f64[M, N])):
    for i, j in pd.grid(N, M):
        Y[j, i] = X[i, j]


@pd.operator
def transpose_i32(X: i32[N, M], Y: out(i32[M, N])):
    for i, j in pd.grid(N, M):
        Y[j, i] = X[i, j]


NUMPY = {
    permute_last_two: lambda X: X.transpose(0, 2, 1),
    transpose_target_order: lambda X: X.T,
    nchw_to_nhwc: lambda X: X.transpose(0, 2, 3, 1),
    heads_to_front: lambda X: X.transpose(1, 2, 0),
    permute_scale_bias: lambda X, bias: X.transpose(0, 2, 1) * np.float32(0.5) + bias,
    transpose_add_inout: lambda X, Y: Y + X.T * X.T,
    symmetric_part: lambda X: np.float32(0.5) * (X.T + X),
    transposed_scan: lambda X: np.cumsum(X, axis=0).T,
    transpose_f64: lambda X: X.T,
    transpose_i32: lambda X: X.T,
}
REGISTERS = (permute_last_two, transpose_target_order, nchw_to_nhwc, heads_to_front,
             permute_scale_bias, transpose_add_inout, symmetric_part)
COPIES = (permute_last_two, transpose_target_order, nchw_to_nhwc, heads_to_front,
          transpose_f64, transpose_i32)
SIZES = [0, 1, 2, 15, 16, 17, 31, 32, 33, 37]


def _numpy_check(kernel, op, shape_syms, values, rng):
    """The kernel against NumPy at one size: copies exactly, arithmetic within a few ulps of
    the largest value (the C compiler contracts a product and a sum into an FMA)."""
    sizes = dict(zip(shape_syms, values, strict=True))
    args = []
    for a in op.scop.arg_arrays:
        if a.kind != "out":
            shape = tuple(d.eval(sizes) for d in a.shape)
            dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[a.dtype]
            args.append((a, (rng.standard_normal(shape) * 100).astype(dtype)))
    want = NUMPY[op](*(x.copy() for _, x in args))
    got = kernel(*(x for _, x in args))
    if got is None:  # updated in place
        got = next(x for a, x in args if a.kind == "inout")
    assert got.shape == want.shape
    if op in COPIES:
        assert np.array_equal(got, want), f"{op.name} {sizes}"
    elif want.size:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * float(np.abs(want).max()),
                                   err_msg=f"{op.name} {sizes}")


@pytest.mark.parametrize(("op", "target"),
                         op_targets(list(NUMPY), opencl_in_ci=(permute_last_two,)))
def test_transposes_against_numpy_and_reference(op, target):
    k = pd.compile(op, target=target)
    syms = k.scop.syms
    rng = np.random.default_rng(0)
    for values in [(s,) * len(syms) for s in SIZES] + \
            [tuple(int(v) for v in rng.choice(SIZES, len(syms))) for _ in range(12)]:
        _numpy_check(k, op, syms, values, rng)
    check_everywhere(k, [(17, 33, 16, 5), (1, 16, 48, 3), (3, 0, 16, 16)], hi=40)


@pytest.mark.parametrize("op", REGISTERS)
def test_full_f32_tiles_are_transposed_in_registers(op):
    k = pd.compile(op)
    tiled = [v for v in k.variants if v.name in ("full", "tiled")]
    assert tiled and all("pd_tr16_f32(&" in v.source for v in tiled)
    small = [v for v in k.variants if v.name == "small"]
    assert all("pd_tr16_f32" not in v.source for v in small)


@pytest.mark.parametrize("op", [transpose_f64, transpose_i32, transposed_scan])
def test_other_element_types_and_carried_loops_run_plain_tiles(op):
    k = pd.compile(op)
    assert "pd_tr16_f32" not in k.source
    assert "tile_band((0,), (16, 16))" in repr(k.variants[-1].recipe)


def test_a_batch_of_one_still_transposes():
    """``B = 1`` leaves the transposing pair: the tiled variants serve it, not an untiled
    ``B=1`` variant."""
    k = pd.compile(permute_last_two)
    assert "runs full" in k.explain(B=1, N=64, M=32)
    assert "runs tiled" in k.explain(B=1, N=65, M=33)


def test_other_tile_sizes_run_loops_and_replay():
    recipe = pd.Schedule.isl().tile_band((0,), (1, 32, 32))
    k = pd.compile(permute_last_two, variants=[("B >= 0", recipe)])
    assert "pd_tr16_f32" not in k.source
    check_kernel(k, {"B": 2, "N": 70, "M": 33})
    auto = pd.compile(permute_last_two)
    again = pd.compile(permute_last_two, variants=[(v.region, v.recipe) for v in auto.variants])
    assert again.source == auto.source


@pytest.mark.parametrize("flag", ["-mno-avx512f", "-mno-avx"])
def test_tiles_without_avx512_and_without_avx(flag):
    """Four 8 x 8 blocks in AVX registers, or element by element."""
    k = pd.compile(transpose_target_order, cflags=(*pd.Options().cflags, flag))
    assert "pd_tr16_f32(&" in k.source
    for n, m in [(16, 16), (33, 47), (64, 17)]:
        check_kernel(k, {"N": n, "M": m})
