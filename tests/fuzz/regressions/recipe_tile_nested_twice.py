"""Fuzz regression recipe_tile_nested_twice: error, on both targets.

The recipe `tile(j=4).tile(i=5)` (two tile directives, the second on a loop that encloses the
first) failed inside isl instead of being applied or refused with a ScheduleError: "call to
isl_schedule_node_delete failed: cannot delete band node with anchored subtree". The first
tile left an isolate option (an anchored subtree) under the `i` band, which the second
`_tile` (schedule/directives.py) deletes to merge the named loops into one band. Any recipe
that tiled a loop and then a loop around it hit this (about one operator in six of seed 8).
The second tile now drops the build options of the tiles below it first.

Found by `python -m tests.fuzz --seed 8` (fz800049), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007, F841  (generated code: unused loop variables and scalars)
import polydyn as pd
from polydyn import f64, out

K, N = pd.sym("K N")


@pd.operator
def recipe_tile_nested_twice(A: out(f64[N + 2]), K: pd.index):
    for i in range(2):
        for j in range(K):
            s1 = 1.0


MAX_TILE = 8
POINTS = []
STATUS = "error"
SCHEDULE = [["tile", [["j", 4]]], ["tile", [["i", 5]]]]
