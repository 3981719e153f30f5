"""T steps of the 5-point Jacobi stencil on the interior of A (PolyBench jacobi-2d)."""

import polydyn as pd
from polydyn import f32, inout, temp

N = pd.sym("N")


@pd.operator(assume="N >= 3")
def jacobi2d(A: inout(f32[N, N]), T: pd.index):
    B = temp(f32[N, N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = B[i, j]


def numpy_impl(A, *, T):
    """Return a new array: A after T steps (the operator itself returns None and updates A)."""
    a = A.copy()
    for _ in range(T):
        a[1:-1, 1:-1] = 0.2 * (
            a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1]
        )
    return a
