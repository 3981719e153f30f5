"""Regression reduction_reads_partial_sum: mismatch, C target (and OpenCL), automatic schedule.

Both `s1 += X[i, j]` and `s2 += s1` are reductions into local scalars, so the j loop was
taken for a loop carried only by reductions (`reduce(+:s1 +:s2)`): the C target vectorized it
with `simd reduction(+:s1) reduction(+:s2)`, the OpenCL target dealt it out to a group of
lanes, and each vector lane (work-item) added its own partial s1 into s2 instead of the
running sum (wrong from N = 17 on C, from N = 2 on OpenCL).

Fixed: a loop is carried only by reductions when no statement in it reads another
reduction's scalar (nor sets one otherwise: reduction_scalar_reset.py).

Found while checking the OpenCL lane kernels for races (a reduction's partial value crossing
lanes), written by hand.
"""

import polydyn as pd
from polydyn import f32, out

M, N = pd.sym("M N")


@pd.operator(assume="N >= 1")
def reduction_reads_partial_sum(X: f32[M, N], Y: out(f32[M])):
    for i in range(M):
        s1 = 0.0
        s2 = 0.0
        for j in range(N):
            s1 += X[i, j]
            s2 += s1
        Y[i] = s2


MAX_TILE = 8
POINTS = [{"M": 3, "N": 100}, {"M": 1, "N": 4}]
STATUS = "mismatch"
