"""Fuzz regression empty_loop_body: error.

compile: IndexError: list index out of range, from polydyn/schedule/directives.py
(_to_schedule: `parts[0]` of a loop whose body holds no statement), when the operator has
no statement at all but a loop (`pass` only: an operator that leaves its output zero; the
body `pass` alone compiles).

Found by the frontend fuzz's random sources (tests/fuzz/mutate.py), by hand from there.
"""

import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def empty_loop_body(A: f32[N], B: out(f32[N])):
    for i in range(N):  # noqa: B007
        pass


MAX_TILE = 4
POINTS = [{"N": 3}]
STATUS = "error"
