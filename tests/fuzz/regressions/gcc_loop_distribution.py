"""Fuzz regression gcc_loop_distribution: mismatch.

Variant N=1 at N=1, L=4 gave A[1, 0] = A[1, 2] = 1 where the reference gives 4: gcc 12.2
at -O3 -march=native (not at -O3 alone, nor at -O2) miscompiles the generated nest; the
same loops in plain C without restrict or OpenMP show it, and -fno-tree-loop-distribution
removes it, so polydyn now builds with that flag (polydyn/options.py).

Found by `python -m tests.fuzz --seed 103` (fz10300281), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007, F841  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import i64, inout

L, N = pd.sym("L N")


@pd.operator
def gcc_loop_distribution(A: inout(i64[N + 2, L + 1])):
    for i in range(N):
        for j in range(L):
            for k in range(2):
                A[i, j] = (A[i + 2, j + 1] + A[i + 1, j + 1])
                A[i, j + 1] = 1
                A[i + 1, j] = (A[i, j] if (j + 1) % 2 == 0 else A[i, L])
                if (j + 1) % 2 == 0:
                    s1 = 1.0
                    A[i // 2, j] = (1 + A[i // 2, j])


MAX_TILE = 4
POINTS = [{"N": 1, "L": 4}, {"N": 10, "L": 7}]
STATUS = "mismatch"
