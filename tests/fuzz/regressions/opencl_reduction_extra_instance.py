"""Fuzz regression opencl_reduction_extra_instance: mismatch, OpenCL target, automatic schedule.

`A[i, i + 1, k] -= max(..., 1.0)` summed over `j` ends one step too far: -9.0 where the
reference has -8.0 at N=8, one update too many. The `j` loop becomes the work-item dimension
while `i` and a skewed `i + 2j + k` stay on the host; the statement is generated twice (a
main part and a `k = 0` remainder guarded by `2 * j == pd_h1`), and presumably some
instance runs in both (not diagnosed further). The C target passes.

Fixed by the change for opencl_host_loop_stride.py (kernels under host loops were built
assuming that every host value has instances); which guard went missing was not traced.

Found by `python -m tests.fuzz --seed 201` (fz20100224), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def opencl_reduction_extra_instance(A: out(f32[N + 2, N + 2, N + 2])):
    for i in range(2):
        for j, k in pd.grid(N, N):
            if k != i:
                A[i, i + 1, k] -= max(A[k // 2, 1, k + 1], 1.0)


MAX_TILE = 8
POINTS = [{"N": 8}]
STATUS = "mismatch"
TARGET = "opencl"
