"""The OpenCL target (issue 5) on whatever OpenCL platform is installed (PoCL here).

Every bundled kernel against the reference interpreter at small shapes (1, primes, around 16
and 32), every variant inside its region, pyopencl arrays that stay on the device, the same
ShapeErrors as the C target, build failures as CompileError with the log, the launch plan,
and the mapping's visible decisions (grids, local memory, host loops). Skipped as a whole when
no OpenCL platform exists.
"""

from __future__ import annotations

import json
import uuid
import zlib

import numpy as np
import pytest

import polydyn as pd
from kernels import ALL, load
from polydyn import f32, f64, i32, out
from polydyn.runtime.opencl import build_program, opencl_available
from polydyn.testing import check_kernel, make_inputs

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

# Sym order per kernel (as test_kernels.py) and small shapes: 1, primes, 15/16/17, 31/32/33.
SYMS = {
    "matmul": "N M K", "batched_matmul": "B N M K", "bias_relu": "N M", "softmax": "N L",
    "layernorm": "N D", "conv2d": "B C F H W KH KW", "maxpool": "B C H W",
    "transpose": "N M", "jacobi2d": "N T",
}
SHAPES = {
    "matmul": [(1, 1, 1), (7, 13, 31), (16, 16, 16), (17, 15, 33), (33, 32, 31), (1, 65, 17),
               (31, 1, 16)],
    "batched_matmul": [(1, 1, 1, 1), (0, 3, 4, 5), (2, 7, 13, 5), (3, 16, 17, 15),
                       (1, 33, 31, 17)],
    "bias_relu": [(1, 1), (0, 5), (7, 13), (16, 17), (31, 33), (1, 257)],
    "softmax": [(1, 1), (0, 4), (7, 13), (16, 17), (33, 31), (1, 37)],
    "layernorm": [(1, 1), (1, 2), (7, 13), (16, 17), (31, 33)],
    "conv2d": [(1, 1, 1, 1, 1, 1, 1), (1, 2, 3, 7, 13, 3, 3), (2, 1, 2, 16, 17, 1, 1),
               (1, 3, 2, 15, 16, 5, 3), (1, 1, 1, 33, 31, 3, 3)],
    "maxpool": [(1, 1, 2, 2), (1, 1, 1, 5), (1, 2, 7, 13), (2, 3, 16, 17), (1, 1, 33, 31)],
    "transpose": [(1, 1), (1, 7), (13, 1), (3, 0), (16, 17), (31, 33), (32, 32)],
    "jacobi2d": [(3, 1), (3, 0), (7, 5), (16, 3), (17, 4), (33, 2)],
}

_COMPILED: dict[str, pd.Kernel] = {}


def compiled(name: str) -> pd.Kernel:
    if name not in _COMPILED:
        _COMPILED[name] = pd.compile(load(name)[0], target="opencl")
    return _COMPILED[name]


def sizes_of(name: str, shape: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(SYMS[name].split(), shape, strict=True))


CASES = [pytest.param(name, sizes_of(name, shape), id=f"{name}-{'-'.join(map(str, shape))}")
         for name in ALL for shape in SHAPES[name]]


@pytest.mark.parametrize(("name", "sizes"), CASES)
def test_kernel_matches_reference(name: str, sizes: dict[str, int]) -> None:
    seed = zlib.crc32(repr(sorted(sizes.items())).encode())
    assert np.isfinite(check_kernel(compiled(name), sizes, seed=seed))


def _smallest_points(region, syms: tuple[str, ...]) -> list[dict[str, int]]:
    """The lexicographically smallest sizes in ``region``, and the smallest with every sym
    past those (partial tiles, when the region allows them)."""
    import islpy as isl

    n = len(syms)
    points = []
    box = region.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
    for _ in range(2):
        if box.is_empty():
            break
        pt = box.lexmin().sample_point()
        values = [pt.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n)]
        points.append(dict(zip(syms, values, strict=True)))
        cons = " and ".join(f"x{k} > {v}" for k, v in enumerate(values))
        box = box.intersect(isl.Set(f"{{ [{', '.join(f'x{k}' for k in range(n))}] : {cons} }}"))
    return points


