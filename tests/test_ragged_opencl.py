"""Ragged batches on OpenCL launched together (runtime/ocl_sequences.py, codegen_ocl/
sequences.py): each kernel runs once for all the sequences that launch it at the same step of
their variants, the groups of every sequence in one launch, each with its own length; the
sequences whose variant loops on the host run on their own. Against the per-sequence reference
at skewed lengths (0, 1, primes, tile sizes +-1, one long straggler), every operator of
test_ragged, with the launches counted."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
import polydyn.runtime.ocl_sequences as sequences
from polydyn.runtime.opencl import opencl_available
from tests import test_ragged as ops

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

LENGTHS = [0, 1, 2, 3, 5, 7, 13, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 97, 0, 1, 130]


class Counted:
    """The grouped launches of the calls made while it is installed, and the sequences
    left to run on their own."""

    def __init__(self, monkeypatch):
        self.launches: list[tuple[int, int]] = []
        self.alone: list[int] = []
        real_launch, real_together = sequences._launch, sequences.launch_together

        def launch(inner, call, device, steps, twin_of):
            self.launches += [(step, len(rows)) for step, rows in steps.items()]
            return real_launch(inner, call, device, steps, twin_of)

        def together(*args):
            left = real_together(*args)
            self.alone += left
            return left

        monkeypatch.setattr(sequences, "_launch", launch)
        monkeypatch.setattr(sequences, "launch_together", together)


def _jagged(lengths, d, dtype=np.float32, seed=0):
    return ops._jagged(lengths, d, dtype, seed)


def _same(got, want, tol):
    np.testing.assert_allclose(np.asarray(got.values if isinstance(got, pd.Jagged) else got),
                               np.asarray(want.values if isinstance(want, pd.Jagged) else want),
                               rtol=tol, atol=tol)


CASES = {
    "seq_scale": (lambda: (_jagged(LENGTHS, 6), np.linspace(-1, 2, 6).astype(np.float32)),
                  1e-6),
    "seq_proj": (lambda: (_jagged(LENGTHS, 19, seed=1), np.random.default_rng(2)
                          .standard_normal((19, 33)).astype(np.float32)), 1e-4),
    "seq_scores": (lambda: (_jagged(LENGTHS, 5, seed=3), _jagged(LENGTHS, 5, seed=4)), 1e-4),
    "seq_layernorm": (lambda: (_jagged(LENGTHS, 40, np.float64, 5),
                               np.linspace(0.5, 1.5, 40)), 1e-10),
    "seq_pool": (lambda: (_jagged(LENGTHS, 9, seed=6),), 1e-5),
    "seq_trans": (lambda: (pd.Jagged(np.random.default_rng(7).standard_normal(
        4 * sum(LENGTHS)).astype(np.float32), LENGTHS), np.float32(1.5)), 1e-6),
    "seq_cumsum": (lambda: (pd.Jagged(np.random.default_rng(8).standard_normal(
        sum(LENGTHS)).astype(np.float32), LENGTHS),), 1e-4),
    "seq_causal_softmax": (lambda: (pd.Jagged(np.random.default_rng(9).standard_normal(
        sum(n * n for n in LENGTHS)).astype(np.float32), LENGTHS),), 1e-5),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sequences_share_launches(name, monkeypatch):
    """Every sequence joins the grouped launches; far fewer launches than sequences times
    kernels; the reference's results."""
    op = getattr(ops, name)
    make, tol = CASES[name]
    args = make()
    k = pd.compile(op, target="opencl")
    counted = Counted(monkeypatch)
    kw = {"D": 4} if name == "seq_trans" else {}  # its blocks are flat: D is not read
    got = k(*args, **kw)
    want = op.reference(*args, **kw)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        _same(g, w, tol)
    assert counted.alone == []
    ran = sum(rows for _, rows in counted.launches)  # sequence-launches done
    assert ran >= len([n for n in LENGTHS if n]) and len(counted.launches) < ran


