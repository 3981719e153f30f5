"""Lane kernels on OpenCL: the width a launch picks (256 lanes, or 1024 where the rows do not
fill the device) and the combine of each reduction, in local memory and in its warp-shuffle
form (``PD_NV_SHUFFLE``; here ``POLYDYN_OCL_SHUFFLE=local`` runs it on PoCL, each shuffle
through local memory), against the reference at row lengths around a warp and both widths."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, i32, i64, out
from polydyn.runtime.opencl import opencl_available
from polydyn.testing import call_args, check_kernel, make_inputs
from tests import phrasings
from tests.test_opencl import rowstats

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

N, L = pd.sym("N L")
LENGTHS = (1, 31, 32, 33, 255, 257, 1023, 1025)


@pytest.fixture(params=["tree", "shuffle"])
def combine(request, monkeypatch) -> str:
    """Both forms of the combine: the local-memory tree, or the warp shuffles emulated."""
    if request.param == "shuffle":
        monkeypatch.setenv("POLYDYN_OCL_SHUFFLE", "local")
    else:
        monkeypatch.delenv("POLYDYN_OCL_SHUFFLE", raising=False)
    return request.param


@pd.operator(assume="L >= 1")
def centre_long(X: i64[N, L], Y: out(i64[N, L])):
    for i in range(N):
        s = X[i, 0] - X[i, 0]
        for j in range(L):
            s += X[i, j]
        for j in range(L):
            Y[i, j] = X[i, j] * 3 - s


@pd.operator(assume="L >= 1")
def rowmax_if_int(X: i32[N, L], Y: out(i32[N, L])):
    for i in range(N):
        m = X[i, 0]
        for j in range(L):
            m = X[i, j] if X[i, j] > m else m  # a max written as a conditional
        for j in range(L):
            Y[i, j] = X[i, j] - m


@pd.operator(assume="L >= 1")
def norm_and_peak(X: f32[N, L], Y: out(f32[N, L])):
    """Two reductions of one loop (a sum of squares and a max) share the buffer."""
    for i in range(N):
        q = 0.0
        p = -pd.inf
        for j in range(L):
            q += X[i, j] * X[i, j]
            p = max(p, X[i, j])
        for j in range(L):
            Y[i, j] = X[i, j] * p / (q + 1.0)


OPS = [load("softmax")[0], load("layernorm")[0], rowstats, centre_long, rowmax_if_int,
       norm_and_peak, phrasings.softmax_temps, phrasings.softmax_if,
       phrasings.layernorm_scalars, phrasings.rmsnorm_temp]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_both_widths_and_both_combines(op, combine) -> None:
    """Rows fewer than the compute units (4 here) run the 1024-lane twin, more rows 256
    lanes; either way, with either combine, the reference's results."""
    k = pd.compile(op, target="opencl")
    spec = k.mappings[-1].kernels[0]
    assert [x.lanes for x in (spec, *spec.alternatives)] == [256, 1024]
    n_sym, l_sym = k.scop.syms[:2]
    old, k.compute_units = k.compute_units, 4
    try:
        for rows, lanes in ((1, 1024), (3, 1024), (4, 256), (5, 256)):  # N = 1: 1024
            assert f"groups {rows} of {lanes} work-items" in \
                k.explain(**{n_sym: rows, l_sym: 40})
        for rows in (1, 3, 5):
            for length in LENGTHS:
                check_kernel(k, {n_sym: rows, l_sym: length}, seed=rows * 7 + length,
                             variant=len(k.variants) - 1)
    finally:
        k.compute_units = old


@pytest.mark.parametrize("op", [load("softmax")[0], rowstats], ids=lambda op: op.name)
def test_results_are_the_same_bits_run_to_run(op, combine) -> None:
    k = pd.compile(op, target="opencl")
    n_sym, l_sym = k.scop.syms[:2]
    sizes = {n_sym: 3, l_sym: 1025}
    inputs = make_inputs(k, sizes, 3)
    runs = []
    for units in (1, 10**6, 1, 10**6):  # 256 lanes, 1024, and again
        k.compute_units = units
        args, kw = call_args(k, inputs, sizes)
        got = k.run_variant(len(k.variants) - 1, *args, **kw)
        runs.append([np.asarray(g).copy() for g in (got if isinstance(got, tuple) else (got,))])
    for first, again in zip(runs[:2], runs[2:], strict=True):
        assert all(a.tobytes() == b.tobytes() for a, b in zip(first, again, strict=True))


def _combines(source: str, kernel: str) -> tuple[list[str], list[str]]:
    """The warp-shuffle and the local-memory text of ``kernel``'s combines."""
    body = source[source.index(f"void {kernel}("):]
    body = body[:body.index("\n}\n")]
    warp, tree = [], []
    for part in body.split("#ifdef PD_NV_SHUFFLE")[1:]:
        shuffle, rest = part.split("#else", 1)
        warp.append(shuffle)
        tree.append(rest.split("#endif", 1)[0])
    return warp, tree


@pytest.mark.parametrize(("kernel", "lanes"), [("softmax_v1_k0", 256),
                                               ("softmax_v1_k0_w", 1024)])
def test_a_combine_waits_at_two_barriers_or_one(kernel, lanes) -> None:
    """The local-memory combine: every lane writes, ``fan`` lanes combine ``lanes / fan``
    copies each, every lane combines the ``fan`` partials (two barriers, not one per tree
    level); the warp form: a butterfly of five shuffles and one barrier."""
    source = pd.compile(load("softmax")[0], target="opencl").source
    warp, tree = _combines(source, kernel)
    assert len(warp) == len(tree) == 2  # the max and the sum
    fan = 16 if lanes == 256 else 32
    for text in tree:
        assert text.count("barrier(") == 2 and f"if (pd_lane < {fan})" in text
        assert f"pd_red_f32[pd_lane + {lanes - fan}]" in text
        assert f"pd_red_f32[{fan - 1}]" in text and f"pd_red_f32[{fan}]" not in text
    for text in warp:
        assert text.count("barrier(") == 1 and text.count("PD_SHFL_XOR(f32") == 5
        assert f"pd_red_f32[{lanes // 32 - 1}]" in text


def test_64_bit_values_shuffle_as_two_halves() -> None:
    source = pd.compile(centre_long, target="opencl").source
    assert "PD_SHFL_XOR(i64" in source and "pd_shfl_xor_u64" in source
    assert "pd_shfl_xor_f32" not in source  # helpers only for the types shuffled
