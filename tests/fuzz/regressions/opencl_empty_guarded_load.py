"""Fuzz regression opencl_empty_guarded_load: crash, OpenCL target, automatic schedule.

At M = 2 the input A is empty (0 x 1) and its buffer is a null pointer; the load of A sits
under `a if c else b` whose condition is false there. The local-memory promotion copied the
bounding box of A's accesses into local memory before the condition was tested: a read
through the null pointer (SIGSEGV inside the enqueue on PoCL; illegal address or
CL_OUT_OF_RESOURCES on an NVIDIA GPU). With A not empty the same copy read outside A (the
box of `A[j - 2]` starts at -2), values that were never used.

Fixed: the promotion copies only the elements inside the array (the accesses intersected
with the array's bounds); a box with no such element is not copied at all.

Found by a differential fuzzer with empty arrays (12 operators of 200 crashed this way).
"""

import polydyn as pd
from polydyn import f32, out

M, N = pd.sym("M N")


@pd.operator
def opencl_empty_guarded_load(A: f32[M - 2, (M + 1) // 2], B: f32[M - 2], X: f32[N, M],
                              Y: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            Y[i, j] = X[i, j] + (A[0, 0] if M >= 3 else 1.0) + (B[j - 2] if j >= 2 else 0.5)


MAX_TILE = 4
POINTS = [{"M": 2, "N": 3}, {"M": 3, "N": 2}, {"M": 2, "N": 0}]
STATUS = "crash"
TARGET = "opencl"