def test_host_loops_run_alone_and_agree(monkeypatch):
    """seq_prefix's ``D = 1`` variant runs its loops over time and rows on the host: its
    sequences run one by one, and the results agree all the same (an inout, updated in
    place)."""
    k = pd.compile(ops.seq_prefix, target="opencl")
    assert k.select(L=5, D=1, T=2).name == "D=1"
    counted = Counted(monkeypatch)
    x = _jagged(LENGTHS, 1, seed=11)
    want = pd.Jagged(x.values.copy(), x.lengths)
    ops.seq_prefix.reference(want, T=2)  # in place, as the kernel
    k(x, T=2)
    _same(x, want, 1e-4)
    assert counted.alone == [b for b, n in enumerate(LENGTHS) if n >= 2]  # work to do
    assert not counted.launches


def test_one_launch_per_kernel_for_equal_lengths(monkeypatch):
    """64 sequences of one length: each kernel of their variant launches once, with all 64
    sequences' groups."""
    k = pd.compile(ops.seq_proj, target="opencl")
    counted = Counted(monkeypatch)
    x = _jagged([37] * 64, 12, seed=12)
    w = np.random.default_rng(13).standard_normal((12, 20)).astype(np.float32)
    y = k(x, w)
    np.testing.assert_allclose(y.values, x.values @ w, rtol=1e-4, atol=1e-4)
    assert counted.launches and all(rows == 64 for _, rows in counted.launches)
    assert len(counted.launches) == len(k.inner.mappings[
        k.inner.variants.index(k.select(L=37, D=12, O=20))].kernels)


@pytest.mark.parametrize("lengths", [[], [0], [0, 0, 0], [1], [130]])
def test_empty_and_single_batches(lengths):
    k = pd.compile(ops.seq_scale, target="opencl")
    x = _jagged(lengths, 4, seed=14)
    g = np.arange(4, dtype=np.float32)
    y = k(x, g)
    assert y.lengths.tolist() == lengths
    np.testing.assert_allclose(y.values, x.values * g)


def test_group_table_enumerates_each_sequence_grid():
    """The group table: every group of every sequence once, the innermost member along
    dimension 0, fastest."""
    table = sequences.group_table(np.array([[2, 3], [0, 5], [1, 1]]))
    assert table.tolist() == [[0, g1, g0, 0] for g0 in range(2) for g1 in range(3)] + \
        [[2, 0, 0, 0]]
    assert sequences.group_table(np.zeros((3, 0), np.int64)).tolist() == \
        [[r, 0, 0, 0] for r in range(3)]


def test_every_variant_reached_in_one_batch(monkeypatch):
    """At D = O = 256 the lengths reach every variant the dispatcher picks (``L=1``,
    ``full`` at multiples of 48, ``tiled``, ``small`` for the empty ones); all share
    launches, and the results are NumPy's."""
    k = pd.compile(ops.seq_proj, target="opencl")
    lengths = [0, 1, 2, 47, 48, 49, 96, 97, 5, 130, 1, 48]
    picked = {k.select(L=n, D=256, O=256).name for n in lengths}
    assert picked == {v.name for v in k.variants[:-1]}  # the fallback is never picked
    counted = Counted(monkeypatch)
    x = _jagged(lengths, 256, seed=15)
    w = np.random.default_rng(16).standard_normal((256, 256)).astype(np.float32)
    y = k(x, w)
    np.testing.assert_allclose(y.values, x.values @ w, rtol=1e-3, atol=1e-3)
    assert counted.alone == [] and counted.launches


@pytest.mark.parametrize("order", ["reverse", "rotate"])
def test_any_order_of_work_items(order, monkeypatch):
    """The work-items of each group in another order (POLYDYN_OCL_PERMUTE): the same
    results (a race between the work-items of a twin would show)."""
    monkeypatch.setenv("POLYDYN_OCL_PERMUTE", order)
    for name in ("seq_proj", "seq_layernorm", "seq_causal_softmax"):
        op = getattr(ops, name)
        make, tol = CASES[name]
        args = make()
        _same(pd.compile(op, target="opencl")(*args), op.reference(*args), tol)
