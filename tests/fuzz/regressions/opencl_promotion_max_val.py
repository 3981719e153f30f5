"""Fuzz regression opencl_promotion_max_val: error, OpenCL target, automatic schedule.

The compile failed with "call to isl_pw_aff_max_val failed: expecting integer affine
expression": the local-memory promotion (codegen_ocl/promotion.py, `_box`) asked isl for the
maximum of a footprint extent that is piecewise quasi-affine here (the outer loop runs to
`min(M, 3)`, the inner one to `i + 1`), which isl_pw_aff_max_val does not accept. Four of the
first 60 operators of seed 8 and 11 of seed 201 failed this way. Such a footprint is now
not promoted.

Found by `python -m tests.fuzz --seed 8` (fz800002), shrunk by tests/fuzz/shrink.py.
"""

import polydyn as pd
from polydyn import f32, out

L, M = pd.sym("L M")


@pd.operator
def opencl_promotion_max_val(B: out(f32[M + 2, L])):
    for i in range(min(M, 3)):
        for j in range(L):
            for k in range(i + 1):
                if k >= 1:
                    s0 = 1.0
                    s0 -= B[k, j]


MAX_TILE = 8
POINTS = []
STATUS = "error"
TARGET = "opencl"