def _numpy_results(name: str, k: pd.Kernel, sizes: dict[str, int], variant: int):
    """(kernel results, numpy_impl results) on the same random inputs."""
    op, numpy_impl = load(name)
    inputs = make_inputs(op, sizes, seed=variant)
    pos = [inputs[a.name] for a in k.scop.arg_arrays if a.kind in ("in", "inout", "value")]
    kw = {s: sizes[s] for s in k.scop.index_syms}
    want = numpy_impl(*[x.copy() for x in pos], **kw)
    args = [x.copy() for x in pos]
    got = k.run_variant(variant, *args, **kw)
    if got is None:  # inout operator (jacobi2d): the updated argument
        got = args[0]
    return got, want


@pytest.mark.parametrize("name", list(ALL))
def test_every_variant_inside_its_region(name: str) -> None:
    """run_variant at the smallest sizes of each region (the full-tile regions included),
    against numpy_impl (the reference interpreter is too slow for some of these sizes)."""
    k = compiled(name)
    for index, v in enumerate(k.variants):
        points = _smallest_points(v.region, k.scop.syms)
        assert points, f"{name}: region {v.region} has no point"
        for sizes in points:
            if np.prod([max(s, 1) for s in sizes.values()], dtype=float) > 4e7:
                continue  # keep the test quick on a CPU device
            got, want = _numpy_results(name, k, sizes, index)
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-4,
                                       err_msg=f"{name} variant {v.name} at {sizes}")


# --- the mapping, as seen in the kernel's text and plan ---


def test_matmul_mapping_grid_and_local_memory() -> None:
    k = compiled("matmul")
    generic = k.mappings[[v.name for v in k.variants].index("generic")]
    (spec,) = generic.kernels
    # register tiles (test_opencl_regtiles.py): 4x4 points per work-item of a 16x16 group
    assert spec.grid is not None and spec.grid.tiles == (64, 64)
    assert spec.local_size == (16, 16)
    assert sorted((c.array, c.sizes) for c in spec.local) == [("A", (64, 16)), ("B", (16, 64))]
    src = k.source
    assert "__kernel" in src and "get_group_id(1)" in src and "get_local_id(0)" in src
    # two buffers of 64 x 16 (double-buffered), aligned for float4 copies
    assert "__local float pd_loc_A[2048] __attribute__((aligned(16)))" in src
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in src and "pd_db ^= 1" in src
    assert "reqd_work_group_size(16, 16, 1)" in src
    assert "cl_khr_fp64" not in src  # f32 only: no double anywhere
    assert "#pragma omp" not in src


def test_full_tiles_need_no_guards() -> None:
    """The region ``N mod 32 = 0 ...`` implies every 16x16 work-group is full: no bound test
    on the work-item ids in that variant's kernel."""
    k = compiled("transpose")
    names = [v.name for v in k.variants]
    full = k.source.split("variant full:")[1].split("---- variant")[0]
    generic = k.source.split("variant generic:")[1]
    assert "full" in names
    assert "if (" not in full
    assert "if (" in generic


def test_conv2d_local_memory_sized_at_launch_with_fallback() -> None:
    """conv2d's tiles of X and Wt grow with KH and KW: their __local buffers are kernel
    arguments sized on the host from the isl footprint; past the limit the plain twin runs.
    (With register tiles, the default, conv2d reads them in place: they are turned off.)"""
    k = pd.compile(load("conv2d")[0], target="opencl", ocl_regtile="off")
    spec = k.mappings[-1].kernels[0]
    assert sorted(c.array for c in spec.local) == ["Wt", "X"]
    assert all(c.dynamic for c in spec.local) and spec.fallback is not None
    assert "__local float *restrict pd_loc_X" in k.source
    sizes = {"B": 2, "C": 3, "F": 3, "H": 11, "W": 19, "KH": 3, "KW": 2}
    assert "bytes of local memory" in k.explain(**sizes)
    check_kernel(k, sizes, seed=1)
    limit = k.local_limit
    k.local_limit = 0  # every launch takes the fallback
    try:
        assert "bytes of local memory" not in k.explain(**sizes)
        assert "_plain" in k.explain(**sizes)
        check_kernel(k, sizes, seed=2)
    finally:
        k.local_limit = limit


