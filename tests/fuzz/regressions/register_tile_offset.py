"""Fuzz regression register_tile_offset: mismatch (wrong code, and a stack overflow).

Rows of `D` keep their old values: at K = 4 with tiles of 4 (variant `full`) row 1 is
never updated, and with the default tiles K = 256 (variant `tiled`) leaves 10080 elements
wrong. The register tile's accumulator `pd_acc1[4][4]` is loaded from
`D[(k0 + r) + 1, i0 + v]` into row r, but the update indexes it with
`pd_acc1[(k + 1) - k0]`, one row further: the first row is never updated, and the last
update writes `pd_acc1[4][...]`, past the end of the local array. A subscript with a
constant offset (`k + 1`) is counted twice.

Found by `python -m tests.fuzz --seed 101` (fz10100088), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)

import polydyn as pd
from polydyn import f32, inout

K = pd.sym("K")


@pd.operator
def register_tile_offset(D: inout(f32[K + 1, K])):
    for i in range(K):
        for j in range(K):
            for k in range(K):
                D[k + 1, i] -= 1.0


MAX_TILE = 4
POINTS = [{"K": 4}, {"K": 8}, {"K": 5}]
STATUS = "mismatch"
