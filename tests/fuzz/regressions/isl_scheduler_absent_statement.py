"""Fuzz regression isl_scheduler_absent_statement: crash, OpenCL target, automatic schedule.

The OpenCL mapping asks isl's scheduler for a schedule of each variant's region. In the
region M = 1 the statement under `else` has instances and the first loop's other iterations
vanish; the scheduler was given the region's domain but the dependences of the whole
operator, which name statement instances outside that domain, and isl's scheduler crashed
(SIGSEGV in isl_schedule_constraints_compute_schedule).

Fixed: every constraint relation is restricted to the region's domain on both sides
(schedule/auto.py: schedule_constraints), for the C target's schedule too.

Found by `python -m tests.fuzz --seed 401 --targets opencl` (fz40100231), shrunk by
tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)
import polydyn as pd
from polydyn import f32, inout, out

N, M = pd.sym("N M")


@pd.operator
def isl_scheduler_absent_statement(A: inout(f32[N + 2]), D: out(f32[M + 2, M + 2])):
    for i in range(M + 1):
        D[i, M - i] = 1.0
        for j in range(i + 1):
            for k in range(N):
                if (i + 0) % 2 == 0:
                    pass
                else:
                    A[N - 1] -= 1.0


MAX_TILE = 4
POINTS = []
STATUS = 'crash'
TARGET = 'opencl'
