"""Fuzz regression opencl_recipe_tile_parallel: crash, OpenCL target, user recipe.

Under the recipe `tile(k=3).parallel("k")` (over the whole domain) this plain copy corrupts
the heap at N=11: glibc aborts the process on the next allocation ("free(): invalid next
size", "corrupted size vs. prev_size"; before shrinking, PoCL's own assertion in
pocl_release_dlhandle_cache). The same recipe on the C target passes, and so does the OpenCL
target under the automatic schedule. The test runs it in a worker process. fz20100160 of
seed 201 (a copy under `parallel("k").tile(i=8)`) crashes the same way. Probably the same
bug without the crash: fz900100 of seed 9 under `tile(i=3).parallel("k")`, where the tile
and point loops of `i` both stay on the host and `A[i // 2] += 1` runs three times for
some `i`.

Fixed with opencl_out_of_domain_write.py: the same PoCL miscompilation of barriers under a
condition (with the change for it reverted, this test fails again).

Found by `python -m tests.fuzz --seed 8` (fz800040), shrunk by tests/fuzz/shrink.py.
"""

# ruff: noqa: B007  (generated code: unused loop variables)
import polydyn as pd
from polydyn import f64, out

N = pd.sym("N")


@pd.operator
def opencl_recipe_tile_parallel(A: f64[N + 1], C: out(f64[N + 3, N + 3, N + 2])):
    for i in range(2):
        for j in range(2):
            for k in range(N):
                C[k + 1, j + 1, j] = A[j]


MAX_TILE = 4
POINTS = [{"N": 11}]
STATUS = "crash"
TARGET = "opencl"
SCHEDULE = [["tile", [["k", 3]]], ["parallel", ["k"]]]
