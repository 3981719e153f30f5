"""Fuzz regression minmax_mixed_dtype: mismatch (in the reference interpreter).

`max(A[i], B[i])` with A f32 and B f64 has type f64 (the C code computes it, and the exp
after it, in double), but polydyn/scop/interp.py emits `_max(a, b)` without the cast to the
result dtype that every other binary operator gets: when A wins, the reference evaluates
pd.exp in float32 and the f64 output differs by ~6e-8 (tolerance ~3e-16). For A = [0.3],
B = [-1.0]: reference 1.34985876, kernel 1.34985882 (= exp(0.3f) in double).

Found by `python -m tests.fuzz --seed 1` (fz100022, fz100038); written by hand.
"""

import polydyn as pd
from polydyn import f32, f64, out

N = pd.sym("N")


@pd.operator
def minmax_mixed_dtype(A: f32[N], B: f64[N], C: out(f64[N])):
    for i in range(N):
        C[i] = pd.exp(max(A[i], B[i] - 1.0))


MAX_TILE = 8
POINTS = [{"N": 9}, {"N": 17}]
STATUS = "mismatch"
