"""Guarded reads of a sum taken from a zero-padded copy (scop/padding.py): which statements get
the copy, the copy's shape, the rewritten operator on the reference interpreter (the guard
gone, the added instances reading zeros; temporaries and outputs start as NaN, so a read of a
cell the copy does not fill shows), and compiled kernels against the reference at sizes
around the borders. The 2-D convolutions of tests/phrasings.py (``conv_same_if``,
``conv1d_select``) are checked with the other phrasings."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.pipeline import _Side
from polydyn.runtime.opencl import opencl_available
from polydyn.testing import check_kernel, interpreted_outputs, region_points
from tests import phrasings as ph
from tests.targets import TARGETS, op_targets

B, C, F, L, K, H, W = pd.sym("B C F L K H W")
P = pd.sym("P")


@pd.operator(assume="L >= 1")
def strided(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, (L + 1) // 2])):
    """Stride 2, padding 1: the last input column is read for odd lengths only."""
    for f, t in pd.grid(F, (L + 1) // 2):
        Y[f, t] = 0.0
        for c, k in pd.grid(C, 3):
            if 0 <= 2 * t + k - 1 < L:
                Y[f, t] += X[c, 2 * t + k - 1] * Wt[f, c, k]


@pd.operator(assume="L >= 1 and K >= 1 and P >= 0")
def sym_padding(X: f32[C, L], Wt: f32[F, C, K], P: pd.index, Y: out(f32[F, L])):
    """A kernel size and a padding that are sizes: the copy's border is ``P`` below and
    ``K - 1 - P`` above (none when P >= K)."""
    for f, t in pd.grid(F, L):
        s = 0.0
        for c, k in pd.grid(C, K):
            if t + k - P >= 0 and t + k - P < L:
                s -= Wt[f, c, k] * X[c, t + k - P]
        Y[f, t] = s


@pd.operator(assume="L >= 1")
def bounded(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, L])):
    """The padding as the taps' loop bounds, no ``if``: the loop runs its whole range."""
    for f, t in pd.grid(F, L):
        Y[f, t] = 0.0
        for c in range(C):
            for k in range(max(0, 1 - t), min(3, L + 1 - t)):
                Y[f, t] += X[c, t + k - 1] * Wt[f, c, k]


@pd.operator(assume="L >= 1")
def even_channels(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, L])):
    """The guard also keeps odd output channels at zero: that condition stays."""
    for f, t in pd.grid(F, L):
        Y[f, t] = 0.0
        for c, k in pd.grid(C, 3):
            if 0 <= t + k - 1 < L and f % 2 == 0:
                Y[f, t] += X[c, t + k - 1] * Wt[f, c, k]


@pd.operator(assume="L >= 1")
def stricter(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, L])):
    """The guard skips the first column too: its upper half is X's bound and goes, the lower
    one stays."""
    for f, t in pd.grid(F, L):
        Y[f, t] = 0.0
        for c, k in pd.grid(C, 3):
            if 1 <= t + k - 1 < L:
                Y[f, t] += X[c, t + k - 1] * Wt[f, c, k]


@pd.operator(assume="L >= 1")
def depthwise(X: f32[C, L], Wt: f32[C, 3], Y: out(f32[C, L])):
    """Each element of X read three times: a copy does not pay."""
    for c, t in pd.grid(C, L):
        Y[c, t] = 0.0
        for k in range(3):
            if 0 <= t + k - 1 < L:
                Y[c, t] += X[c, t + k - 1] * Wt[c, k]


@pd.operator(assume="L >= 1")
def depthwise9(X: f32[C, L], Wt: f32[C, 9], Y: out(f32[C, L])):
    """Each element of X read by nine taps: the copy pays (``padding.MIN_WINDOW``)."""
    for c, t in pd.grid(C, L):
        s = 0.0
        for k in range(9):
            if 0 <= t + k - 4 < L:
                s += X[c, t + k - 4] * Wt[c, k]
        Y[c, t] = s


@pd.operator(assume="L >= 1")
def exp_terms(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, L])):
    """A term that is not zero where X is: no copy."""
    for f, t in pd.grid(F, L):
        Y[f, t] = 0.0
        for c, k in pd.grid(C, 3):
            if 0 <= t + k - 1 < L:
                Y[f, t] += pd.exp(X[c, t + k - 1]) * Wt[f, c, k]


