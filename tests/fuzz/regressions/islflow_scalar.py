"""Fuzz regression islflow_scalar: error.

compile: isl.Error: call to isl_union_access_info_compute_flow failed: affine expression
involves some of the domain dimensions (isl_domain_factor_templ.c), raised from
polydyn/scop/deps.py (_flow): two assignments to a local scalar in a loop nested under a
`%` guard (the scalar's expanded accesses carry the guard's existential).

Found by `python -m tests.fuzz --seed 1` (fz100026), shrunk by tests/fuzz/shrink.py, then by
hand.
"""

# ruff: noqa: B007, F841  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import f32, inout

L = pd.sym("L")


@pd.operator
def islflow_scalar(A: inout(f32[L])):
    for i in range(L):
        if i % 2 == 1:
            for j in range(i):
                s = 1.0
                s = 2.0


MAX_TILE = 4
POINTS = [{"L": 4}]
STATUS = "error"
