"""The OpenCL target under sizes that empty arrays, and under every order of work-items.

- Empty arrays (a dimension of size 0) reach the kernels as null pointers: no kernel may
  load from them, the local-memory copies included (a load under ``a if c else b`` whose
  condition is false stands for no element).
- Races: every loop mapped onto work-items or work-groups carries no dependence (checked by
  ``codegen_ocl/legality.py`` at every compile: a violation is an InternalError). PoCL runs
  a work-group's work-items one after another, which hides most races; the compile option
  ``ocl_permute`` (POLYDYN_OCL_PERMUTE) remaps the ids through a bijection so that they run
  in another order, and the results must not change. ``POLYDYN_OCL_PERMUTE=reverse pytest
  tests/test_opencl.py tests/test_fuzz.py -k "opencl or regress"`` runs the other OpenCL
  tests that way too.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import polydyn as pd
import polydyn.codegen_ocl.mapping as mapping
from kernels import ALL, load
from polydyn import f32, inout, out
from polydyn.codegen_ocl.emit import PERMUTATIONS
from polydyn.errors import InternalError, UnsupportedError
from polydyn.runtime.opencl import opencl_available
from polydyn.testing import check_kernel
from tests.fuzz.runner import Pool, check_regression, load_operator
from tests.test_opencl import SHAPES, sizes_of

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

M, N = pd.sym("M N")
ORDERS = [p for p in PERMUTATIONS if p]


# --- empty arrays ---

# A crash takes the process with it: these run in a worker process (tests/fuzz/runner.py).
EMPTY = """
import polydyn as pd
from polydyn import f32, out, temp

M, N = pd.sym("M N")