@pd.operator(assume="L >= 1")
def select_one(X: f32[C, L], Wt: f32[F, C, 3], Y: out(f32[F, L])):
    """A conditional expression that reads 1 outside: no copy."""
    for f, t in pd.grid(F, L):
        Y[f, t] = 0.0
        for c, k in pd.grid(C, 3):
            Y[f, t] += (X[c, t + k - 1] if 0 <= t + k - 1 < L else 1.0) * Wt[f, c, k]


@pd.operator(assume="L >= 3")
def new_cells(X: f32[C, L], w: f32[F], Y: out(f32[F, L])):
    """The first two columns get no term at all: without the guard the statement would
    update cells it never updates, so no copy."""
    for f, t in pd.grid(F, L):
        for c in range(C):
            if t - 2 >= 0:
                Y[f, t] += X[c, t - 2] * w[f]


def _rewritten(op: pd.Operator):
    scop, notes, _ = _Side.rewritten(op.scop, None, True, False)
    return scop, [n for n in notes if "border of zeros" in n]


def test_padded_copy_shapes_and_notes() -> None:
    scop, notes = _rewritten(ph.conv_same_if)
    assert notes == ["X[b, c, ((y + ky) - 1), ((x + kx) - 1)]: read from X_pad, a copy of X "
                     "with a border of zeros, so S1 runs without its condition"]
    assert [str(d) for d in scop.array("X_pad").shape] == ["B", "C", "(H + 2)", "(W + 2)"]
    # the sum runs over whole windows: its domain is the loops' box
    assert _domain_is(scop, "S1", "0 <= b < B and 0 <= f < F and 0 <= y < H and 0 <= x < W "
                      "and 0 <= c < C and 0 <= ky <= 2 and 0 <= kx <= 2")
    scop, notes = _rewritten(ph.conv1d_select)
    assert notes and notes[0].endswith("reads it without a conditional expression")
    assert [str(d) for d in scop.array("X_pad").shape] == ["B", "C", "(L + 4)"]
    # a stride: a constant border, the largest over the lengths
    scop, notes = _rewritten(strided)
    assert notes and [str(d) for d in scop.array("X_pad").shape] == ["C", "(L + 2)"]
    scop, notes = _rewritten(sym_padding)
    assert notes and [str(d) for d in scop.array("X_pad").shape] == ["C", "((L + K) - 1)"]
    scop, notes = _rewritten(depthwise9)
    assert notes and [str(d) for d in scop.array("X_pad").shape] == ["C", "(L + 8)"]
    scop, notes = _rewritten(bounded)
    assert notes and notes[0].endswith("runs its loops over their whole ranges")
    k_loop = scop.tree[-1].body[0].body[1].body[0]  # for f: for t: [Y = 0, for c: for k]
    assert (k_loop.var, str(k_loop.lo), str(k_loop.hi)) == ("k", "0", "3")
    box = "0 <= f < F and 0 <= t < L and 0 <= c < C and 0 <= k <= 2"
    for op, kept in ((even_channels, "f mod 2 = 0"), (stricter, "t + k >= 2")):
        scop, notes = _rewritten(op)
        assert notes and notes[0].endswith("keeps only the part of its condition that is not "
                                           "X's bounds")
        assert _domain_is(scop, "S1", f"{box} and {kept}")


def _domain_is(scop, name: str, text: str) -> bool:
    import islpy as isl

    stmt = scop.statement(name)
    want = isl.Set(f"{scop.param_space_text()} -> {{ {name}[{', '.join(stmt.iters)}] : "
                   f"{text} }}").intersect_params(scop.context)
    return stmt.domain.is_equal(want)


@pytest.mark.parametrize("op", [depthwise, exp_terms, select_one, new_cells],
                         ids=lambda op: op.scop.name)
def test_no_copy(op: pd.Operator) -> None:
    scop, notes = _rewritten(op)
    assert notes == [] and all(a.kind != "temp" for a in scop.arrays)


OPS = [strided, sym_padding, bounded, depthwise9, even_channels, stricter, new_cells]
SIZES = [{"C": 1, "F": 1, "L": 1, "K": 1, "P": 0}, {"C": 3, "F": 5, "L": 2, "K": 3, "P": 1},
         {"C": 2, "F": 4, "L": 7, "K": 5, "P": 4}, {"C": 0, "F": 3, "L": 6, "K": 2, "P": 7},
         {"C": 17, "F": 33, "L": 31, "K": 3, "P": 2}]


@pytest.mark.parametrize("op", [strided, sym_padding, bounded, depthwise9, even_channels,
                                stricter, ph.conv_same_if, ph.conv1d_select],
                         ids=lambda op: op.scop.name)
