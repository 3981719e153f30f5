"""Fuzz regression opencl_recipe_anchored_tile: error, OpenCL target, recipe.

compile: Error: call to isl_schedule_node_insert_partial_schedule failed: cannot insert band
node in anchored subtree. The recipe's `tile` isolates full tiles (an AST option that anchors
the subtree to the loops above it); the local-memory promotion moved the tile loop of the
member below the mapped ones above them, which isl refuses in an anchored subtree (and
`band_tile` too: fz900093, `tile` after `parallel` and `vectorize`).

Fixed: a kernel whose mapped members sit over an anchored subtree is not promoted (the plain
kernel runs).

Found by `python -m tests.fuzz --seed 32` (fz3200033, fz3200031; fz900093 of seed 9),
shrunk by tests/fuzz/shrink.py.
"""


import polydyn as pd
from polydyn import f32, inout

L, M = pd.sym("L M")


@pd.operator
def opencl_recipe_anchored_tile(A: inout(f32[L + 2, M + 1, M + 2])):
    for i in range(M):
        A[0, i, 0] = 1.0


MAX_TILE = 8
POINTS = []
STATUS = "error"
TARGET = "opencl"
SCHEDULE = [["parallel", ["i"]], ["tile", [["i", 1]]]]
