"""Fuzz regression opencl_lane_statement_race: mismatch, OpenCL target, automatic schedule.

The rows run as a lane kernel (a work-group of lanes per value of i). Outside the j loop,
`s = Y[i, 0] * 2.0` assigns a local scalar, so every lane runs it; `Y[i, 0] = X[i, 0]`
does not, so lane 0 runs it, with a barrier after it but none before: lane 0 overwrote
Y[i, 0] before the other lanes had read it (on PoCL, which runs a group's work-items one
after another between barriers, every lane but 0 read the new value; on a GPU it depends on
timing). Their `s` was wrong, and with it Z[i, j] for every j those lanes ran.

Fixed: a statement that lane 0 runs stands between two barriers.
"""

import polydyn as pd
from polydyn import f32, inout, out

M, N = pd.sym("M N")


@pd.operator(assume="N >= 1")
def opencl_lane_statement_race(X: f32[M, N], Y: inout(f32[M, N]), Z: out(f32[M, N])):
    for i in range(M):
        s = Y[i, 0] * 2.0
        Y[i, 0] = X[i, 0]
        for j in range(N):
            Z[i, j] = Y[i, j] * s


MAX_TILE = 4
POINTS = [{"M": 4, "N": 3}, {"M": 2, "N": 300}]
STATUS = "mismatch"
TARGET = "opencl"
