"""Fuzz regression scalar_split_grid: mismatch (wrong code).

`B[L]` is 0 instead of 1 (e.g. L = 0, M = 8, N = 6): `s0 = 1` runs for all j in a
`#pragma omp simd private(s0)` loop, and `B[L] = s0` (for j = M - 1) runs in a later loop
nest, reading the undefined private copy's leftover. See scalar_split_simd.py.

Found by `python -m tests.fuzz --seed 100` (fz10000162), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import i32, inout

M, N, L = pd.sym("M N L")


@pd.operator
def scalar_split_grid(B: inout(i32[L + 2]), M: pd.index, N: pd.index):
    for i in range(2):
        for j in range(M):
            s0 = 1
            for k, p in pd.grid(N, M):
                if j == M - 1:
                    B[L] = s0


MAX_TILE = 4
POINTS = [{"L": 0, "M": 8, "N": 6}, {"L": 1, "M": 3, "N": 2}]
STATUS = "mismatch"
