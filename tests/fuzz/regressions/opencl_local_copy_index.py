"""Fuzz regression opencl_local_copy_index: mismatch, OpenCL target, automatic schedule.

B got 0.0 where the reference has C[1, j, 1]. The read of C is promoted to local memory, a
box of extents (1, n, 1); the copy loop decomposed its linear index `pd_e` into
`pd_e0 = pd_e; pd_e1 = pd_e; pd_e2 = pd_e` past a dimension of extent 1, so only the first
element of the box was loaded and the others were read from uninitialized local memory (0.0
in a fresh process, stale data from an earlier kernel otherwise: fz800050 of seed 8 failed
only after other kernels ran in the same worker; fz900049 of seed 9 and fz20100067 of seed
201 are more instances). The dimensions after one of extent 1 now get index 0.

Found by `python -m tests.fuzz --seed 8` (fz800041), shrunk by tests/fuzz/shrink.py.
"""

import polydyn as pd
from polydyn import f32, inout, out

N, K = pd.sym("N K")


@pd.operator
def opencl_local_copy_index(B: out(f32[N + 1, K + 1]), C: inout(f32[K + 1, N, 4])):
    for j in range(1, N - 1):
        for k in range(K):
            B[j - 1, k + 1] = C[1, j, 1]


MAX_TILE = 4
POINTS = [{"N": 6, "K": 4}]
STATUS = "mismatch"
TARGET = "opencl"
