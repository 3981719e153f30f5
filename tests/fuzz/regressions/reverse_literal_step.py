"""Fuzz regression reverse_literal_step: refused by the frontend.

`range(N - 1, 0, -1)` was refused with "range() step must be an integer constant": the
literal `-1` is a unary minus, which the frontend did not fold to a constant (the generator
wrote reverse loops with a module constant `BACK = -1` instead until this was fixed).

Found while writing tests/fuzz/generator.py.
"""

import polydyn as pd
from polydyn import f32, inout

N = pd.sym("N")


@pd.operator
def reverse_literal_step(A: inout(f32[N])):
    for i in range(N - 1, 0, -1):
        A[i - 1] += A[i]
    for i in range(N - 1, -1, -2):
        A[i] *= 0.5


MAX_TILE = 4
POINTS = [{"N": 1}, {"N": 6}, {"N": 9}]
STATUS = "refused"
