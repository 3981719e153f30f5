"""32-bit index arithmetic on OpenCL: an operator whose data holds no 64-bit integers builds
its program twice, with ``int64_t`` (the index type) as 32 or 64 bits; calls whose arrays and
sizes stay under ``INDEX32_LIMIT`` run the 32-bit build, on both host paths, with results
identical to the 64-bit build's."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import i64, out
from polydyn.runtime.opencl import INDEX32_LIMIT, opencl_available

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

N = pd.sym("N")


@pd.operator(assume="N >= 1")
def offsets(X: i64[N], Y: out(i64[N])):
    for i in range(N):
        Y[i] = X[i] + 4294967296


def _wide(k: pd.Kernel) -> pd.Kernel:
    """The same kernel forced onto its 64-bit build."""
    k._index32 = False
    return k


@pytest.mark.parametrize("host", ["c", "python"])
@pytest.mark.parametrize("name, shapes", [
    ("matmul", [(17, 33), (33, 65)]),
    ("softmax", [(7, 130)]),
    ("conv2d", [(2, 3, 17, 19), (4, 3, 3, 3)]),
])
def test_the_32_bit_build_runs_and_agrees_with_the_64_bit_one(name, shapes, host) -> None:
    import pyopencl.array as cla

    op, _ = load(name)
    k = pd.compile(op, target="opencl", ocl_host=host)
    assert "#ifdef PD_INDEX32" in k.source
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    dev = [cla.to_device(k.queue, x) for x in inputs]
    narrow = k(*dev)
    narrow = [r.get() for r in narrow] if isinstance(narrow, tuple) else [narrow.get()]
    assert any(key[1] for key in k._cl_kernels)  # the 32-bit build ran
    wide = _wide(pd.compile(op, target="opencl", ocl_host=host))(*dev)
    wide = [r.get() for r in wide] if isinstance(wide, tuple) else [wide.get()]
    for a, b in zip(narrow, wide, strict=True):
        np.testing.assert_array_equal(a, b)
    ref = op.reference(*inputs)
    np.testing.assert_allclose(narrow[0], ref if not isinstance(ref, tuple) else ref[0],
                               rtol=2e-4, atol=2e-4)


def test_sizes_at_the_limit_take_the_64_bit_build() -> None:
    k = pd.compile(load("bias_relu")[0], target="opencl")
    assert k.narrow_ok([(3, 5), (5,)], [3, 5])
    assert not k.narrow_ok([(1, INDEX32_LIMIT)], [1, INDEX32_LIMIT])
    assert not k.narrow_ok([(2, INDEX32_LIMIT // 2)], [2, INDEX32_LIMIT // 2])
    assert not k.narrow_ok([(1, 1)], [INDEX32_LIMIT])


def test_64_bit_integer_data_has_no_32_bit_build() -> None:
    k = pd.compile(offsets, target="opencl")
    assert "PD_INDEX32" not in k.source and not k.narrow_ok([(4,)], [4])
    x = np.arange(5, dtype=np.int64)
    np.testing.assert_array_equal(k(x), x + 4294967296)


def test_only_register_tiles_take_the_32_bit_build() -> None:
    """A narrow call runs the register-tiled kernels from the 32-bit build and every other
    kernel (lane kernels, one point per work-item) from the 64-bit one; an operator with no
    register tiles builds no 32-bit program."""
    mm = pd.compile(load("matmul")[0], target="opencl")
    narrow, wide = mm._program(mm.context, True), mm._program(mm.context, False)
    tiled = [info.index32 for info in mm._kernels]
    assert any(tiled) and not all(tiled)
    for n, w, t in zip(narrow, wide, tiled, strict=True):
        assert (n is not w) == t
    sm = pd.compile(load("softmax")[0], target="opencl")
    assert not any(info.index32 for info in sm._kernels)
    assert sm._program(sm.context, True) is sm._program(sm.context, False)
