"""Fuzz regression opencl_host_loop_stride: mismatch, OpenCL target, automatic schedule.

The update runs for every `i`, not only for the odd ones: B[0, 0] is decreased twice as often
as in the reference. The `i` loop stays on the host (the kernel takes `i = pd_h0` and has no
guard on it), and the host loop loses the stride that `(i + 1) % 2 == 0` gives it. A step-2
loop `for i in range(0, K, 2)` mapped the same way runs every `i` too (fz800058 of seed 8:
an update applied twice as often in the tiled variant). Seed 201 has more of the kind: step-2
loops (fz20100044, fz20100192, fz20100205, fz20100291, reverse: fz20100028, fz20100142),
a step-3 loop (fz20100108) and a guard `k >= i` over a host loop on `2j + k`
(fz20100252, under the empty recipe).

Fixed: a host loop now steps by its image's stride, and tells its body only what it
guarantees (the values between the least and the greatest, on that lattice), so each launch
keeps the test of its own `when`.

Found by `python -m tests.fuzz --seed 8` (fz800017), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import i32, inout

M, L = pd.sym("M L")


@pd.operator
def opencl_host_loop_stride(B: inout(i32[M + 3, L + 1])):
    for i in range(L):
        for j in range(2):
            for k in range(1, L + 1):
                if (i + 1) % 2 == 0:
                    B[0, k - 1] -= B[M, k]


MAX_TILE = 4
POINTS = [{"M": 12, "L": 7}]
STATUS = "mismatch"
TARGET = "opencl"
