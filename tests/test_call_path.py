"""The call path: the generated CPython fast path and the checked Python path agree, and the
fast path steps aside (before writing anything) whenever the checked path must decide."""

import numpy as np
import pytest

import polydyn as pd
from kernels import load


@pytest.fixture(scope="module")
def matmul() -> pd.Kernel:
    return pd.compile(load("matmul")[0])


def _inputs(n: int = 9, m: int = 7, k: int = 5):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, k), dtype=np.float32),
            rng.standard_normal((k, m), dtype=np.float32))


def test_fast_path_is_built_and_used(matmul: pd.Kernel) -> None:
    assert matmul._fast is not None
    A, B = _inputs()
    assert matmul._fast(A, B) is not NotImplemented
    np.testing.assert_allclose(matmul(A, B), A @ B, rtol=1e-5, atol=1e-5)


def test_fast_path_with_output_buffer(matmul: pd.Kernel) -> None:
    A, B = _inputs()
    buf = np.full((9, 7), np.nan, np.float32)
    got = matmul(A, B, C=buf)
    assert got is buf
    np.testing.assert_allclose(buf, A @ B, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["view", "list", "wrong_dtype", "overlap", "outside"])
def test_fast_path_declines_and_checked_path_decides(matmul: pd.Kernel, case: str) -> None:
    A, B = _inputs()
    if case == "view":
        big = np.zeros((9, 10), np.float32)
        big[:, ::2] = A
        args = (big[:, ::2], B)
        assert matmul._fast(*args) is NotImplemented
        np.testing.assert_allclose(matmul(*args), A @ B, rtol=1e-5, atol=1e-5)
    elif case == "list":
        assert matmul._fast(A.tolist(), B) is NotImplemented
        with pytest.raises(pd.ShapeError, match="dtype"):
            matmul(A.tolist(), B)
    elif case == "wrong_dtype":
        assert matmul._fast(A.astype(np.float64), B) is NotImplemented
        with pytest.raises(pd.ShapeError, match="'A'.*float32.*float64"):
            matmul(A.astype(np.float64), B)
    elif case == "overlap":
        # an output buffer that aliases an input: the checked path copies the input first
        sq = np.eye(5, dtype=np.float32)
        A5 = np.arange(25, dtype=np.float32).reshape(5, 5)
        want = A5 @ sq
        assert matmul._fast(A5, sq, C=A5) is NotImplemented
        matmul(A5, sq, C=A5)
        np.testing.assert_allclose(A5, want)
    else:
        empty = np.zeros((0, 5), np.float32)
        assert matmul._fast(empty, B) is NotImplemented
        with pytest.raises(pd.ShapeError, match="outside the operator's assumptions"):
            matmul(empty, B)


def test_index_sym_keyword_on_fast_path() -> None:
    k = pd.compile(load("jacobi2d")[0])
    A = np.random.default_rng(1).standard_normal((6, 6)).astype(np.float32)
    want = load("jacobi2d")[1](A, T=3)
    assert k._fast(A, T=3) is None  # in place, returns None
    np.testing.assert_allclose(A, want, rtol=1e-5, atol=1e-6)
