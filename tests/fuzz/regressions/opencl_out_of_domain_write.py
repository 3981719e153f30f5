"""Fuzz regression opencl_out_of_domain_write: crash, OpenCL target, automatic schedule.

In the `full` variant the second nest also runs for `i = K`: B[K, 0] comes back as 3.0 where
the reference leaves it 0.0 (at K=4, L=3), and some write lands outside the buffers: glibc
then aborts the process ("corrupted double-linked list", "free(): invalid next size"), or it
segfaults, usually in a later allocation. The test runs it in a worker process. fz20100257
of seed 201 (a copy in a 3-deep nest, small variant) and fz900020 of seed 9 (updates along a
diagonal, generic variant) corrupt the heap too, probably the same way.

Cause: PoCL's CPU compiler (3.1, LLVM 15) miscompiles `barrier` under a condition: here the
local-memory copy of T under `if (pd_c0 == 0)` in the reduction's tile loop, after which
work-items past the guard `pd_c1 <= K - 1` ran the updates (the same source is right with
-cl-opt-disable, and with the barriers moved out of the `if`). Fixed: an `if` around copies
alone is printed between barriers, and a kernel whose copies lie under other conditions is
not promoted (the plain kernel runs).

Found by `python -m tests.fuzz --seed 8` (fz800021), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import f64, out, temp

L, K = pd.sym("L K")


@pd.operator
def opencl_out_of_domain_write(B: out(f64[K + 1, 2]), L: pd.index):
    T = temp(f64[K + 2, L + 1])
    for j in range(2):
        for k in range(K):
            B[k, k % 2] = T[j, 0]
    for i in range(K):
        for k in range(L):
            B[i, 0] += 1.0


MAX_TILE = 4
POINTS = [{"K": 8, "L": 3}, {"K": 4, "L": 3}]
STATUS = "crash"
TARGET = "opencl"
