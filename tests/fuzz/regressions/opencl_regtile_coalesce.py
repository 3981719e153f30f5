"""Fuzz regression opencl_regtile_coalesce: error, OpenCL target, automatic schedule.

isl's AST build of a register-tiled kernel failed inside its coalescing ("original tableau
does not correspond to original basic map", isl_coalesce.c), on the schedule map of the
kernel's layout as it came with redundant constraints; fz914100196 of the same seed failed
the same way. Catching the error is no way round: isl was left in a state in which a later
build segfaulted.

Fixed: the schedule map is read back from its text, then its equalities detected, before
the build (the same relation in a fresh internal form), which builds. Read back alone, or
with its redundant constraints removed, it made isl fail on unknown divs elsewhere
(test_epilogue's read_after); detecting equalities on the map as it came changed conv2d's
loops. fz3100021 (seed 31) failed the same way.

Found by `python -m tests.fuzz --seed 9141 --targets opencl` (fz914100151), not shrunk.
"""

# ruff: noqa: B007, E501  (generated code: unused loop variables, long lines)
import polydyn as pd
from polydyn import f32, i64, inout

M = pd.sym("M")
BACK2 = -2


@pd.operator(assume="M >= 1")
def opencl_regtile_coalesce(A: inout(i64[M + 3, M + 3, 2]), B: f32[M, (M + 2) // 2], C: f32[M + 1]):
    for i in range(1, M + 1, 2):
        for j in range(M - 3, 0, BACK2):
            s0 = 1.0
            for k in range(i + 1, M):
                s0 -= pd.exp(C[j])
                A[i + 2, j + 1, i % 2] -= max(-99, min(99, (j - A[i, j + 1, 0])))
            A[j + 1, i + 1, 1] -= max(-99, min(99, ((A[i, i + 2, 1] if C[0] >= 0.0 else j) + 2)))
            if j >= 1:
                for k in range(max(2, i - 1), min(M + 1, i + 3)):
                    if k == i:
                        s1 = ((i - A[j, i + 1, 0]) + (A[k, j, j % 2] + i))
                        s1 += max(-99, min(99, (A[j + 1, i + 1, 0] if C[i // 2] >= 0.0 else (A[k // 2, k + 1, 1] * 2))))
                        A[k, k - 1, 0] = max(-9999, min(9999, ((-1 if C[j] < 0.5 else (A[i, i, 0] - A[k + 1, i + 1, 0])) + s1)))


MAX_TILE = 8
POINTS = [{"M": 1}, {"M": 5}, {"M": 12}]
STATUS = "error"
TARGET = "opencl"
