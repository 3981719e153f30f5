"""Fuzz regression dataflow_compile_time: timeout, C target, automatic schedule.

The compile ran over 300 s in isl's dataflow analysis (`scop/deps.py`): four writes of B
under `%` guards, with `//` subscripts along two loops and a read-modify-write of one cell,
made `compute_flow` split the last writer of each element over ever more pieces.

Fixed: each dataflow analysis runs under ``DEPS_MAX_OPERATIONS``; past it the dependences are
memory-based (every earlier access of the same element, a superset): about 5 s. A `timeout`
regression runs in a worker process with a time limit (tests/test_fuzz.py).

Found by `python -m tests.fuzz --seed 1138` (fz113800035, "loading the operator"), shrunk by
hand.
"""

import polydyn as pd
from polydyn import i32, out

K = pd.sym("K")


@pd.operator
def dataflow_compile_time(B: out(i32[(K + 2) // 2, K + 2])):
    for i in range(K):
        for j in range(i):
            for k, p in pd.grid(K, K):
                if p % 3 == 0:
                    B[p // 2, j] = i
                    B[k // 2, K - j] = i
                if (j + 2) % 3 == 0:
                    B[p // 2, j] = 0
                else:
                    B[i // 2, i - 1] += B[j // 2, p] // 3


MAX_TILE = 4
POINTS = [{"K": 0}, {"K": 1}, {"K": 5}, {"K": 7}]
STATUS = "timeout"
