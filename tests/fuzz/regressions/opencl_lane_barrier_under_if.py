"""Fuzz regression opencl_lane_barrier_under_if: crash, OpenCL target, automatic schedule.

The `N = 1` variant runs whole as one group of 1024 lanes; isl's AST puts its loops under `if
(L >= 4)`, so the barriers after the lanes' loops stood under that condition. The condition
is the same for every work-item (a size), which OpenCL allows, but PoCL runs such barriers
wrongly: the call corrupted the heap ("corrupted size vs. prev_size", a failed mutex
assertion) at N = 1, K = 2, L = 4.

Fixed: a kernel body with an if outside its loops is not dealt out to lanes
(`lanes._conditional`); the variant runs its one-work-item kernels instead.

Found by `python -m tests.fuzz --seed 9131 --targets opencl` (fz913100028), not shrunk.
"""

import polydyn as pd
from polydyn import f32, inout

N, L, K = pd.sym("N L K")


@pd.operator(assume="K >= 1 and L mod 2 = 0")
def opencl_lane_barrier_under_if(A: inout(f32[N + 3, K + 2]), B: f32[N + 3, K + 1],
                                 L: pd.index):
    for i in range(N + 2):
        for j in range(K):
            for k in range(L):
                A[i + 1, j + 2] = ((pd.f32(k) + A[i + 1, j]) / 3.0) + ((i * 0.25) / 3.0)
                A[i, j + 2] += B[i, j]
    for i in range((N + 1) // 3):
        A[i, 0] -= (A[i + 1, 0] - (K * 0.5))
        A[i, 1] += (A[i, K] - pd.f32(i))
    for i in range(L):
        A[N, K] *= pd.tanh(A[N, 0] / (2.0 + abs(A[0, 0])))
        if i >= 2:
            for j in range(K):
                A[0, j] = min((i * 0.25), (i - 2.5))


MAX_TILE = 8
POINTS = [{"N": 1, "K": 2, "L": 4}, {"N": 3, "K": 3, "L": 0}]
STATUS = "crash"
TARGET = "opencl"
