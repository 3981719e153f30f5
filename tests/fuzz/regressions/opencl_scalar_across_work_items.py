"""Fuzz regression opencl_scalar_across_work_items: mismatch, OpenCL target, automatic schedule.

B[0, 0] gets a value that is neither B[1, 0] nor the reference's. isl skews the nest
(S0 `s0 = B[i + 1, 0]` at time 4i + 2j + k, S1 `B[i, 0] = s0` at 1 + 3i + 2j + k) and the
mapping spreads one iteration's two statements over different work-items, while the local
scalar `s0` is a private variable of each work-item: S1 stores an `s0` that its work-item
never assigned. (The C target had the same kind of bug with loops; fixed there by the
local-scalar live ranges, regression local_live_range_across_loops.py.) fz20100030 of seed
201 is another instance; in fz20100174 and fz20100198 the scalar is assigned in one host
iteration (one kernel launch) and read in a later one; fz800024 of seed 8 (hidden behind the
promotion error of opencl_promotion_max_val.py until that was fixed), fz900045 and fz900164
of seed 9 are more instances.

Fixed: a local scalar whose value flows between two launches or two work-items of one
kernel (the kernel's placement of the two instances differs) is spilled to global memory,
expanded over its scope.

Found by `python -m tests.fuzz --seed 201` (fz20100063), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import f32, inout

K, N = pd.sym("K N")


@pd.operator
def opencl_scalar_across_work_items(B: inout(f32[K + 3, N + 2])):
    for i in range(2):
        for j in range(2):
            for k in range(2):
                s0 = B[i + 1, 0]
                B[i, 0] = s0


MAX_TILE = 8
POINTS = [{"K": 8, "N": 0}]
STATUS = "mismatch"
TARGET = "opencl"
