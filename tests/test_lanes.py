"""The reference interpreter's lane loops (scop/lanes.py): which loops run as whole arrays,
and that every operator gives, bit for bit, what running each loop one iteration at a time
gives (the interpreter with ``lane_loops=False``), but for NumPy's own rounding of some math
functions on whole arrays (``VECTOR_ROUNDED``)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import polydyn as pd
import tests.phrasings as ph
from kernels.matmul import matmul
from polydyn import f32, i32, out
from polydyn.scop.exprs import Call
from polydyn.scop.interp import python_source
from polydyn.testing import in_context, interpreted_outputs, tolerance, unset_values
from tests.fuzz.generator import generate
from tests.fuzz.runner import load_operator
from tests.fuzz.tree import render
from tests.test_phrasings import SIZES, _family

N, M = pd.sym("N M")
BACK = -1


def lane_vars(op: pd.Operator) -> set[str]:
    return set(re.findall(r"(\w+) = _lanes\(", python_source(op.scop)))


# NumPy's whole-array exp, log, tanh, sin and cos may round differently from their path for
# one value (SIMD kernels, by CPU): results that use them agree to the tests' tolerance
VECTOR_ROUNDED = ("exp", "log", "tanh", "sin", "cos")


def assert_same_bits(op: pd.Operator, sizes: dict[str, int], seed: int = 0) -> None:
    scop = op.scop
    start = unset_values(scop)
    one, lanes = (interpreted_outputs(op, scop, sizes, start, seed, lane_loops=flag)
                  for flag in (False, True))
    rounded = any(isinstance(e, Call) and e.fn in VECTOR_ROUNDED
                  for s in scop.statements for e in s.value.walk())
    for a, b in zip(one, lanes, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        if rounded and a.dtype.kind == "f":
            assert np.array_equal(np.isnan(a), np.isnan(b))
            finite = np.isfinite(a)
            assert np.array_equal(a[~finite], b[~finite], equal_nan=True)
            scale = float(np.max(np.abs(a[finite]), initial=0.0))
            assert np.allclose(a[finite], b[finite], rtol=0,
                               atol=tolerance(a.dtype, scale)), (op.scop.name, sizes)
        else:
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (op.scop.name, sizes)


@pd.operator(assume="M >= 1")
def row_prefix(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        Y[i, 0] = X[i, 0]
        for j in range(1, M):
            Y[i, j] = Y[i, j - 1] + X[i, j]


@pd.operator
def shifted_reads(X: f32[N], Y: out(f32[N]), Z: out(f32[N])):
    """Reads past either end of X in the branch a lane does not take; ``and``."""
    for i in range(N):
        Y[i] = X[i - 1] if i > 0 else X[i] * 2.0
        Z[i] = ((1.0 if X[i + 1] > 0.0 else -1.0) if i + 1 < N else 0.5) + \
            (2.0 if i > 1 and X[i] > 0.0 else 3.0)


@pd.operator
def guarded_rows(X: f32[N], Y: out(f32[N]), Z: out(f32[N])):
    """Guards on the lane variable: stores and scalars under masks, reads past X's end in
    lanes that fail the guard."""
    for i in range(N):
        t = 1.0
        if i % 2 == 0:
            Y[i] = X[i] * 3.0
            t = X[i]
        else:
            Y[i] = X[i] - 1.0
        if i + 1 < N:
            u = X[i + 1]
            if i > 2:
                u = u * t
            Z[i] = u + t
        else:
            Z[i] = t


@pd.operator
def padded_window(X: f32[N, M], Y: out(f32[N, M])):
    """A 3-tap sum along the rows, the edges as an ``if`` inside the reduction."""
    for i, j in pd.grid(N, M):
        s = 0.0
        for k in range(3):
            if 0 <= j + k - 1 < M:
                s += X[i, j + k - 1] * (k + 1.0)
        Y[i, j] = s


@pd.operator
def reversed_ints(K: i32[N], D: i32[N], J: out(i32[N]), R: out(i32[N])):
    """Integer division and remainder by values that are often 0; a loop run backwards."""
    for i in range(N - 1, -1, BACK):
        J[i] = K[i] // D[i] + min(K[i], i) - max(D[i], 2)
        R[i] = K[i] % D[i]


@pd.operator
def clamped_window(X: f32[M], Y: out(f32[N])):
    """Subscripts with min and max, an empty X with a nonempty loop."""
    for i in range(N):
        Y[i] = X[min(i, M - 1)] + X[max(M - 1 - i, 0)] if M > 0 else 0.0


def test_reductions_run_one_step_at_a_time_over_lanes() -> None:
    """matmul's rows and columns run as lanes; its sums step through k."""
    assert lane_vars(matmul) == {"i", "j"}
    assert "for k in range(" in python_source(matmul.scop)
    assert_same_bits(matmul, {"N": 13, "M": 17, "K": 5})


