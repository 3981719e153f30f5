"""Fuzz regression opencl_window_chain: mismatch, OpenCL target, automatic schedule.

Copies over the window `range(max(0, N - 4), N)` whose iterations read elements that other
iterations write (C[1, i] is read as C[i, i + 2] at i = 1) come out wrong at N=11 (C[1, 6])
and N=9. The kernel maps `i` to work-items, with the window's iterations split into
host-side cases (`pd_h0`, `pd_h1`) and guards like `pd_o0 + pd_l0 + 4 >= N`; which instance
goes wrong is not diagnosed yet. The C target passes.

Fixed by the change for opencl_host_loop_stride.py (kernels under host loops were built
assuming that every host value has instances); which guard went missing was not traced.

Found by `python -m tests.fuzz --seed 201` (fz20100246), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import f32, inout

N = pd.sym("N")


@pd.operator
def opencl_window_chain(C: inout(f32[N + 2, N + 2])):
    for i in range(max(0, N - 4), N):
        for j in range(2):
            C[1, i] = C[i, i + 2]
            C[i + 1, i + 1] = C[i + 1, i]


MAX_TILE = 8
POINTS = [{"N": 11}]
STATUS = "mismatch"
TARGET = "opencl"