def test_jacobi_time_loop_on_the_host() -> None:
    """jacobi2d: the time loop is a host loop around two 2-D kernels (isl's schedule with
    outer coincidence); the stencil reads its tile of A from local memory (halo 18x18)."""
    k = compiled("jacobi2d")
    plan = k.launch_plan()
    launches = plan["variants"][-1]["launches"]
    assert len(launches) == 1 and launches[0]["for"] == "pd_h0"
    body = launches[0]["body"]
    assert [b["grid"]["work_dims"] for b in body] == [2, 2]
    assert body[0]["local_memory"][0]["box"] == ["18", "18"]
    assert "T" in launches[0]["to"]


def test_launch_plan_is_json_and_names_every_kernel() -> None:
    for name in ("matmul", "softmax", "conv2d"):
        k = compiled(name)
        plan = json.loads(json.dumps(k.launch_plan()))
        assert len(plan["variants"]) == len(k.variants)
        text = json.dumps(plan)
        for m in k.mappings:
            for spec in m.kernels:
                assert spec.name in text and f"void {spec.name}(" in k.source


def test_explain_shows_variant_and_launches() -> None:
    k = compiled("matmul")
    old, k.compute_units = k.compute_units, 2  # a 64x64 block: fewer groups than that
    try:
        text = k.explain(N=40, M=33, K=17)
        assert "runs" in text and "launch matmul_v" in text and "groups 2x2 of 16x16" in text
        assert "register tiles 2x2 per work-item, 32x32x16 blocks" in text
        k.compute_units = 1
        text = k.explain(N=40, M=33, K=17)
    finally:
        k.compute_units = old
    assert "groups 1x1 of 16x16" in text
    assert "register tiles 4x4 per work-item, 64x64x16 blocks" in text
    assert k.select(N=40, M=33, K=17).name in text
    with pytest.raises(pd.ShapeError, match="missing"):
        k.select(N=3)


# --- calling conventions ---


def _matmul_inputs(n: int, m: int, kk: int, seed: int = 3):
    inputs = make_inputs(load("matmul")[0], {"N": n, "M": m, "K": kk}, seed=seed)
    return inputs["A"], inputs["B"]


def test_device_arrays_stay_on_the_device() -> None:
    import pyopencl.array as cla

    k = compiled("matmul")
    A, B = _matmul_inputs(17, 33, 15)
    want = A @ B
    dA, dB = cla.to_device(k.queue, A), cla.to_device(k.queue, B)
    C = k(dA, dB)
    assert isinstance(C, cla.Array) and C.shape == (17, 33)
    np.testing.assert_allclose(C.get(), want, rtol=1e-5, atol=1e-5)
    buf = cla.empty(k.queue, (17, 33), np.float32)
    assert k(dA, dB, C=buf) is buf
    np.testing.assert_allclose(buf.get(), want, rtol=1e-5, atol=1e-5)
    mixed = k(A, dB)  # one device argument: the result stays on the device
    assert isinstance(mixed, cla.Array)
    np.testing.assert_allclose(mixed.get(), want, rtol=1e-5, atol=1e-5)
    host_out = np.full((17, 33), np.nan, np.float32)
    k(dA, dB, C=host_out)  # a NumPy output buffer is filled on the host
    np.testing.assert_allclose(host_out, want, rtol=1e-5, atol=1e-5)


def test_device_array_slices_and_errors() -> None:
    import pyopencl.array as cla

    k = compiled("matmul")
    A, B = _matmul_inputs(5, 7, 3)
    big = cla.to_device(k.queue, np.vstack([np.zeros((2, 3), np.float32), A]))
    got = k(big[2:], B)  # an offset view of a device buffer
    np.testing.assert_allclose(got.get(), A @ B, rtol=1e-5, atol=1e-5)
    out_big = cla.zeros(k.queue, (6, 7), np.float32)
    k(A, B, C=out_big[1:])
    np.testing.assert_allclose(out_big.get()[1:], A @ B, rtol=1e-5, atol=1e-5)
    assert (out_big.get()[0] == 0).all()
    with pytest.raises(pd.ShapeError, match="dtype float32, got float64"):
        k(cla.to_device(k.queue, A.astype(np.float64)), B)
    with pytest.raises(pd.ShapeError, match="dimension 0"):
        k(A, cla.to_device(k.queue, np.zeros((4, 7), np.float32)))


