"""Fuzz regression opencl_promotion_compile_time: timeout, OpenCL target, automatic schedule.

The OpenCL compile ran over 300 s (C: under 1 s): the local-memory promotion bounded the
extent of A's box in the syms through the simple hull of a range of 331 basic sets (the
footprint of A per work-group: 8 basic maps, its first and last elements piecewise over up to
10 pieces, the extent over 13).

Fixed: an array whose footprint is no single convex piece, or whose box's extent has more
than 4 pieces, is not promoted (promotion is an optimization): 1.6 s. A `timeout` regression
runs in a worker process with a time limit (tests/test_fuzz.py), which catches the next one.

Found by a differential fuzzer with empty arrays (fz3200072, the operator as generated).
"""

import polydyn as pd
from polydyn import f32, inout, temp

M, L = pd.sym("M L")


@pd.operator(assume="L >= 2")
def opencl_promotion_compile_time(A: inout(f32[M + 1, L + 3, L + 3]),
                                  B: f32[M + 1, 3, M + 2], alpha: f32):
    T = temp(f32[L + 3, L + 3])
    for i in range(2, M):
        for j in range((M + 1) // 2):
            for k in range(L + 2):
                if k != i:
                    T[1, L + 1 - k] += ((A[i + 1, k, k + 1] * B[j, 2, i - 1]) /
                                        (2.0 + abs(A[j + 1, k, L + 2 - k])))
                elif i >= 1:
                    s0 = ((A[j, k, k + 1] * B[i - 2, 1, M - i]) if B[j, i % 3, i + 2] >= 0.5
                          else ((i - 2.5) * 2.0))
                    s0 = max(s0, (T[k // 2, k] if B[j + 1, 2, i - 1] >= -0.25
                                  else ((M * 0.5) - (j - 2.5))))
                    T[k, k + 1] = ((A[i, k, k] if B[i - 1, 0, i] >= -0.25 else s0) + s0)
                    s1 = (M * 0.5)
                    s1 += max(max(s0, A[i, k, k]), (A[j, L + 1 - k, k + 1] + A[i - 1, k, k]))
                else:
                    A[i, k + 1, k] -= (pd.exp(B[i, 1, i // 2]) - pd.erf(A[i // 2, k, k // 2]))


MAX_TILE = 8
POINTS = [{"M": 4, "L": 2}, {"M": 5, "L": 3}]
STATUS = "timeout"
TARGET = "opencl"
