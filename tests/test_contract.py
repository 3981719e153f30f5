"""Temporaries contracted to local scalars (scop/contract.py): a temporary whose every access
names one cell, written first in each iteration of the loop around its uses, becomes a local
scalar of that iteration.

Row statistics kept in temporaries (softmax, layernorm, rmsnorm, written as users write them)
are contracted; temporaries whose values cross iterations, are first read, first written
under a condition or in a loop, or are accessed at several cells keep their memory. Each
operator is compiled for C and OpenCL and checked against the reference (which runs it as
written) at sizes 0, 1, primes and around every variant's region edges; the rewritten Scop
runs on the reference interpreter to the values of the original.
"""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out, temp
from polydyn.scop.contract import contract_temporaries
from polydyn.scop.ir import Load
from polydyn.testing import check_everywhere, interpreted_outputs
from tests.targets import TARGETS

N, M, D = pd.sym("N M D")

# --------------------------------------------------------------------------------------------
# Contracted


@pd.operator(assume="N >= 1 and M >= 1")
def softmax_temps(X: f32[N, M], Y: out(f32[N, M])):
    mx = temp(f32[N])
    sm = temp(f32[N])
    for i in range(N):
        mx[i] = X[i, 0]
        for j in range(M):
            mx[i] = max(mx[i], X[i, j])
        sm[i] = 0.0
        for j in range(M):
            Y[i, j] = pd.exp(X[i, j] - mx[i])
            sm[i] += Y[i, j]
        for j in range(M):
            Y[i, j] = Y[i, j] / sm[i]


@pd.operator(assume="D >= 1")
def layernorm_temps(X: f32[N, D], g: f32[D], b: f32[D], Y: out(f32[N, D])):
    mu = temp(f32[N])
    var = temp(f32[N])
    for i in range(N):
        mu[i] = 0.0
        for d in range(D):
            mu[i] += X[i, d]
        mu[i] = mu[i] * (1.0 / D)
        var[i] = 0.0
        for d in range(D):
            var[i] += (X[i, d] - mu[i]) * (X[i, d] - mu[i])
        var[i] = var[i] / D
        for d in range(D):
            Y[i, d] = (X[i, d] - mu[i]) / pd.sqrt(var[i] + 1e-5) * g[d] + b[d]


@pd.operator(assume="D >= 1")
def rmsnorm_2d_temp(X: f32[N, D], g: f32[D], Y: out(f32[N, D])):
    """The temporary has a column of 1: its cell is ``ss[i, 0]``."""
    ss = temp(f32[N, 1])
    for i in range(N):
        ss[i, 0] = 0.0
        for d in range(D):
            ss[i, 0] += X[i, d] * X[i, d]
        for d in range(D):
            Y[i, d] = X[i, d] * g[d] / pd.sqrt(ss[i, 0] / D + 1e-6)


@pd.operator()
def time_steps(X: f32[N], Y: pd.inout(f32[N]), T: pd.index):
    """A scratch cell rewritten at the start of every time step, read by the step's loop."""
    acc = temp(f32[1])
    for t in range(T):  # noqa: B007
        acc[0] = 0.0
        for i in range(N):
            acc[0] += X[i] * Y[i]
        for i in range(N):
            Y[i] = Y[i] * 0.5 + acc[0] * 0.001


CONTRACTED = {softmax_temps: {"mx", "sm"}, layernorm_temps: {"mu", "var"},
              rmsnorm_2d_temp: {"ss"}, time_steps: {"acc"}}

# --------------------------------------------------------------------------------------------
# Kept in memory


@pd.operator(assume="N >= 1")
def prefix(X: f32[N], Y: out(f32[N])):
    """The values cross iterations: T[i - 1]."""
    run = temp(f32[N])
    run[0] = X[0]
    for i in range(1, N):
        run[i] = run[i - 1] + X[i]
    for i in range(N):
        Y[i] = run[i]


@pd.operator(assume="M >= 1")
def read_first(X: f32[N, M], Y: out(f32[N, M])):
    """The cell is read before it is written in the iteration (a temporary starts at 0)."""
    s = temp(f32[N])
    for i in range(N):
        for j in range(M):
            s[i] += X[i, j]
        for j in range(M):
            Y[i, j] = X[i, j] - s[i]


@pd.operator(assume="M >= 1")
def guarded_first(X: f32[N, M], Y: out(f32[N, M])):
    """The first write runs only under a condition."""
    s = temp(f32[N])
    for i in range(N):
        if i >= 2:
            s[i] = 1.0
        for j in range(M):
            Y[i, j] = X[i, j] * s[i]


@pd.operator(assume="M >= 1")
def first_in_loop(X: f32[N, M], Y: out(f32[N, M])):
    """The first write is inside a loop that may not run."""
    s = temp(f32[N])
    for i in range(N):
        for j in range(M):
            s[i] = X[i, j]
        for j in range(M):
            Y[i, j] = X[i, j] + s[i]


@pd.operator()
def read_later(X: f32[N, M], Y: out(f32[N])):
    """Two nests: the cells written by the first are read by the second."""
    s = temp(f32[N])
    for i in range(N):
        s[i] = 0.0
        for j in range(M):
            s[i] += X[i, j]
    for i in range(N):
        Y[i] = s[i] * 2.0


KEPT = [prefix, read_first, guarded_first, first_in_loop, read_later]


def _sizes(op: pd.Operator, values: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(op.scop.syms, values, strict=True))


@pytest.mark.parametrize("op", list(CONTRACTED), ids=lambda op: op.scop.name)
def test_temporaries_become_scalars(op: pd.Operator) -> None:
    scop, notes = contract_temporaries(op.scop)
    names = CONTRACTED[op]
    assert {n.split(":")[0] for n in notes} == names, notes
    for a in scop.arrays:
        if a.name in names:
            assert a.kind == "local" and a.shape == ()
    for s in scop.statements:
        assert not any(isinstance(e, Load) and e.array in names
                       for e in (s.target, *s.value.walk()))


@pytest.mark.parametrize("op", KEPT, ids=lambda op: op.scop.name)
def test_temporaries_that_do_not_fit_stay(op: pd.Operator) -> None:
    scop, notes = contract_temporaries(op.scop)
    assert notes == () and scop is op.scop


@pytest.mark.parametrize("op", list(CONTRACTED), ids=lambda op: op.scop.name)
def test_rewritten_scop_computes_the_same_values(op: pd.Operator) -> None:
    """The rewritten Scop on the reference interpreter, temporaries starting as NaN."""
    rewritten, _ = contract_temporaries(op.scop)
    for values in ((1, 1, 1), (2, 3, 1), (3, 5, 2), (7, 4, 3)):
        sizes = _sizes(op, values[:len(op.scop.syms)])
        want, got = (interpreted_outputs(op, scop, sizes, {"temp": np.nan, "out": 0.0})
                     for scop in (op.scop, rewritten))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6)


SHAPES = [(0, 1, 1), (1, 1, 1), (1, 7, 3), (3, 1, 2), (7, 13, 5), (17, 31, 4), (2, 67, 3),
          (33, 33, 1)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [*CONTRACTED, *KEPT], ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    contracted = {n.split(":")[0] for n in kernel.notes if "temporary" in n}
    # read_later's two nests fuse through s first (scop/fuse.py), which makes it contract
    assert contracted == {**CONTRACTED, read_later: {"s"}}.get(op, set()), kernel.notes
    check_everywhere(kernel, SHAPES, hi=40 if target == "c" else 20)