@pd.operator
def guarded(A: f32[M - 2, (M + 1) // 2], B: f32[M - 2], X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            Y[i, j] = X[i, j] + (A[0, 0] if M >= 3 else 1.0) + (B[j - 2] if j >= 2 else 0.5)


@pd.operator
def summed(A: f32[M - 2, (M + 1) // 2], X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = X[i] + 1.0
        for a in range(M - 2):
            for b in range((M + 1) // 2):
                Y[i] += A[a, b]


@pd.operator
def through_temp(A: f32[M], X: f32[N], Y: out(f32[N]), Z: out(f32[M])):
    T = temp(f32[M])
    for a in range(M):
        T[a] = A[a] * 2.0
    for a in range(M):
        Z[a] = T[a] + 1.0
    for i in range(N):
        Y[i] = X[i]
        for a in range(M):
            Y[i] += T[a]
"""


def test_empty_arrays() -> None:
    """Every variant at sizes that empty some input, output or temporary (and all of them),
    against the reference; small tiles reach every variant."""
    points = [{"M": m, "N": n} for m in (0, 1, 2, 3, 4) for n in (0, 1, 3, 300)]
    pool = Pool(jobs=1, timeout=120)
    try:
        results = pool.map([{"id": name, "name": name, "source": EMPTY, "max_tile": 4,
                             "hi": 6, "limit": 4, "points": points,
                             "units": [{"target": "opencl", "schedule": None, "region": None}]}
                            for name in ("guarded", "summed", "through_temp")])
    finally:
        pool.close()
    for res in results:
        assert res["status"] == "pass", res.get("message")


def test_local_copies_stay_inside_the_array(tmp_path) -> None:
    """The box a guarded load stands for starts outside B in the first group of 16
    (``B[j - 2]`` at j = 0): the copy into local memory starts at element 0 there, inside."""
    k = pd.compile(load_operator(EMPTY, "guarded", tmp_path), target="opencl")
    firsts = [c.describe()["first"] for m in k.mappings for spec in m.kernels
              for c in spec.local if c.array == "B"]
    assert firsts and all(" ? 0 : 16 * pd_g1 - 2" in first for (first,) in firsts), firsts


# --- races ---


@pd.operator
def first_cell(X: f32[N], Y: inout(f32[N])):
    for i in range(N):
        Y[i] = Y[0] + X[i]  # iteration 0 writes what every other one reads


@pd.operator
def running_cell(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[0] += X[i]
        Y[i] += Y[0]


@pd.operator
def rows_first_cell(X: f32[M, N], Y: inout(f32[M, N])):
    for i in range(M):
        for j in range(N):
            Y[i, j] = Y[i, 0] + X[i, j]  # carried by the inner loop


@pd.operator
def first_row(X: f32[M, N], Y: inout(f32[M, N])):
    for i in range(M):
        for j in range(N):
            Y[i, j] = Y[0, j] + X[i, j]  # carried by the outer loop


@pd.operator(assume="N >= 1")
def lane_cell(X: f32[M, N], Y: inout(f32[M, N]), Z: out(f32[M, N])):
    for i in range(M):
        s = Y[i, 0] * 2.0  # every lane reads Y[i, 0] ...
        Y[i, 0] = X[i, 0]  # ... before lane 0 overwrites it
        for j in range(N):
            Z[i, j] = Y[i, j] * s


@pd.operator(assume="N >= 1")
def lane_sum_cell(X: f32[M, N], Y: inout(f32[M, N])):
    for i in range(M):
        t = 0.0
        for j in range(N):
            t += X[i, j] * Y[i, 0]
            Y[i, j] = X[i, j]
        Y[i, 0] = t


@pd.operator(assume="N >= 1")
def lane_max_then_cell(X: f32[M, N], Y: inout(f32[M, N])):
    for i in range(M):
        t = 0.0
        for j in range(N):
            t = max(t, X[i, j])
        for j in range(N):
            Y[i, j] = Y[i, 0] * t + X[i, j]


@pd.operator(assume="N >= 1")
def lane_partial_sum(X: f32[M, N], Y: out(f32[M])):
    for i in range(M):
        s1 = 0.0
        s2 = 0.0
        for j in range(N):
            s1 += X[i, j]
            s2 += s1  # reads the running sum: not a sum the lanes may split
        Y[i] = s2


@pd.operator(assume="N >= 1")
def lane_reset(X: f32[M, N], Y: out(f32[M])):
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += X[i, j]
            if j == 5:
                s = 0.0  # not a sum the lanes may split either
        Y[i] = s


RACY = [first_cell, running_cell, rows_first_cell, first_row, lane_cell, lane_sum_cell,
        lane_max_then_cell, lane_partial_sum, lane_reset]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("op", RACY, ids=lambda op: op.name)
def test_carried_dependences_in_any_order(op, order: str) -> None:
    """Operators whose loops carry dependences through one cell give the reference's
    results whatever order the work-items and work-groups run in."""
    k = pd.compile(op, target="opencl", ocl_permute=order)
    for values in ((1, 1), (3, 5), (2, 300), (600, 2)):
        sizes = dict(zip(k.scop.syms, values[-len(k.scop.syms):], strict=True))
        check_kernel(k, sizes, seed=values[0])
        for index, v in enumerate(k.variants):
            if not v.region.intersect(k._point(sizes)).is_empty():
                check_kernel(k, sizes, seed=index, variant=index)


@pytest.mark.parametrize(("name", "order"), [
    # conv2d takes ten seconds an order: one order in CI, the others in the slow set
    pytest.param(n, o, id=f"{n}-{o}", marks=pytest.mark.slow) if n == "conv2d" and
    o != "reverse" else pytest.param(n, o, id=f"{n}-{o}")
    for o in ORDERS for n in ALL])
def test_bundled_kernels_in_any_order(name: str, order: str) -> None:
    k = pd.compile(load(name)[0], target="opencl", ocl_permute=order)
    for shape in SHAPES[name][1:4]:
        check_kernel(k, sizes_of(name, shape))


REGRESSIONS = Path(__file__).parent / "fuzz" / "regressions"
OPENCL_REGRESSIONS = sorted(p for p in REGRESSIONS.glob("*.py") if re.search(
    r"^TARGET = [\"']opencl[\"']$", p.read_text(), re.MULTILINE))


@pytest.mark.parametrize("path", OPENCL_REGRESSIONS, ids=lambda p: p.stem)
def test_opencl_regressions_in_reverse_order(path: Path, monkeypatch, request) -> None:
    """The OpenCL fuzz regressions (tests/test_fuzz.py runs them in the device's order)
    with every id reversed; a crash one in a worker process; a known bug's as test_fuzz
    runs it (it must still fail)."""
    monkeypatch.setenv("POLYDYN_OCL_PERMUTE", "reverse")  # workers inherit it
    spec = importlib.util.spec_from_file_location(f"pd_reversed_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    known = getattr(module, "KNOWN_BUG", None)
    if known:
        request.applymarker(pytest.mark.xfail(reason=known, strict=True))
    unit = {"target": "opencl", "schedule": getattr(module, "SCHEDULE", None),
            "region": getattr(module, "REGION", None)}
    kernel = check_regression(path, module, unit, crash_timeout=60)
    assert kernel is None or "get_num_groups" in kernel.source or \
        "get_group_id" not in kernel.source


def test_permutation_is_in_the_source() -> None:
    plain = pd.compile(first_row, target="opencl")
    for order in ORDERS:
        k = pd.compile(first_row, target="opencl", ocl_permute=order)
        assert k.source != plain.source and "get_num_groups" in k.source
    assert "get_local_size(0) - 1 - get_local_id(0)" in \
        pd.compile(first_row, target="opencl", ocl_permute="reverse").source
    with pytest.raises(UnsupportedError, match="POLYDYN_OCL_PERMUTE"):
        pd.compile(first_row, target="opencl", ocl_permute="sideways")


def test_a_mapped_loop_that_carries_a_dependence_is_an_internal_error(monkeypatch) -> None:
    """The compile-time check: with every loop taken for parallel (a mapping bug), the loop
    of ``first_cell`` lands on work-items, and the compile stops naming the dependence."""
    monkeypatch.setattr(mapping, "mark_kind", lambda node: "parallel")
    with pytest.raises(InternalError, match=r"first_cell.*S0\[i = 0\] -> S0\[i'\]"):
        pd.compile(first_cell, target="opencl")
