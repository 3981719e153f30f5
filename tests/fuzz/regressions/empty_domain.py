"""Fuzz regression empty_domain: error.

compile: isl.Error: call to isl_set_from_union_set failed: union map needs to contain
elements in exactly one space (isl_union_map.c): an operator whose statements never run
(every domain empty: `if i < 0` inside `range(N)`) should compile to code that does nothing
(here: an output of zeros).

Found by `python -m tests.fuzz --seed 101` (fz10100160, fz10100282, fz10100311), shrunk by
tests/fuzz/shrink.py, then by hand.
"""

import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def empty_domain(A: out(f32[N])):
    for i in range(N):
        if i < 0:
            A[i] = 1.0


MAX_TILE = 4
POINTS = [{"N": 3}]
STATUS = "error"