def test_device_aliasing_and_layout() -> None:
    import pyopencl.array as cla

    k = compiled("transpose")
    X = np.arange(25, dtype=np.float32).reshape(5, 5)
    dX = cla.to_device(k.queue, X)
    assert k.params(dX) == {"N": 5, "M": 5}
    k(dX, B=dX)  # the output is the input's buffer: the input is read from a copy
    np.testing.assert_array_equal(dX.get(), X.T)
    with pytest.raises(pd.ShapeError, match="C-contiguous"):
        k(cla.to_device(k.queue, np.ascontiguousarray(X[:, :4].T)).T)


def test_device_inout_is_updated_in_place() -> None:
    import pyopencl.array as cla

    k = compiled("jacobi2d")
    A = make_inputs(k.op, {"N": 19, "T": 4}, seed=5)["A"]
    dA = cla.to_device(k.queue, A)
    assert k(dA, T=4) is None
    np.testing.assert_allclose(dA.get(), load("jacobi2d")[1](A, T=4), rtol=1e-5, atol=1e-5)


def test_strided_numpy_views_and_given_buffers() -> None:
    k = compiled("matmul")
    A, B = _matmul_inputs(15, 33, 17)
    want = A @ B
    B_big = np.zeros((17, 2 * 33 + 3), np.float32)
    B_view = B_big[:, 68:3:-2]
    B_view[...] = B
    C_big = np.full((33, 15), 7.0, np.float32)
    returned = k(np.asfortranarray(A), B_view, C=C_big.T)
    np.testing.assert_allclose(C_big.T, want, rtol=1e-5, atol=1e-5)
    assert returned is None or np.shares_memory(returned, C_big)


def test_same_shape_errors_as_the_c_target() -> None:
    k_ocl = compiled("softmax")
    k_c = pd.compile(load("softmax")[0], target="c")
    X = make_inputs(k_ocl.op, {"N": 4, "L": 5}, seed=1)["X"]
    bad_calls = [
        ((X.astype(np.float64),), {}),
        ((X[None],), {}),
        ((), {}),
        ((X,), {"Y": np.zeros((4, 4), np.float32)}),
        ((X,), {"Y": np.broadcast_to(np.float32(0), (4, 5))}),  # read-only output
        ((X[:, :0],), {}),  # L = 0 is outside assume
        ((X,), {"Q": 1}),
        ((X, X), {}),
    ]
    for args, kw in bad_calls:
        with pytest.raises(pd.ShapeError) as c_err:
            k_c(*args, **kw)
        with pytest.raises(pd.ShapeError) as ocl_err:
            k_ocl(*args, **kw)
        assert str(ocl_err.value) == str(c_err.value)
    assert k_ocl.params(X) == k_c.params(X) == {"N": 4, "L": 5}
    assert k_ocl.target == "opencl" and k_ocl.name == "softmax"
    assert k_ocl.op is load("softmax")[0]


def test_default_device_is_a_gpu_when_one_is_installed() -> None:
    """PoCL's CPU device and a GPU's platform (in either order): the GPU."""
    import pyopencl as cl

    from polydyn.runtime.opencl import default_device

    class Device:
        def __init__(self, name, kind):
            self.name, self.type = name, kind

    class Platform:
        def __init__(self, *devices, broken=False):
            self.devices, self.broken = list(devices), broken

        def get_devices(self):
            if self.broken:
                raise cl.Error("CL_DEVICE_NOT_FOUND")
            return self.devices

    cpu = Device("pocl", cl.device_type.CPU)
    gpu = Device("gpu", cl.device_type.GPU)
    for order in ([Platform(cpu), Platform(gpu)], [Platform(gpu), Platform(cpu)]):
        assert default_device(cl, order) is gpu
    assert default_device(cl, [Platform(broken=True), Platform(cpu)]) is cpu
    assert default_device(cl, [Platform(), Platform(broken=True)]) is None