def test_a_carried_dependence_keeps_its_loop() -> None:
    assert lane_vars(row_prefix) == {"i"}
    for sizes in ({"N": 0, "M": 3}, {"N": 3, "M": 1}, {"N": 5, "M": 9}):
        assert_same_bits(row_prefix, sizes)


def test_scalars_assigned_first_are_private_to_each_lane() -> None:
    """softmax_if's row loop holds m and s per lane; of its column loops only the last one,
    which reads them, runs as lanes (the first two update them)."""
    text = python_source(ph.softmax_if.scop)
    assert lane_vars(ph.softmax_if) == {"i", "j"}
    assert text.count("_lanes(") == 2 and text.count("for j in range(") == 2
    for sizes in ({"N": 1, "M": 1}, {"N": 4, "M": 7}):
        assert_same_bits(ph.softmax_if, sizes)


@pytest.mark.parametrize(("op", "lanes"), [(guarded_rows, {"i"}), (padded_window, {"i", "j"})],
                         ids=["guarded_rows", "padded_window"])
def test_guards_on_lane_variables_run_under_masks(op: pd.Operator, lanes: set[str]) -> None:
    assert lane_vars(op) == lanes
    assert "_m1 = " in python_source(op.scop)
    for n in (0, 1, 2, 3, 4, 9):
        for seed in range(2):
            assert_same_bits(op, {s: n + k for k, s in enumerate(op.scop.syms)}, seed)


@pytest.mark.parametrize("op", [shifted_reads, reversed_ints, clamped_window],
                         ids=lambda op: op.scop.name)
def test_branches_and_integer_edges_give_the_same_bits(op: pd.Operator) -> None:
    """Loads in an untaken branch (clipped into the array), ``and``, division and
    remainder by 0, min and max in subscripts, a reverse loop."""
    assert lane_vars(op) == {"i"}
    for n in (0, 1, 2, 7):
        for m in (0, 1, 5):
            sizes = {s: v for s, v in (("N", n), ("M", m)) if s in op.scop.syms}
            if in_context(op, sizes):
                for seed in range(3):
                    assert_same_bits(op, sizes, seed)


def test_phrasings_give_the_same_bits() -> None:
    for op in ph.ALL:
        for sizes in SIZES[_family(op)][:2]:
            assert_same_bits(op, sizes)


def test_generated_operators_give_the_same_bits() -> None:
    """The fuzzer's operators (carried dependences, guards, reverse loops, local scalars) at
    random sizes."""
    rng = np.random.default_rng(17)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(60):
            tree = generate(31000 + i)
            try:
                op = load_operator(render(tree), tree.name, Path(tmp))
            except pd.PolydynError:
                continue
            for _ in range(3):
                sizes = {s: int(rng.integers(0, 14)) for s in op.scop.syms}
                if in_context(op, sizes):
                    assert_same_bits(op, sizes, i)
