"""The phrasings of tests/phrasings.py (operators written as users write them), compiled and
checked against their NumPy oracle at sizes around the tile edges and against the reference
in every variant's region (sizes 0 and 1, primes, region edges); the rewrites each one should
get (temporaries contracted, cells held in scalars, scalars forwarded) are named in its
notes. Their speed is bench/phrasings.py's."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn.runtime.opencl import opencl_available
from polydyn.testing import check_kernel, make_inputs, region_points
from tests import phrasings as ph

# the rewrite notes each phrasing's compile gives (a prefix of each note, in order)
NOTES = {
    ph.softmax_temps: ("mx: the temporary", "sm: the temporary"),
    ph.softmax_if: ("S1: a conditional expression is a max or a min",
                    "exp((X[i, j] - m)): computed once, in Y[i, j]"),
    ph.layernorm_temps: ("mu: the temporary", "var: the temporary"),
    ph.rmsnorm_temp: ("ss: the temporary",),
    ph.matmul_scalar: ("acc: the sum is kept in C[i, j]",),
    ph.matmul_bt: ("C[i, j]: the sum over k is kept in the local scalar",),
    ph.linear_cell: ("Y[n, o]: the sum over k is kept in the local scalar",),
    ph.linear_scalar_gelu: ("v: the value is kept in Y[n, o]",
                            "S3: the element-wise epilogue runs after the product's loops"),
    ph.attention: ("S[i, j]: the sum over d is kept in the local scalar",),
    ph.gelu_tanh: ("x: the value is kept in Y[i, j]",),
    ph.linear_relu: ("Y[n, o]: the sum over k is kept in the local scalar",),
    ph.linear_bias_added: ("acc: the sum is kept in Y[n, o], added to its value",),
    ph.bias_gelu_temp: ("T: the nests that write and read it run as one",
                        "T: the temporary is kept in a local scalar",
                        "T: the value is kept in Y[i, j]"),
    ph.linear_temp_relu: ("T: the nests that write and read it run as one",
                          "T: the temporary is kept in a local scalar",
                          "T: the sum is kept in Y[n, o], then Y[n, o] = max(Y[n, o], 0.0)",
                          "S2: the element-wise epilogue runs after the product's loops"),
    ph.conv_same_if: ("X[b, c, ((y + ky) - 1), ((x + kx) - 1)]: read from X_pad",
                      "s: the sum is kept in Y[b, f, y, x]"),
    ph.conv1d_select: ("X[b, c, ((t + k) - 2)]: read from X_pad",),
    ph.depthwise_same_if: ("X[b, c, ((y + ky) - 1), ((x + kx) - 1)]: read from X_pad",
                           "s: the sum is kept in Y[b, c, y, x]"),
    ph.conv_stride2: ("s: the sum is kept in Y[b, f, y, x]",),
    ph.conv_stride2_same_if: ("X[b, c, (((2 * y) + ky) - 1), (((2 * x) + kx) - 1)]: read from "
                              "X_pad", "s: the sum is kept in Y[b, f, y, x]"),
    ph.sum_squares_cell: ("y[0]: the sum over i, j is kept in the local scalar",),
    ph.pairwise_sq_dist: ("t: its value (A[i, k] - Bv[j, k]) is computed in the update of s",),
    ph.middle_softmax: ("exp((X[b, s, d] - m)): computed once, in Y[b, s, d]",),
    ph.softmax_columns: ("exp((X[i, j] - mx)): computed once, in Y[i, j]",),
    ph.conv_nhwc: ("acc: the sum is kept in Y[b, y, x, f]",),
    ph.token_conv1d: ("acc: the sum is kept in Y[b, c, t]",),
    ph.argmax_rows: ("S3: a conditional expression is a max or a min",),
    ph.matmul_blas: ("acc: the sum is kept in Cm[i, j], from (beta * Cm[i, j]), each term "
                     "times alpha",),
}

# on the CPU, where register tiles read W from a repacked copy (pipeline.REPACK_ROWS rows up)
NOTES_C = {
    ph.linear_scalar_gelu: ("v: the value is kept in Y[n, o]",
                            "s: the sum is kept in Y[n, o], from b[o]",
                            "S3: the element-wise epilogue runs after the product's loops"),
    ph.pairwise_sq_dist: ("t: its value (A[i, k] - Bv[j, k]) is computed in the update of s",
                          "s: the sum is kept in Dist[i, j]"),
    ph.linear_relu: ("S2: the element-wise epilogue runs after the product's loops",
                     "Y[n, o]: the sum over k is kept in the local scalar"),
    ph.scores_scaled: ("acc: the sum is kept in S[h, i, j]",
                       "S2: the element-wise epilogue runs after the product's loops"),
    # the scalars of a (b, d) or a pixel in temporaries, the row loop then innermost
    ph.middle_softmax: ("exp((X[b, s, d] - m)): computed once, in Y[b, s, d]",
                        "m: the scalar is kept in m[b, d] (the loop over d then runs along",
                        "t: the scalar is kept in t[b, d]"),
    ph.softmax_columns: ("exp((X[i, j] - mx)): computed once, in Y[i, j]",
                         "mx: the scalar is kept in mx[j] (the loop over j then runs along",
                         "s: the scalar is kept in s[j]"),
    ph.channels_first_layernorm: ("mu: the scalar is kept in mu[b, y, x]",
                                  "var: the scalar is kept in var[b, y, x]",
                                  "r: the scalar is kept in r[b, y, x]"),
    # invariant math of an element-wise nest, once per row or channel
    ph.layernorm_temps: ("mu: the temporary", "var: the temporary",
                         "pd_inv: sqrt((var + 1e-05)) is computed once per iteration of the "
                         "loop over i"),
    ph.rmsnorm_temp: ("ss: the temporary",
                      "pd_inv: sqrt(((ss / D) + 1e-06)) is computed once per iteration"),
    ph.batchnorm_infer: ("pd_inv: sqrt((var[c] + 1e-05)) is computed once per iteration of "
                         "the loop over c",),
    ph.batched_linear_nt_seq_first: ("acc: the sum is kept in Y[n, s, o]",),
}

# per phrasing, sizes against NumPy: 1, primes, tile edges (48, 256 for products)
SIZES = {
    "softmax": [{"N": 1, "M": 1}, {"N": 3, "M": 257}, {"N": 17, "M": 1025}],
    "layernorm": [{"N": 1, "D": 1}, {"N": 5, "D": 767}, {"N": 49, "D": 1024}],
    "rmsnorm": [{"N": 1, "D": 1}, {"N": 7, "D": 4097}],
    "matmul": [{"N": 1, "M": 1, "K": 1}, {"N": 47, "M": 257, "K": 31},
               {"N": 49, "M": 33, "K": 257}, {"N": 97, "M": 255, "K": 129},
               {"N": 23, "M": 31, "K": 17}, {"N": 24, "M": 33, "K": 16},
               {"N": 5, "M": 31, "K": 17}, {"N": 6, "M": 65, "K": 16}],
    "linear": [{"N": 1, "M": 1, "K": 1}, {"N": 1, "M": 768, "K": 768},
               {"N": 13, "M": 97, "K": 65}, {"N": 49, "M": 257, "K": 33},
               {"N": 23, "M": 17, "K": 31}, {"N": 24, "M": 31, "K": 257},
               {"N": 25, "M": 1, "K": 1}, {"N": 5, "M": 33, "K": 40},
               {"N": 6, "M": 17, "K": 257}, {"N": 7, "M": 32, "K": 3}],
    # none, one, primes; the register tiles' 6 and 48 rows and 16 lanes +-1
    "pairwise": [{"N": 0, "M": 3, "K": 2}, {"N": 1, "M": 1, "K": 1},
                 {"N": 7, "M": 17, "K": 0}, {"N": 49, "M": 257, "K": 33},
                 {"N": 5, "M": 15, "K": 64}, {"N": 6, "M": 17, "K": 129}],
    "batched": [{"B": 1, "N": 1, "M": 1, "K": 1}, {"B": 2, "N": 49, "M": 257, "K": 33},
                {"B": 3, "N": 5, "M": 97, "K": 256}, {"B": 47, "N": 7, "M": 31, "K": 3}],
    "causal": [{"H": 1, "L": 1}, {"H": 2, "L": 67}],
    "attention": [{"L": 1, "D": 1}, {"L": 67, "D": 64}, {"L": 130, "D": 7},
                  {"L": 23, "D": 16}, {"L": 24, "D": 65}, {"L": 257, "D": 33},
                  {"L": 5, "D": 64}, {"L": 6, "D": 9}],
    "gelu": [{"N": 0, "M": 3}, {"N": 3, "M": 1031}],
    "bias_gelu": [{"N": 0, "M": 3}, {"N": 1, "M": 1}, {"N": 5, "M": 1031}],
    # strips of 4096 f32 and steps of 8 of the split sums (codegen_c/split.py), full and not
    "vecmat": [{"M": 1, "K": 1}, {"M": 4097, "K": 129}, {"M": 33, "K": 1031},
               {"M": 4096, "K": 136}],
    "column": [{"N": 1, "M": 1}, {"N": 129, "M": 4097}, {"N": 1031, "M": 7},
               {"N": 256, "M": 8193}],
    # 1 x 1 images, 0 channels, primes; the register tiles' 14 and 32 (+-1) output columns
    # and channels
    "conv_same": [{"B": 1, "C": 1, "F": 1, "H": 1, "W": 1},
                  {"B": 2, "C": 3, "F": 17, "H": 5, "W": 13},
                  {"B": 1, "C": 0, "F": 2, "H": 2, "W": 3},
                  {"B": 1, "C": 33, "F": 33, "H": 3, "W": 15},
                  {"B": 1, "C": 64, "F": 31, "H": 7, "W": 14}],
    "depthwise": [{"B": 1, "C": 1, "H": 1, "W": 1}, {"B": 2, "C": 3, "H": 5, "W": 13},
                  {"B": 1, "C": 33, "H": 17, "W": 31}],
    # one output pixel and channel, primes, an output row of 16 lanes +-1 (its reads span
    # twice that), a tile's 14 channel rows +-1
    "conv_stride2": [{"B": 1, "C": 1, "F": 1, "P": 1, "Q": 1},
                     {"B": 2, "C": 3, "F": 17, "P": 5, "Q": 13},
                     {"B": 1, "C": 0, "F": 2, "P": 2, "Q": 3},
                     {"B": 1, "C": 5, "F": 15, "P": 3, "Q": 17},
                     {"B": 1, "C": 7, "F": 13, "P": 2, "Q": 15},
                     {"B": 2, "C": 33, "F": 29, "P": 7, "Q": 31}],
    "conv1d": [{"B": 1, "C": 1, "F": 1, "L": 1}, {"B": 2, "C": 3, "F": 17, "L": 31},
               {"B": 1, "C": 0, "F": 2, "L": 2}, {"B": 3, "C": 33, "F": 33, "L": 129}],
    "batchnorm": [{"B": 0, "C": 3, "H": 2, "W": 2}, {"B": 1, "C": 1, "H": 1, "W": 1},
                  {"B": 2, "C": 5, "H": 7, "W": 33}, {"B": 1, "C": 49, "H": 33, "W": 31}],
    # one row, 1 x 1 pixels, primes; the vector loop's 16 and 32 lanes +-1 along the rows
    "middle_softmax": [{"B": 1, "L": 1, "D": 1}, {"B": 2, "L": 7, "D": 33},
                       {"B": 3, "L": 17, "D": 15}, {"B": 1, "L": 2, "D": 257}],
    # one token, none, primes; strips of 512 lanes +-1 (``strip_mine_vector``)
    "sequence_mean": [{"B": 1, "L": 1, "D": 1}, {"B": 2, "L": 0, "D": 3},
                      {"B": 3, "L": 17, "D": 513}, {"B": 49, "L": 5, "D": 31}],
    "channels_first": [{"B": 0, "C": 3, "H": 2, "W": 2}, {"B": 1, "C": 1, "H": 1, "W": 1},
                       {"B": 2, "C": 5, "H": 3, "W": 17}, {"B": 1, "C": 31, "H": 2, "W": 33}],
    # 1 x 1 planes, a 7 x 7 head, primes, rows of 16 lanes +-1
    "global_avgpool": [{"B": 1, "C": 1, "H": 1, "W": 1}, {"B": 2, "C": 5, "H": 7, "W": 7},
                       {"B": 3, "C": 17, "H": 13, "W": 31}, {"B": 1, "C": 2, "H": 2, "W": 17}],
    "instance_norm": [{"B": 1, "C": 1, "H": 1, "W": 1}, {"B": 2, "C": 3, "H": 7, "W": 7},
                      {"B": 1, "C": 5, "H": 13, "W": 33}, {"B": 2, "C": 2, "H": 3, "W": 15}],
    "sum_squares": [{"N": 0, "M": 4}, {"N": 1, "M": 1}, {"N": 7, "M": 1031},
                    {"N": 129, "M": 33}],
    "scores": [{"H": 1, "L": 1, "D": 1}, {"H": 2, "L": 67, "D": 64}, {"H": 3, "L": 23, "D": 17},
               {"H": 1, "L": 6, "D": 9}, {"H": 2, "L": 257, "D": 33}],
    # 1 x 1 images, no channels, primes; 16 lanes of output channels and 6 columns +-1
    "conv_nhwc": [{"B": 1, "P": 1, "Q": 1, "C": 1, "F": 1},
                  {"B": 2, "P": 5, "Q": 13, "C": 3, "F": 17},
                  {"B": 1, "P": 2, "Q": 3, "C": 0, "F": 2},
                  {"B": 1, "P": 3, "Q": 7, "C": 33, "F": 15},
                  {"B": 1, "P": 2, "Q": 5, "C": 17, "F": 33}],
    # fewer tokens than taps, no channels, primes
    "token_conv": [{"B": 1, "C": 1, "L": 1}, {"B": 2, "C": 5, "L": 3},
                   {"B": 1, "C": 0, "L": 4}, {"B": 2, "C": 7, "L": 67}],
    "row_cumsum": [{"N": 0, "M": 3}, {"N": 1, "M": 1}, {"N": 7, "M": 1031},
                   {"N": 17, "M": 16}],
    "log_softmax": [{"N": 1, "M": 1}, {"N": 3, "M": 257}, {"N": 17, "M": 1025}],
    "argmax": [{"N": 0, "M": 2}, {"N": 1, "M": 1}, {"N": 13, "M": 257}, {"N": 5, "M": 16}],
    # one batch, tiles of 16 x 16 +-1, primes
    "permute": [{"B": 0, "N": 3, "M": 3}, {"B": 1, "N": 16, "M": 16}, {"B": 2, "N": 17, "M": 33},
                {"B": 3, "N": 15, "M": 31}, {"B": 1, "N": 37, "M": 1}],
    "nchw": [{"B": 1, "C": 1, "H": 1, "W": 1}, {"B": 2, "C": 16, "H": 4, "W": 4},
             {"B": 1, "C": 17, "H": 3, "W": 11}, {"B": 2, "C": 33, "H": 5, "W": 7}],
}


def _family(op: pd.Operator) -> str:
    return next(f for f in SIZES if op.scop.name.startswith(f))



TARGET_MARKS = {"c": [], "opencl": [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)")]}
# The slow set: the padded stride-2 convolution's C sweep (half a minute; the stride-2 and the
# padded convolutions keep theirs in CI), and on OpenCL the phrasings of three seconds or more
# whose family keeps a phrasing there (convolutions: conv_same_if; products over batches:
# batched_linear_seq_first; products: matmul_bt, linear_relu, linear_cell; sequence sums:
# sequence_mean; sums over planes: instance_norm): every phrasing keeps its C sweep in CI.
SLOW = {(ph.conv_stride2_same_if, "c"), *((op, "opencl") for op in (
    ph.conv_stride2, ph.conv_stride2_same_if, ph.conv1d_select, ph.conv_nhwc, ph.token_conv1d,
    ph.batched_linear, ph.batched_linear_nt_seq_first, ph.matmul_blas, ph.matmul_at,
    ph.matmul_ikj, ph.matmul_scalar, ph.linear_bias_added, ph.pairwise_sq_dist,
    ph.sequence_mean_weighted, ph.global_avgpool))}


@pytest.mark.parametrize(("op", "target"), [
    pytest.param(op, t, id=f"{op.scop.name}-{t}",
                 marks=[*marks, *([pytest.mark.slow] if (op, t) in SLOW else [])])
    for t, marks in TARGET_MARKS.items() for op in ph.ALL])
def test_phrasing_against_numpy_and_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    want_notes = NOTES_C.get(op, NOTES.get(op, ())) if target == "c" else NOTES.get(op, ())
    assert len(kernel.notes) == len(want_notes) and all(
        n.startswith(w) for n, w in zip(kernel.notes, want_notes, strict=True)), kernel.notes
    sizes_list = SIZES[_family(op)] if target == "c" else SIZES[_family(op)][:2]
    for sizes in sizes_list:
        inputs = make_inputs(op, sizes, seed=3)
        if op is ph.batchnorm_infer:  # a variance is not negative (the region checks below
            inputs["var"] = np.abs(inputs["var"])  # compare NaN with NaN where it is)
        args = ph.positional(op, inputs)
        want = ph.NUMPY[op](*ph.float64(args))
        got = ph.results(op, args, kernel(*args))
        np.testing.assert_allclose(got, want if isinstance(want, tuple) else (want,),
                                   rtol=2e-4, atol=2e-4, err_msg=f"{op.scop.name} at {sizes}")
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(kernel.scop, v.region, hi=24 if target == "c" else 12,
                                   limit=3):
            check_kernel(kernel, sizes, variant=index)


@pytest.mark.parametrize("op", [ph.sequence_mean, ph.sequence_mean_weighted],
                         ids=lambda op: op.scop.name)
def test_a_sum_without_reuse_streams_its_rows(op: pd.Operator) -> None:
    """``Y[b, d] += X[b, l, d]`` (times ``w[l]``): every read moves along both the rows and
    the lanes a register tile would have, or along neither, so no variant is tiled for
    registers or cache; the row loop over ``d`` runs innermost, vectorized."""
    kernel = pd.compile(op)
    assert "pd_acc" not in kernel.source
    assert not any(v.name in ("full", "tiled") for v in kernel.variants)
    assert "#pragma omp simd\n" in kernel.source


def test_a_local_sum_starts_before_its_loop() -> None:
    """isl runs a row's three passes in one band member (``d``, ``D + d``, ``2D + d``) with
    the local scalars' first values at its first value, where the first pass's other
    statement runs too; ``schedule.auto.distribute_low_dims`` takes each that may go in
    front of the band (``mean = 0``, ``var = 0``, not ``mean = mean / D``), so each pass's
    sum is a SIMD reduction, not a loop that sets ``mean`` at its first iteration."""
    source = pd.compile(ph.layernorm_residual).source
    for name in ("mean", "var"):
        assert source.count(f"#pragma omp simd reduction(+:{name})") == 2  # both variants
    assert "pd_c1 == 0" not in source
