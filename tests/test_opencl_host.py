"""The compiled OpenCL host path (issue 32, item 4) against the Python host path.

Calls whose arrays are contiguous device arrays on one queue run the host code compiled to C
(``codegen_ocl/host_c.py``, ``runtime/ocl_launch.py``): the region test, the arguments and
the enqueues. Every bundled kernel gives bit-identical results on both paths (same kernels,
same launches) and agrees with the reference interpreter, at sizes 0, 1, odd ones and the
smallest sizes of each variant's region, with work-items in the device's order and reversed;
every other call (NumPy arguments, views, aliasing) still runs the Python host code.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import polydyn as pd
from kernels import ALL, load
from polydyn import f32, out
from polydyn.runtime.opencl import opencl_available
from polydyn.scop.interp import run_reference
from polydyn.target import GpuTarget
from polydyn.testing import make_inputs

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

SYMS = {
    "matmul": "N M K", "batched_matmul": "B N M K", "bias_relu": "N M", "softmax": "N L",
    "layernorm": "N D", "conv2d": "B C F H W KH KW", "maxpool": "B C H W",
    "transpose": "N M", "jacobi2d": "N T",
}
SHAPES = {  # 0 and 1 where the operator allows them, odd sizes around a tile
    "matmul": [(1, 1, 1), (17, 15, 33), (1, 65, 17)],
    "batched_matmul": [(1, 1, 1, 1), (0, 3, 4, 5), (2, 7, 13, 5)],
    "bias_relu": [(1, 1), (0, 5), (3, 0), (31, 33), (1, 257)],
    "softmax": [(1, 1), (0, 4), (7, 13), (1, 37)],
    "layernorm": [(1, 1), (0, 3), (7, 13)],
    "conv2d": [(1, 1, 1, 1, 1, 1, 1), (0, 1, 1, 3, 3, 1, 1), (1, 3, 2, 15, 16, 5, 3)],
    "maxpool": [(1, 1, 2, 2), (0, 1, 2, 2), (2, 3, 16, 17)],
    "transpose": [(1, 1), (3, 0), (16, 17)],
    "jacobi2d": [(3, 1), (3, 0), (17, 4)],
}
MAX_ELEMENTS = 1 << 20  # region edges larger than this are left to test_opencl.py

_COMPILED: dict[tuple[str, str, str], pd.Kernel] = {}


def compiled(name: str, host: str, permute: str = "") -> pd.Kernel:
    key = (name, host, permute)
    if key not in _COMPILED:
        _COMPILED[key] = pd.compile(load(name)[0], target="opencl", ocl_host=host,
                                    ocl_permute=permute)
    return _COMPILED[key]


def _region_edges(k: pd.Kernel) -> list[dict[str, int]]:
    """The smallest sizes inside each variant's region (full-tile regions included)."""
    import islpy as isl

    syms = k.scop.syms
    points = []
    for v in k.variants:
        box = v.region.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, len(syms))
        if box.is_empty():
            continue
        pt = box.lexmin().sample_point()
        sizes = {s: pt.get_coordinate_val(isl.dim_type.set, j).to_python()
                 for j, s in enumerate(syms)}
        if np.prod([max(x, 1) for x in sizes.values()], dtype=float) <= MAX_ELEMENTS:
            points.append(sizes)
    return points


def _run_on_device(k: pd.Kernel, inputs: dict, sizes: dict[str, int]) -> list[np.ndarray]:
    """The call on device arrays; the outputs and inouts, back on the host."""
    import pyopencl.array as cla

    binder = k._binder
    pos = [cla.to_device(k.queue, np.ascontiguousarray(inputs[n]))
           if isinstance(inputs[n], np.ndarray) else inputs[n] for n in binder.names]
    kw = {s: int(sizes[s]) for s in binder.keyword_syms}
    got = k(*pos, **kw)
    results = [] if got is None else list(got) if isinstance(got, tuple) else [got]
    results += [x for x, n in zip(pos, binder.names, strict=True)
                if k.scop.array(n).kind == "inout"]
    return [r.get() for r in results]


def _reference(k: pd.Kernel, inputs: dict, sizes: dict[str, int]) -> list[np.ndarray]:
    binder = k._binder
    pos = [np.array(inputs[n], copy=True) if isinstance(inputs[n], np.ndarray) else inputs[n]
           for n in binder.names]
    kw = {s: int(sizes[s]) for s in binder.keyword_syms}
    want = run_reference(k.scop, tuple(pos), kw)
    results = [] if want is None else list(want) if isinstance(want, tuple) else [want]
    return results + [x for x, n in zip(pos, binder.names, strict=True)
                      if k.scop.array(n).kind == "inout"]


