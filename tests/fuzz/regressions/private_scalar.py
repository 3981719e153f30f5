"""Fuzz regression private_scalar: mismatch (wrong code).

`B` differs from the reference by ~1e9 (garbage) for every K >= 2, through the dispatcher
and variant 0 alike. The schedule assigns `s0` for iteration j in one outer iteration and
reads it (`B[1] += ... + s0`) in the next; the second band is emitted as
`#pragma omp parallel for ... private(s0)`, so the read sees the uninitialized private copy
(the `if(K >= 32768)` clause does not help: `private` applies with one thread too). A local
scalar whose value is live into a parallel loop must not be `private` (or the schedule must
keep its definition and uses in one iteration).

Found by `python -m tests.fuzz --seed 2` (fz200199), shrunk by tests/fuzz/shrink.py, then by
hand. Masked (no OpenMP pragma is emitted for this loop any more) by the emitter changes of
commit 87ca511 and the working tree after it; the schedule still marks the band parallel
(coincident) although `s0` carries a value across its iterations.
"""

import polydyn as pd
from polydyn import f32, i32, inout

K = pd.sym("K")


@pd.operator(assume="K >= 1")
def private_scalar(A: inout(i32[K + 2, 2, K + 2]), B: inout(f32[2])):
    for j in range(K):
        A[j + 1, 0, j] = 1
        s0 = A[j, j % 2, K + 1 - j]
        A[j, 0, j] = 1
        B[1] += (A[K, 0, K - j] if 1 > 0 else A[j // 2, j % 2, K - j]) + s0


MAX_TILE = 4
POINTS = [{"K": 3}, {"K": 7}]
STATUS = "mismatch"
