"""Fuzz regression local_live_range_across_loops: mismatch.

The schedule runs `s0 = B[...]; s0 += A[0, i]` of an instance in one iteration of the outer
(skewed) loop and `A[i + 1, i] = T[i, i] + s0` of the same instance in the next one; the
inner loop was marked parallel (coincident with s0 expanded) and got `private(s0, s1)`, so
each execution of it started with a fresh, uninitialized s0 (NaN where the reference has
inf). A loop across whose iterations or executions a local scalar's value flows is now
annotated sequential and gets no pragma (astgen._crosses).

Found by `python -m tests.fuzz --seed 104` (fz10400145).
"""



import polydyn as pd
from polydyn import f32, f64, i32, i64, inout, out, temp  # noqa: F401

N, K = pd.sym("N K")


@pd.operator(assume="K <= N")
def local_live_range_across_loops(A: inout(f64[K + 1, K]), B: out(i32[N + 2, K + 2]),
                                  alpha: f64):
    T = temp(f64[K + 1, K + 1])
    for i in range(K):
        for j in range(N):
            for k in range(min(N, 5)):
                if j >= 2 and k > j:
                    s0 = B[j // 2, i]
                    s0 += A[0, i]
                    A[i + 1, i] = (T[i, i] + s0)
                    s1 = 0.0
                    s1 -= (T[i, i // 2] * (k * 0.25))
                    A[i + 1, i] *= pd.tanh(((k * 0.25) + T[i + 1, i + 1]) + s1)



MAX_TILE = 4
POINTS = [{"K": 11, "N": 11}, {"K": 4, "N": 5}]
STATUS = "mismatch"
