"""A local scalar's value inlined into the updates of the same body that read it
(scop/inline.py): where the rule holds, the statement goes and the interpreter computes the
same outputs; where it does not (a read after the body, in a nested loop, or by a plain
store; a value whose array is written between; a call read twice), the Scop is kept."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.scop.exprs import Scalar
from polydyn.scop.inline import inline_reduction_values
from polydyn.testing import check_everywhere, interpreted_outputs
from tests.targets import TARGETS

N, M, K = pd.sym("N M K")


@pd.operator()
def squared_difference(A: f32[N, K], B: f32[M, K], D: out(f32[N, M])):
    for i, j in pd.grid(N, M):
        s = 0.0
        for k in range(K):
            t = A[i, k] - B[j, k]
            s += t * t
        D[i, j] = s


@pd.operator()
def two_values_and_a_max(A: f32[N, K], Y: out(f32[N])):
    """Two scalars, one read by a max written out (``m = max(m, u)``), the other twice by a
    sum: both inlined, the first once the second is."""
    for i in range(N):
        m = -pd.inf
        p = 0.0
        for k in range(K):
            u = A[i, k] * 2.0
            v = u + 1.0
            m = max(m, u)
            p += v * v
        Y[i] = m + p


@pd.operator()
def read_after_the_body(A: f32[N, K], Y: out(f32[N])):
    for i in range(N):
        s = 0.0
        t = 0.0
        for k in range(K):
            t = A[i, k] * 3.0
            s += t
        Y[i] = s + t


@pd.operator(assume="K >= 1")
def read_in_a_nested_loop(A: f32[N, K], Y: out(f32[N, K])):
    """A row's value used inside the next loop: inlining would compute it at every step."""
    for i in range(N):
        r = A[i, 0] * 2.0
        for k in range(K):
            Y[i, k] = 0.0
            Y[i, k] += A[i, k] * r


@pd.operator()
def read_by_a_store(A: f32[N, K], Y: out(f32[N, K])):
    for i, k in pd.grid(N, K):
        t = A[i, k] + 1.0
        Y[i, k] = t * t


@pd.operator(assume="K >= 1")
def written_between(A: f32[N, K], T: out(f32[N]), Y: out(f32[N])):
    """The value reads T[i], which the statement between overwrites."""
    for i in range(N):
        s = 0.0
        t = T[i] + A[i, 0]
        T[i] = 5.0
        s += t
        Y[i] = s


@pd.operator()
def a_call_read_twice(A: f32[N, K], Y: out(f32[N])):
    for i in range(N):
        s = 0.0
        for k in range(K):
            e = pd.exp(A[i, k])
            s += e * e
        Y[i] = s


INLINED = {squared_difference: {"t"}, two_values_and_a_max: {"u", "v"}}
KEPT = [read_after_the_body, read_in_a_nested_loop, read_by_a_store, written_between,
        a_call_read_twice]
SHAPES = [(0, 2, 3), (1, 1, 1), (3, 5, 0), (7, 17, 33), (13, 6, 16)]  # the syms in order


def _scalars(scop) -> set[str]:
    return {e.name for s in scop.statements for e in (s.target, *s.value.walk())
            if isinstance(e, Scalar)}


@pytest.mark.parametrize("op", list(INLINED), ids=lambda op: op.scop.name)
def test_value_goes_into_its_readers(op: pd.Operator) -> None:
    scop, notes = inline_reduction_values(op.scop)
    gone = INLINED[op]
    assert len(notes) == len(gone) and {n.split(":")[0] for n in notes} == gone
    assert not _scalars(scop) & gone
    assert not {a.name for a in scop.arrays} & gone
    assert len(scop.statements) == len(op.scop.statements) - len(gone)
    for s in scop.statements:  # names and source lines kept
        assert s.loc == op.scop.statement(s.name).loc
    for values in ((0, 0, 0), (1, 1, 1), (2, 3, 5), (7, 2, 11)):
        sizes = dict(zip(op.scop.syms, values, strict=False))
        want, got = (interpreted_outputs(op, s, sizes, {"out": np.nan})
                     for s in (op.scop, scop))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("op", KEPT, ids=lambda op: op.scop.name)
def test_value_that_does_not_fit_stays(op: pd.Operator) -> None:
    scop, notes = inline_reduction_values(op.scop)
    assert notes == () and scop is op.scop


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", [*INLINED, *KEPT], ids=lambda op: op.scop.name)
def test_compiled_against_reference(op: pd.Operator, target: str) -> None:
    kernel = pd.compile(op, target=target)
    check_everywhere(kernel, SHAPES, hi=40 if target == "c" else 20)


def test_loop_recipes_keep_the_statements() -> None:
    """A loop recipe names the statements as written: nothing is inlined under one."""
    kernel = pd.compile(squared_difference, variants=[("N >= 0", pd.Schedule().parallel("i"))])
    assert not any(n.startswith("t: its value") for n in kernel.notes)
    check_everywhere(kernel, SHAPES, hi=12)