def _compare(name: str, sizes: dict[str, int], permute: str = "",
             reference: bool = True) -> None:
    fast, slow = compiled(name, "c", permute), compiled(name, "python", permute)
    assert fast.host_path == "c" and slow.host_path == "python"
    inputs = make_inputs(fast, sizes, seed=zlib.crc32(repr(sorted(sizes.items())).encode()))
    before = fast.host_calls
    got = _run_on_device(fast, inputs, sizes)
    assert fast.host_calls == before + 1, f"{name} at {sizes}: the compiled path declined"
    same = _run_on_device(slow, inputs, sizes)
    for g, s in zip(got, same, strict=True):
        np.testing.assert_array_equal(g, s, err_msg=f"{name} at {sizes}: C vs Python host")
    if reference:
        for g, w in zip(got, _reference(fast, inputs, sizes), strict=True):
            np.testing.assert_allclose(g, np.asarray(w).reshape(g.shape), rtol=2e-4,
                                       atol=2e-4, err_msg=f"{name} at {sizes}: reference")


CASES = [pytest.param(name, dict(zip(SYMS[name].split(), shape, strict=True)),
                      id=f"{name}-{'-'.join(map(str, shape))}")
         for name in ALL for shape in SHAPES[name]]


@pytest.mark.parametrize(("name", "sizes"), CASES)
def test_compiled_host_matches_python_host_and_reference(name: str, sizes: dict) -> None:
    _compare(name, sizes)


@pytest.mark.parametrize("name", list(ALL))
def test_compiled_host_at_region_edges(name: str) -> None:
    """The smallest sizes of each variant's region: every variant's C region test and
    launches (the reference only where it runs quickly)."""
    for sizes in _region_edges(compiled(name, "c")):
        small = np.prod([max(x, 1) for x in sizes.values()], dtype=float) <= 1 << 14
        _compare(name, sizes, reference=small)


@pytest.mark.parametrize("units", [1, 16, 10**9])
@pytest.mark.parametrize(("name", "shape"), [("matmul", (129, 130, 33)),
                                             ("batched_matmul", (2, 65, 70, 17)),
                                             ("conv2d", (1, 2, 3, 20, 70, 3, 3))])
def test_both_paths_pick_the_same_alternative(name: str, shape: tuple, units: int) -> None:
    """The launch's choice among a kernel's alternatives (register tiles 4x4, 2x2, one point
    per work-item) by the device's compute units, on both host paths."""
    fast, slow = compiled(name, "c"), compiled(name, "python")
    old = fast.compute_units, slow.compute_units
    fast.compute_units = slow.compute_units = units
    try:
        _compare(name, dict(zip(SYMS[name].split(), shape, strict=True)))
    finally:
        fast.compute_units, slow.compute_units = old


def test_the_compiled_path_launches_the_chosen_alternative() -> None:
    """Every kernel handle but the one the choice must launch is replaced by a kernel that
    takes no argument (setting one fails): the call succeeds only on the right kernel."""
    import pyopencl as cl

    k = pd.compile(load("matmul")[0], target="opencl", ocl_host="c")
    sizes = {"N": 129, "M": 130, "K": 33}  # groups: 3x3 (4x4 tiles), 5x5 (2x2), 9x9 (1x1)
    inputs = make_inputs(k, sizes, seed=3)
    _run_on_device(k, inputs, sizes)
    spec = k.mappings[k._select(*(sizes[s] for s in k.scop.syms))].kernels[0]
    ids = {x.name: n for n, x in enumerate(
        y for m in k.mappings for x in m.kernels for y in x.family())}
    choices = [spec, *spec.alternatives]
    assert len(choices) == 3
    idle = cl.Kernel(cl.Program(k.context, "__kernel void pd_idle(void) {}").build(),
                     "pd_idle")
    for units, want in ((1, 0), (16, 1), (10**9, 2)):
        k.compute_units = units
        for (_, narrow), (queue, handles, _) in k._compiled._queues.items():
            built = k._program(queue.context, narrow)
            for n, x in enumerate(choices):
                handles[ids[x.name]] = built[ids[x.name]].int_ptr if n == want else \
                    idle.int_ptr
        before = k.host_calls
        _run_on_device(k, inputs, sizes)
        assert k.host_calls == before + 1, units


@pytest.mark.parametrize("name", [  # conv2d's run takes 17 s: the slow set
    pytest.param(n, marks=pytest.mark.slow) if n == "conv2d" else n for n in ALL])
def test_compiled_host_with_work_items_reversed(name: str) -> None:
    for shape in SHAPES[name][-2:]:
        _compare(name, dict(zip(SYMS[name].split(), shape, strict=True)), permute="reverse")


def test_numpy_arguments_take_the_python_host_path() -> None:
    k = compiled("bias_relu", "c")
    X = np.random.default_rng(0).uniform(-1, 1, (5, 7)).astype(np.float32)
    b = np.linspace(-1, 1, 7, dtype=np.float32)
    before = k.host_calls
    np.testing.assert_array_equal(k(X, b), np.maximum(X + b, 0))
    assert k.host_calls == before