def test_device_argument_accepts_context_and_queue() -> None:
    import pyopencl as cl

    base = compiled("bias_relu")
    X = np.random.default_rng(0).standard_normal((5, 9)).astype(np.float32)
    b = np.ones(9, np.float32)
    for device in (base.context, cl.CommandQueue(base.context), base.device):
        k = pd.compile(load("bias_relu")[0], target="opencl", device=device)
        np.testing.assert_allclose(k(X, b), np.maximum(X + b, 0))
    with pytest.raises(pd.UnsupportedError, match="device="):
        pd.compile(load("bias_relu")[0], target="opencl", device="gpu0")


# --- dtypes and math ---

N = pd.sym("N")


@pd.operator()
def math64(X: f64[N], Y: out(f64[N])):
    for i in range(N):
        Y[i] = pd.exp(X[i]) + pd.tanh(X[i]) * pd.erf(X[i]) - pd.sqrt(abs(X[i])) + \
            pd.log(abs(X[i]) + 1.0) + max(X[i], 0.25) + X[i] // 0.5


@pd.operator()
def math32(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = pd.exp(X[i]) + pd.tanh(X[i]) * pd.erf(X[i]) - pd.sqrt(abs(X[i])) + \
            pd.log(abs(X[i]) + 1.0) + min(X[i], 0.25)


@pd.operator()
def intops(X: i32[N], Y: out(i32[N])):
    for i in range(N):
        Y[i] = X[i] // 3 + X[i] % 5 + max(X[i], 2) * abs(X[i])


@pd.operator()
def double_rows(X: f32[N], Y: out(f32[N])):  # f32 only, whatever its name says
    for i in range(N):
        Y[i] = X[i] * 2.0


@pd.operator()
def mixed(X: f32[N], Y: out(f32[N])):  # f32 arrays, f64 arithmetic in a local scalar
    for i in range(N):
        t = f64(X[i]) * 3.0
        Y[i] = f32(t)


@pytest.mark.parametrize("op", [math64, math32, intops, double_rows, mixed],
                         ids=lambda op: op.name)
def test_dtypes_and_math_functions(op) -> None:
    """fp64 is enabled where the operator computes in f64, not where a name says double."""
    k = pd.compile(op, target="opencl")
    for n in (1, 17, 300):
        check_kernel(k, {"N": n}, seed=n)
    assert ("cl_khr_fp64" in k.source) == (op in (math64, mixed))


L = pd.sym("L")


@pd.operator(assume="L >= 1")
def rowscale(X: f32[N, L], Y: out(f32[N, L])):
    for i in range(N):
        s = 0.0
        for j in range(L):
            s += X[i, j] * X[i, j]
        inv = 1.0 / pd.sqrt(s + 1.0)
        for j in range(L):
            Y[i, j] = X[i, j] * inv


@pd.operator()
def center(X: f32[N], Y: out(f32[N])):
    total = 0.0
    for i in range(N):
        total += X[i]
    for i in range(N):
        Y[i] = X[i] - total


@pd.operator()
def decay(X: f32[N], Y: out(f32[N])):
    total = 0.0
    for i in range(N):
        total = total * 0.5 + X[i]  # a recurrence, no reduction: one work-item runs it
    for i in range(N):
        Y[i] = X[i] - total


K = pd.sym("K")


@pd.operator(assume="K >= 1")
def weighted(X: f32[N], w: f32[K], Y: out(f32[N])):
    total = 0.0
    for k in range(K):
        total += w[k]  # a sum over K: the grid over N must not shrink to one group for it
    for i in range(N):
        Y[i] = X[i] * total


@pytest.mark.parametrize("op", [rowscale, center, decay, weighted], ids=lambda op: op.name)
def test_local_scalars_live_across_launches(op) -> None:
    """A scalar assigned in one kernel and read in another (``total`` of the recurrence
    before a parallel loop) is kept in global memory. A sum before it (``center``) runs with
    the parallel loop in one group of lanes instead, its scalar in the lanes."""
    k = pd.compile(op, target="opencl")
    if op is decay:  # total: one work-item, then a 1-D grid reads it
        assert "pd_s_total" in k.source and len(k.mappings[-1].kernels) == 2
    if op is center:
        assert "pd_s_total" not in k.source
        assert [(spec.grid, spec.lanes) for spec in k.mappings[-1].kernels] == [(None, 1024)]
    if op is weighted:  # one work-item sums w, then the whole grid over N
        assert [spec.grid is None for spec in k.mappings[-1].kernels] == [True, False]
    syms = k.scop.syms
    for values in ((1, 1), (1, 37), (5, 17), (33, 2), (600, 3)):
        sizes = dict(zip(syms, values[:len(syms)], strict=True))
        check_kernel(k, sizes, seed=values[-1])
        for index, v in enumerate(k.variants):
            if not v.region.intersect(k._point(sizes)).is_empty():
                check_kernel(k, sizes, seed=index, variant=index)


@pd.operator(assume="L >= 1")
def rowstats(X: f64[N, L], S: out(f64[N]), M: out(f64[N])):
    for i in range(N):
        s = 5.0  # a sum that does not start at 0: only one lane may add it
        for j in range(L):
            s += X[i, j]
        S[i] = s  # an array written outside the loops: by lane 0
        m = X[i, 0]
        for j in range(L):
            m = min(m, X[i, j] * 2.0)
        M[i] = m + S[i]  # reads what lane 0 wrote


@pd.operator(assume="L >= 1")
def rowmax_int(X: i32[N, L], Y: out(i32[N, L])):
    for i in range(N):
        m = X[i, 0]
        for j in range(L):
            m = max(m, X[i, j])
        for j in range(L):
            Y[i, j] = X[i, j] - m


@pd.operator(assume="L >= 1")
def prefix(X: f32[N, L], Y: out(f32[N, L])):
    for i in range(N):
        acc = 0.0
        for j in range(L):
            acc += X[i, j]
            Y[i, j] = acc  # the partial sums are read: the loop stays in one work-item


def _lanes(k) -> list[int]:
    return [spec.lanes for m in k.mappings for spec in m.kernels]


@pytest.mark.parametrize("op", [load("softmax")[0], load("layernorm")[0], rowscale, rowstats,
                                rowmax_int], ids=lambda op: op.name)
def test_row_reductions_run_a_group_of_lanes_per_row(op) -> None:
    """A row loop whose body is parallel loops and reductions into local scalars runs a
    work-group per row: each loop dealt out to 256 lanes, each reduction combined in local
    memory. Checked against the reference around the lane count, with 1 and several rows."""
    k = pd.compile(op, target="opencl")
    generic = k.mappings[-1]
    (spec,) = generic.kernels
    assert spec.lanes == 256 and spec.local_size == (256,) and not spec.local
    assert "pd_lane" in k.source and "pd_red_" in k.source
    n_sym, l_sym = k.scop.syms
    old, k.compute_units = k.compute_units, 1  # 7 rows fill the device: 256 lanes
    try:
        assert "groups 7 of 256 work-items" in k.explain(**{n_sym: 7, l_sym: 300})
    finally:
        k.compute_units = old
    assert generic.describe()["launches"][0]["grid"]["lanes"] == 256
    assert not k._spills[-1]  # its scalars stay in the lanes: no global buffers per call
    for rows in (1, 2, 7):
        for length in (1, 2, 255, 256, 257, 513):
            sizes = {n_sym: rows, l_sym: length}
            check_kernel(k, sizes, seed=rows * 1000 + length)
            check_kernel(k, sizes, seed=length, variant=len(k.variants) - 1)
    # N = 1: no row loop to map; the whole variant is one group of lanes, one launch
    one = k.mappings[[v.name for v in k.variants].index("N=1")] if "N=1" in \
        [v.name for v in k.variants] else None
    if one is not None:
        assert [(spec.grid, spec.lanes) for spec in one.kernels] == [(None, 1024)]
        assert "groups 1 of 1024 work-items" in k.explain(**{n_sym: 1, l_sym: 300})


def test_a_scan_in_a_row_is_not_dealt_out() -> None:
    k = pd.compile(prefix, target="opencl")
    assert not any(_lanes(k)) and "pd_lane" not in k.source
    for sizes in ({"N": 3, "L": 300}, {"N": 1, "L": 1}):
        check_kernel(k, sizes, seed=sizes["L"])


# --- the command line ---


def test_cli_writes_cl_source_and_launch_plan(tmp_path) -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-m", "polydyn", "compile", "kernels/transpose.py",
                             "--target", "opencl", "-o", str(tmp_path)], cwd=root,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "__kernel" in (tmp_path / "transpose.cl").read_text()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["target"] == "opencl"
    plan = manifest["launch_plan"]["variants"]
    assert [v["variant"] for v in plan] == [v["name"] for v in manifest["variants"]]
    assert plan[-1]["launches"][0]["grid"]["local_size"] == [16, 16]


