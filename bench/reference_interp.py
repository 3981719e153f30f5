"""``python bench/reference_interp.py [--rounds R] [--out FILE]``: the reference interpreter
(``scop/interp.py``, the tests' oracle) one iteration at a time and with its lane loops
(``scop/lanes.py``), in turns, on every phrasing of ``tests/phrasings.py`` at the sizes
``tests/test_phrasings.py`` checks it at. Prints a markdown table (best of ``--rounds``, the
ten slowest one at a time, then the total); ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from polydyn.bench.report import cpu_model, publish
from polydyn.testing import interpreted_outputs, unset_values
from tests import phrasings as ph
from tests.test_phrasings import SIZES, _family


def _seconds(op, lane_loops: bool) -> float:
    start = unset_values(op.scop)
    total = 0.0
    for sizes in SIZES[_family(op)]:
        begin = time.perf_counter()
        interpreted_outputs(op, op.scop, sizes, start, lane_loops=lane_loops)
        total += time.perf_counter() - begin
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    rows = []
    for op in ph.ALL:
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.rounds):
            for lane_loops in (False, True):  # in turns
                best[lane_loops] = min(best[lane_loops], _seconds(op, lane_loops))
        rows.append((op.scop.name, len(SIZES[_family(op)]), best[False], best[True]))
    rows.sort(key=lambda r: -r[2])
    one, lanes = sum(r[2] for r in rows), sum(r[3] for r in rows)
    lines = [f"Machine: {cpu_model()}; best of {args.rounds} rounds, both ways in turns; "
             "each time includes making the random inputs, the same both ways.", "",
             "| phrasing | sizes | one iteration at a time (s) | lane loops (s) | speedup |",
             "|---|---|---|---|---|"]
    lines += [f"| {name} | {n} | {a:.3f} | {b:.3f} | {a / b:.1f}x |"
              for name, n, a, b in rows[:10]]
    lines.append(f"| all {len(rows)} phrasings | {sum(r[1] for r in rows)} | {one:.2f} | "
                 f"{lanes:.2f} | {one / lanes:.1f}x |")
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
