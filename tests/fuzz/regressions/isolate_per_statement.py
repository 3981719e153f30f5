"""Fuzz regression isolate_per_statement: mismatch.

Three instances of the second statement of the first nest (A[j, i] += ...) never ran in the
tiled variants: the band is skewed (S0 -> [i, j], S1 -> [j, 3i - j]) and the full tiles
given to isl's `isolate` option were the tiles where *some* statement had an instance at
every point. isl generates the isolated tiles without the partial statement's remaining
instances, so they were lost. Full tiles are now those where every statement of the band
fills the tile (schedule/transforms.full_tiles).

Found by `python -m tests.fuzz --seed 109` (fz10900344).
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import f32, f64, i32, i64, inout, out, temp  # noqa: F401

L = pd.sym("L")


@pd.operator(assume="L >= 1")
def isolate_per_statement(A: out(i32[L + 2, L + 2]), B: inout(f32[L + 2, L + 2])):
    for i in range(L):
        for j in range(L):
            A[j, L] = max(-9999, min(9999, (A[i, j // 2] - j)))
            A[j, i] += max(-99, min(99, (j - (A[j, j] + i))))
    for i, j in pd.grid(L, L):
        for k in range(3):
            B[i + 2, L - i] -= (pd.log(1.0 + abs(A[j, j + 1] if 1 > 0 else pd.f32(i)))
                                - (pd.f32(k) - (B[0, i] + B[i, i])))
        for k in range(3):
            s0 = ((A[j // 2, i + 1] + A[i + 1, i]) if (j + 1) % 3 == 0
                  else (A[j, i + 1] + A[j + 1, j]))
            s0 += max(-99, min(99, ((A[j + 2, L + 1 - i] % 2) * 2)))
            A[i, i + 1] = max(-9999, min(9999, s0))


MAX_TILE = 4
POINTS = [{"L": 5}, {"L": 6}, {"L": 9}]
STATUS = "mismatch"
