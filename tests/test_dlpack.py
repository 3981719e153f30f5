"""Arrays other than NumPy's: CPU torch tensors and DLPack-only producers are read and written
in place with no copy, allocated outputs come back as the first argument's kind, and bad calls
are refused before anything is written (SPEC section 2)."""

import subprocess
import sys

import numpy as np
import pytest

import polydyn as pd
from kernels import load

torch = pytest.importorskip("torch")


class DLPackOnly:
    """A producer with only the DLPack protocol: no buffer protocol, no ``__array__``."""

    def __init__(self, x, device=None):
        self._x = x
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device or self._x.__dlpack_device__()


class LegacyDLPack:
    """A producer of the unversioned protocol only (``__dlpack__(stream=None)``)."""

    def __init__(self, x):
        self._x = x

    def __dlpack__(self, stream=None):
        return self._x.__dlpack__()

    def __dlpack_device__(self):
        return self._x.__dlpack_device__()


@pytest.fixture(scope="module")
def matmul() -> pd.Kernel:
    return pd.compile(load("matmul")[0])


def _inputs():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(9, 5, generator=gen), torch.randn(5, 7, generator=gen)


def test_import_polydyn_does_not_import_torch() -> None:
    code = "import polydyn, sys; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tensors_in_tensors_out(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    C = matmul(A, B)
    assert isinstance(C, torch.Tensor) and C.dtype == torch.float32
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(load("matmul")[1](A, B), A @ B, rtol=1e-5, atol=1e-5)


def test_numpy_in_numpy_out(matmul: pd.Kernel) -> None:
    A, B = (x.numpy() for x in _inputs())
    assert isinstance(matmul(A, B), np.ndarray)


def test_output_buffers_and_strided_views_written_in_place(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    buf = torch.full((9, 7), float("nan"))
    assert matmul(A, B, C=buf) is buf
    torch.testing.assert_close(buf, A @ B, rtol=1e-5, atol=1e-5)
    big = torch.full((9, 14), float("nan"))
    view = big[:, ::2]
    assert matmul(A.t().contiguous().t(), B, C=view) is view  # a transposed input too
    torch.testing.assert_close(big[:, ::2], A @ B, rtol=1e-5, atol=1e-5)
    assert torch.isnan(big[:, 1::2]).all()  # the view's gaps untouched


def test_inout_tensor_updated_in_place() -> None:
    k = pd.compile(load("jacobi2d")[0])
    A = torch.randn(6, 6)
    want = load("jacobi2d")[1](A.numpy().copy(), T=3)
    ptr = A.data_ptr()
    assert k(A, T=3) is None
    assert A.data_ptr() == ptr
    np.testing.assert_allclose(A.numpy(), want, rtol=1e-5, atol=1e-6)


def test_dlpack_only_producer(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    C = matmul(DLPackOnly(A), DLPackOnly(B.numpy()))
    assert isinstance(C, np.ndarray)  # no torch argument to take the kind from
    np.testing.assert_allclose(C, (A @ B).numpy(), rtol=1e-5, atol=1e-5)
    out = torch.zeros(9, 7)
    matmul(DLPackOnly(A), DLPackOnly(B), C=DLPackOnly(out))
    torch.testing.assert_close(out, A @ B, rtol=1e-5, atol=1e-5)


def test_unversioned_dlpack_producer_written_in_place(matmul: pd.Kernel) -> None:
    """NumPy marks every unversioned capsule read-only; outputs still land in its memory."""
    A, B = _inputs()
    big = torch.zeros(9, 14)
    matmul(LegacyDLPack(A), LegacyDLPack(B), C=LegacyDLPack(big[:, ::2]))
    torch.testing.assert_close(big[:, ::2], A @ B, rtol=1e-5, atol=1e-5)
    assert (big[:, 1::2] == 0).all()


def test_read_only_buffer_refused(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    frozen = np.zeros((9, 7), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(pd.ShapeError, match="output 'C' is read-only"):
        matmul(A, B, C=DLPackOnly(frozen))  # the versioned protocol says so


def test_requires_grad_is_read_as_data(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    C = matmul(A.clone().requires_grad_(), B)
    assert not C.requires_grad
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case,match", [
    ("dtype", r"'A'.*float32.*float64"),
    ("shape", r"'B', dimension 0: expected K = 5"),
    ("rank", r"'A': expected 2 dimension"),
    ("device", r"'A': expected a CPU tensor.*meta"),
    ("dlpack_device", r"'B': expected an array in CPU memory.*CUDA"),
    ("output", r"output 'C', dimension 1: expected M = 7"),
])
def test_refusals_write_nothing(matmul: pd.Kernel, case: str, match: str) -> None:
    A, B = _inputs()
    out = torch.full((9, 7), -1.0)
    args = {"dtype": (A.double(), B), "shape": (A, B[:4]), "rank": (A[0], B),
            "device": (A.to("meta"), B), "dlpack_device": (A, DLPackOnly(B, (2, 0))),
            "output": (A, B)}[case]
    kwargs = {"C": torch.zeros(9, 6) if case == "output" else out}
    with pytest.raises(pd.ShapeError, match=match):
        matmul(*args, **kwargs)
    assert (out == -1).all()


def test_tensor_fast_path(matmul: pd.Kernel) -> None:
    """Contiguous CPU tensors take the generated fast path as NumPy views; anything it declines
    (another dtype, grad, a view) goes to the checked path before anything is written."""
    A, B = _inputs()
    C = matmul._tensor_fast((A, B), {})
    assert isinstance(C, torch.Tensor)
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-5)
    buf = torch.zeros(9, 7)
    assert matmul._tensor_fast((A, B), {"C": buf}) is buf
    torch.testing.assert_close(buf, A @ B, rtol=1e-5, atol=1e-5)
    for args in [(A.double(), B), (A.clone().requires_grad_(), B), (A[:, ::2], B[::2])]:
        assert matmul._tensor_fast(args, {}) is NotImplemented


@pytest.mark.opencl
def test_opencl_kernel_takes_tensors() -> None:
    from polydyn.runtime.opencl import opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform (install PoCL)")
    k = pd.compile(load("bias_relu")[0], target="opencl")
    X, b = torch.randn(5, 7), torch.randn(7)
    Y = k(X, b)
    assert isinstance(Y, torch.Tensor)
    torch.testing.assert_close(Y, (X + b).relu())
    big = torch.zeros(5, 14)
    k(X, b, Y=big[:, ::2])
    torch.testing.assert_close(big[:, ::2], (X + b).relu())
