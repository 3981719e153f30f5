"""Fuzz regression islflow_mod_guard: error.

compile: isl.Error: call to isl_union_access_info_compute_flow failed: affine expression
involves some of the domain dimensions (isl_domain_factor_templ.c), raised from
polydyn/scop/deps.py (_flow) instead of compiling: a write with `%` subscripts under a
disjunctive guard (`i != j`) that also reads the array.

Found by `python -m tests.fuzz --seed 1` (fz100024), shrunk by tests/fuzz/shrink.py, then by
hand.
"""

import polydyn as pd
from polydyn import i32, inout

L = pd.sym("L")


@pd.operator
def islflow_mod_guard(A: inout(i32[4, 4]), L: pd.index):
    for i in range(L):
        for j in range(L):
            if i != j:
                A[i % 4, j % 4] = A[0, 3]


MAX_TILE = 4
POINTS = [{"L": 5}]
STATUS = "error"
