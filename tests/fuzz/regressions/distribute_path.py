"""Fuzz regression distribute_path: error.

compile: isl.Error: call to isl_schedule_node_child failed: index out of bounds
(isl_list_templ.c), raised from polydyn/schedule/auto.py (node_at, called by
distribute_low_dims while building the base schedule): a path into the schedule tree that
does not exist (any more) in the tree it is applied to. Dropping the inner `for k in
range(2)` of the else branch gives the other message of the same kind, "node has no
children" (see tiling_path.py).

Found by `python -m tests.fuzz --seed 100` (fz10000098), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007, F841  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import f64, inout, temp

K, L = pd.sym("K L")


@pd.operator(assume="K >= 1")
def distribute_path(A: inout(f64[K + 2, L + 2]), B: inout(f64[K + 1])):
    T = temp(f64[L + 2])
    for i in range(L + 1):
        if i == L - 1:
            A[0, i + 1] = 1.0
            B[0] = 1.0
        else:
            for j in range(K):
                for k in range(2):
                    A[j, i] += A[j + 1, i]
        for j in range(i):
            for k in range(2):
                if j >= 2:
                    s0 = A[k, j + 1]
                else:
                    T[j] = max(B[k // 2], A[k + 1, j // 2])


MAX_TILE = 4
POINTS = [{"K": 2, "L": 5}]
STATUS = "error"
