"""Regression reduction_scalar_reset: mismatch, C target (and OpenCL), automatic schedule.

`s += X[i, j]` is a reduction and `s = 0.0` (at j = 5) is not, but the test for a loop
carried only by reductions looked at the reads of the other statements only: the j loop was
taken for a sum (C: `simd reduction(+:s)`; OpenCL: dealt out to a group of lanes), and the
reset at j = 5 cleared one vector lane's (work-item's) share instead of the sum so far.

Fixed: a statement in the loop that sets a reduction's scalar other than as the reduction
makes the loop sequential (see reduction_reads_partial_sum.py).

Found while checking the OpenCL lane kernels for races, written by hand.
"""

import polydyn as pd
from polydyn import f32, out

M, N = pd.sym("M N")


@pd.operator(assume="N >= 1")
def reduction_scalar_reset(X: f32[M, N], Y: out(f32[M])):
    for i in range(M):
        s = 0.0
        for j in range(N):
            s += X[i, j]
            if j == 5:
                s = 0.0
        Y[i] = s


MAX_TILE = 8
POINTS = [{"M": 3, "N": 100}, {"M": 1, "N": 6}]
STATUS = "mismatch"