# --- build failures ---


def test_nvidias_note_on_every_kernel_is_not_a_warning() -> None:
    """NVIDIA's compiler says "Function f is a kernel, so overriding noinline attribute" of
    every kernel (drivers since 550): such a build raises no warning; any other line does."""
    from polydyn.runtime.opencl import only_benign

    note = ("(): Warning: Function {} is a kernel, so overriding noinline attribute. The "
            "function may be inlined when called.")
    nvidia = ("From-source build succeeded, but resulted in non-empty logs:\n"
              "Build on <pyopencl.Device 'NVIDIA H100 80GB HBM3' on 'NVIDIA CUDA' at 0x1> "
              "succeeded, but said:\n\n" + note.format("k0") + "\n" + note.format("k1") + "\n")
    assert only_benign(nvidia)
    assert only_benign("Non-empty compiler output encountered. Set the environment variable "
                       "PYOPENCL_COMPILER_OUTPUT=1 to see more.\n" + note.format("k0"))
    assert not only_benign(nvidia + "<kernel>:3:5: warning: unused variable 'x'")
    assert not only_benign("Non-empty compiler output encountered.\n")  # log unknown: kept
    assert not only_benign("")
    import pyopencl as cl

    from polydyn.runtime.opencl import resolve_device

    # a real warning still reaches the caller; the source is new to this run, since a build
    # that pyopencl finds in its binary cache on disk says nothing
    with pytest.warns(cl.CompilerWarning):
        build_program(resolve_device(None).context, f"#warning polydyn-test {uuid.uuid4()}\n"
                      "__kernel void f(__global float *x) { x[0] = 1.0f; }", "f")


