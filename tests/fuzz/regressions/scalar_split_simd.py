"""Fuzz regression scalar_split_simd: mismatch (wrong code).

`A[0, 0, 0]` is 0.0 instead of 1.0 at N = 1 (variant N=1). The dependence analysis treats
the local scalar `s0` as private to each (i, j) iteration, so the schedule may run the
definition `s0 = 1.0` of j = 1 in one loop and its uses in a later one; the code keeps one C
variable `s0`, and the first loop is `#pragma omp simd private(s0)`: after it `s0` holds no
defined value. (Same family as private_scalar.py, with `omp simd` instead of `omp parallel
for`; fz10000162 of seed 100 is another instance.)

Found by `python -m tests.fuzz --seed 100` (fz10000076), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def scalar_split_simd(A: out(f32[N + 2, N + 2, N + 2])):
    for i in range(N):
        for j in range(2):
            A[i + 1, i, i + 1] = 1.0
            s0 = 1.0
            s0 = s0
            A[i, i, i] = s0


MAX_TILE = 4
POINTS = [{"N": 1}]
STATUS = "mismatch"
