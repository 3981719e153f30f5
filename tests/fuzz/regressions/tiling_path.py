"""Fuzz regression tiling_path: error.

compile: isl.Error: call to isl_schedule_node_child failed: node has no children, raised from
polydyn/schedule/auto.py (node_at, called by apply_tiling for one variant): the tiling plan's
path, computed on the base schedule, does not exist in the variant's schedule tree.

Found by `python -m tests.fuzz --seed 2` (fz200041), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import i64, out

K, N = pd.sym("K N")


@pd.operator
def tiling_path(B: out(i64[N + 2]), K: pd.index):
    for i in range(K):
        for j in range(2, N + 1, 3):
            B[j + 1] = B[j]
        B[N] = B[1]
    for i in range(N):
        B[i + 2] = 1


MAX_TILE = 8
POINTS = [{"K": 3, "N": 9}]
STATUS = "error"
