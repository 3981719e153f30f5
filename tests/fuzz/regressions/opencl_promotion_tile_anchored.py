"""Fuzz regression fz30400045 (opencl_promotion_tile_anchored): error.

compile: Error: call to isl_schedule_node_band_tile failed: cannot tile band node with
anchored subtree in /project/isl/isl_schedule_node.c:2021

Found by `python -m tests.fuzz --seed 304`, shrunk by tests/fuzz/shrink.py. C passes under
the same recipe: the OpenCL mapping's local-memory promotion (codegen_ocl/promotion.py,
`promote`) tiled a band whose subtree is anchored (the recipe's tile of k below the parallel
j). Fixed: no local-memory promotion over an anchored subtree (the same bug as
opencl_recipe_anchored_tile.py, fixed while this one was being shrunk).
"""

# ruff: noqa: B007  (generated code: unused loop variables and scalars)
import polydyn as pd
from polydyn import f32, f64, i32, i64, inout, out, temp  # noqa: F401

L, N = pd.sym("L N")


@pd.operator
def opencl_promotion_tile_anchored(D: out(i32[L + 1, (L - 1) // 3]), N: pd.index):
    for i in range(2):
        for j in range((L - 1) // 3):
            for k in range(N):
                D[0, j] = 1


MAX_TILE = 8
POINTS = []
STATUS = 'error'
TARGET = 'opencl'
SCHEDULE = [["tile", [["k", 8]]], ["parallel", ["j"]]]