def test_views_aliasing_and_errors_leave_the_compiled_path() -> None:
    import pyopencl.array as cla

    k = compiled("transpose", "c")
    X = np.arange(30, dtype=np.float32).reshape(5, 6)
    dX = cla.to_device(k.queue, X)
    before = k.host_calls
    big = cla.to_device(k.queue, np.vstack([np.zeros((1, 6), np.float32), X]))
    np.testing.assert_array_equal(k(big[1:]).get(), X.T)  # an offset view
    sq = cla.to_device(k.queue, X[:, :5].copy())
    k(sq, B=sq)  # the output is the input's buffer (declined in C, copied in Python)
    np.testing.assert_array_equal(sq.get(), X[:, :5].T)
    assert k.host_calls == before
    with pytest.raises(pd.ShapeError, match="dimension 0"):
        k(dX, B=cla.empty(k.queue, (5, 6), np.float32))
    with pytest.raises(pd.ShapeError, match="dtype float32, got float64"):
        k(cla.to_device(k.queue, X.astype(np.float64)))
    out_buf = cla.empty(k.queue, (6, 5), np.float32)
    assert k(dX, B=out_buf) is out_buf and k.host_calls == before + 1
    np.testing.assert_array_equal(out_buf.get(), X.T)


def test_run_variant_and_local_limit_on_the_compiled_path() -> None:
    """A forced variant runs in C after the region check; with no local memory allowed the
    C host launches conv2d's plain twins, as the Python host does."""
    import pyopencl.array as cla

    sizes = {"B": 1, "C": 2, "F": 3, "H": 9, "W": 8, "KH": 3, "KW": 2}
    fast, slow = compiled("conv2d", "c"), compiled("conv2d", "python")
    inputs = make_inputs(fast, sizes, seed=1)
    X, Wt = (cla.to_device(fast.queue, inputs[n]) for n in ("X", "Wt"))
    index = len(fast.variants) - 1
    before = fast.host_calls
    got = fast.run_variant(index, X, Wt).get()
    assert fast.host_calls == before + 1
    np.testing.assert_array_equal(got, slow.run_variant(index, X, Wt).get())
    with pytest.raises(pd.ShapeError, match="outside the region"):
        fast.run_variant(1, X, Wt)  # C >= 64 and F >= 112
    fast.local_limit = slow.local_limit = 0
    try:
        np.testing.assert_array_equal(fast(X, Wt).get(), slow(X, Wt).get())
        assert fast.host_calls == before + 2
    finally:
        fast.local_limit = slow.local_limit = fast._dc.local_limit


N, M = pd.sym("N M")


@pd.operator(assume="N >= 0 and M >= 0")
def row_sums(X: f32[N, M], S: out(f32[N])):
    for i, j in pd.grid(N, M):
        S[i] += X[i, j]


def test_outputs_read_before_written_are_zeroed_in_c() -> None:
    import pyopencl.array as cla

    k = pd.compile(row_sums, target="opencl")
    assert k.host_path == "c" and k._zero_init
    X = np.random.default_rng(2).uniform(-1, 1, (7, 5)).astype(np.float32)
    dS = cla.to_device(k.queue, np.full(7, 9.0, np.float32))
    assert k(cla.to_device(k.queue, X), S=dS) is dS and k.host_calls == 1
    np.testing.assert_allclose(dS.get(), X.sum(axis=1), rtol=1e-5, atol=1e-5)
    fresh = k(cla.to_device(k.queue, X))
    np.testing.assert_allclose(fresh.get(), X.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_an_opencl_error_in_c_names_the_call(monkeypatch) -> None:
    import pyopencl.array as cla

    k = pd.compile(row_sums, target="opencl")
    host = k._compiled
    null_kernels = (__import__("ctypes").c_void_p * 64)()  # more than the kernels
    monkeypatch.setattr(host, "_kernels_on", lambda queue, narrow: __import__("ctypes").addressof(
        null_kernels))
    X = cla.to_device(k.queue, np.ones((3, 4), np.float32))
    with pytest.raises(pd.InternalError, match="clSetKernelArg failed with OpenCL error"):
        k(X)


def test_the_host_switch(monkeypatch) -> None:
    monkeypatch.setenv("POLYDYN_OCL_HOST", "python")
    k = pd.compile(row_sums, target="opencl")
    assert k.host_path == "python" and k.host_c  # the C text is there, not used
    monkeypatch.setenv("POLYDYN_OCL_HOST", "fortran")
    with pytest.raises(pd.UnsupportedError, match="POLYDYN_OCL_HOST"):
        pd.compile(row_sums, target="opencl")


def test_generated_sources_include_the_c_host_code() -> None:
    from polydyn.pipeline import generate

    gen = generate(load("jacobi2d")[0], GpuTarget(max_group=1024))
    text = gen.sources["jacobi2d.host.c"]
    assert "static int64_t pd_select(const int64_t *pd_s)" in text
    assert "pd_floord(((pd_v_N - 2) - pd_v__o[0]), 16)" in text  # Python's // as floord
    assert "for (int64_t pd_v_pd_h0 = 0" in text  # the time loop, on the host
    assert "#include <CL/" not in text  # no OpenCL headers
