"""Fuzz regression c_ast_stack_overflow: crash, C target, automatic schedule.

The compile segfaults after about 50 s inside isl's AST generation (astgen.build_ast,
`node_from_schedule`): with an unlimited stack it runs for over 15 minutes instead, so it is
isl recursing ever deeper on the schedule the automatic policy hands it, not a stray pointer.
Both statements on `s1` are needed (without either, the compile takes half a second), and no
single edit of the shrinker keeps the crash, so the operator is as generated. The test runs
it in a worker process.

The same schedule crashes a bare `AstBuild.node_from_schedule` (no polydyn code involved),
and generates in 0.03 s when the innermost band's member is atomic. Fixed (worked around):
band members whose values step by different strides for different statements are generated
atomic (astgen.atomic_where_strides_differ).

Found by `python -m tests.fuzz --seed 201` (fz20100007).
"""

# ruff: noqa: B007, UP034  (generated code: unused loop variables, extra parentheses)
import polydyn as pd
from polydyn import i32, inout

K = pd.sym("K")


@pd.operator
def c_ast_stack_overflow(A: inout(i32[K + 4]), B: i32[K + 4]):
    for i in range(K):
        for j in range(0, K + 2, 2):
            s0 = A[j + 1]
            for k in range(K):
                s0 += max(-99, min(99, ((A[j // 2] + A[j]) + min(2, A[i]))))
            A[j] = max(-9999, min(9999, (((3 if j < i else B[j // 2]) + j) + s0)))
            s1 = (A[i] if B[K + 1 - j] <= 0 else (0.5 / (2.0 + abs(A[0]))))
            s1 *= pd.tanh((0.5 ** 2))
            A[j + 1] = max(-9999, min(9999, (A[j] % 2)))


MAX_TILE = 4
POINTS = []
STATUS = "crash"