def test_build_failure_is_a_compile_error_with_the_log() -> None:
    k = compiled("bias_relu")
    with pytest.raises(pd.CompileError, match="OpenCL compiler failed") as err:
        build_program(k.context, "__kernel void f(__global float *x) { x[0] = nope; }",
                      "broken")
    assert "nope" in err.value.log and "nope" in str(err.value)


def test_compile_raises_compile_error_for_bad_generated_code(monkeypatch, tmp_path) -> None:
    from polydyn.codegen_ocl import pipeline

    # the patched emitter is no part of the cache key: a fresh cache, so that nothing hits
    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path))
    real = pipeline.OpenCLEmitter.module
    monkeypatch.setattr(pipeline.OpenCLEmitter, "module",
                        lambda self, *a: real(self, *a) + "\nthis is not OpenCL C;\n")
    with pytest.raises(pd.CompileError, match="bias_relu") as err:
        pd.compile(load("bias_relu")[0], target="opencl")
    assert err.value.log


def test_each_variant_holds_its_kernels(tmp_path) -> None:
    """``Variant.source`` (SPEC section 2): the variant's kernels in the program, fresh and
    from the cache."""
    for _ in range(2):
        k = pd.compile(load("transpose")[0], target="opencl", cache_dir=tmp_path)
        for v in k.variants:
            assert v.source.startswith(f"/* ---- variant {v.name}:") and "__kernel" in v.source
            assert v.source.count("/* ---- variant ") == 1 and v.source in k.source