def test_rewritten_operator_on_the_interpreter(op: pd.Operator) -> None:
    scop, _ = _rewritten(op)
    for sizes in SIZES if op in OPS else [{"B": 2, "C": 3, "F": 2, "H": 4, "W": 5, "L": 6}]:
        sizes = {s: sizes[s] for s in op.scop.syms}
        if not op.scop.context.intersect(_point(op, sizes)).is_empty():
            got = interpreted_outputs(op, scop, sizes, {"out": np.nan, "temp": np.nan})
            np.testing.assert_allclose(got[0], _reference(op, sizes), rtol=1e-5, atol=1e-5,
                                       err_msg=str(sizes))


def _point(op: pd.Operator, sizes: dict[str, int]):
    import islpy as isl

    text = " and ".join(f"{s} = {v}" for s, v in sizes.items())
    return isl.Set(f"{op.scop.param_space_text()} -> {{ : {text} }}")


def _reference(op: pd.Operator, sizes: dict[str, int]):
    from polydyn.testing import call_args, make_inputs

    args, kw = call_args(op, make_inputs(op, sizes), sizes)
    return op.reference(*args, **kw)


# on OpenCL in CI (targets.op_targets): a stride, the padded columns beside new cells, a
# depthwise filter
OPENCL_IN_CI = [strided, new_cells, depthwise9]


@pytest.mark.parametrize(("op", "target"), op_targets(OPS, OPENCL_IN_CI))
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    for sizes in SIZES:
        sizes = {s: sizes[s] for s in op.scop.syms}
        if not op.scop.context.intersect(_point(op, sizes)).is_empty():
            check_kernel(kernel, sizes)
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=20 if target == "c" else 9,
                                   limit=3):
            check_kernel(kernel, sizes, variant=index)


Bs, D, O = pd.sym("Bs D O")  # noqa: E741
Ls = pd.ragged("Ls", Bs)


@pd.operator(assume="D >= 1 and O >= 1")
def seq_conv(X: f32[Bs, Ls, D], Wt: f32[3, D, O], Y: out(f32[Bs, Ls, O])):
    """A 3-tap convolution along each sequence of a ragged batch, padded by 1 at both of its
    ends: the copy is per sequence."""
    for b in range(Bs):
        for s in range(Ls[b]):
            for o in range(O):
                acc = 0.0
                for t in range(3):
                    for k in range(D):
                        if 0 <= s + t - 1 < Ls[b]:
                            acc += X[b, s + t - 1, k] * Wt[t, k, o]
                Y[b, s, o] = acc


@pytest.mark.parametrize("target", TARGETS)
def test_ragged_sequences(target: str) -> None:
    kernel = pd.compile(seq_conv, target=target)
    rng = np.random.default_rng(0)
    lengths = [0, 1, 2, 5, 17, 33]
    x = pd.Jagged(rng.standard_normal((sum(lengths), 6)).astype(np.float32), lengths)
    w = rng.standard_normal((3, 6, 9)).astype(np.float32)
    y = kernel(x, w)
    for xb, yb in zip(x.blocks(), y.blocks(), strict=True):
        xp = np.pad(xb, [(1, 1), (0, 0)])
        want = sum(xp[t:t + len(xb)] @ w[t] for t in range(3))
        np.testing.assert_allclose(yb, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.values, seq_conv.reference(x, w).values, rtol=1e-4,
                               atol=1e-4)


@pd.operator(assume="H >= 3 and W >= 3")
def depthwise_valid(X: f32[Bs, C, H, W], Wt: f32[C, 3, 3], Y: out(f32[Bs, C, H - 2, W - 2])):
    """A depthwise 3 x 3 convolution without padding (what depthwise_same_if becomes)."""
    for b, c, y, x in pd.grid(Bs, C, H - 2, W - 2):
        s = 0.0
        for ky, kx in pd.grid(3, 3):
            s += X[b, c, y + ky, x + kx] * Wt[c, ky, kx]
        Y[b, c, y, x] = s


@pytest.mark.opencl
@pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)")
def test_depthwise_register_tiles_on_opencl() -> None:
    """The generic variant's register-tiled kernels (a channel per work-group, the batch a
    loop around the copies): ``compute_units`` picks the 4 x 4 tiles (3 work-groups reach
    1), the 2 x 2 ones (12 reach 4, the 4 x 4 tiles' 3 do not) and the plain kernel."""
    kernel = pd.compile(depthwise_valid, target="opencl")
    for units, h, w in ((1, 7, 15), (4, 42, 42), (10**9, 7, 15)):
        kernel.compute_units = units
        check_kernel(kernel, {"Bs": 2, "C": 3, "H": h, "W": w})
