"""``python bench/concurrent_compiles.py [--processes N] [--rounds R] [--out FILE]``: N processes
compiling the same operator at once on a fresh cache (the ranks of a data-parallel job, the
workers of a test run), beside one process alone, in turns. One process builds the kernel;
the others wait for its cache entry (``runtime/cache.py``, ``building``). Reports wall time and
CPU time (the processes and their C compilers), best of ``--rounds``, and how many processes
ran the compiler's stages. Prints a markdown table; ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from polydyn.bench.report import cpu_model, publish  # noqa: E402

OPERATORS = ["matmul_scalar", "attention", "conv_nhwc"]  # tests/phrasings.py
# one compile: prints whether this process ran the stages (generate) or loaded the entry
SCRIPT = """
import sys
import polydyn as pd
import polydyn.pipeline as pipeline
from tests import phrasings
built = []
generate = pipeline.generate
pipeline.generate = lambda *a, **k: built.append(1) or generate(*a, **k)
pd.compile(getattr(phrasings, sys.argv[1]))
print(len(built))
"""


def _run(op: str, processes: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and processes that built, for ``processes`` at once."""
    env = dict(os.environ, POLYDYN_CACHE_DIR=tempfile.mkdtemp(prefix="pd-concurrent-"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, op], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    outs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if any(p.returncode for p in procs):
        raise SystemExit(f"a compile of {op} failed")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, sum(int(json.loads(o.strip().splitlines()[-1])) for o in outs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    n = args.processes
    lines = [f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; best of {args.rounds} rounds, "
             f"one process and {n} at once in turns, each on a fresh cache.", "",
             f"| operator | one process: wall | CPU | {n} at once: wall | CPU | built by | "
             "wall ratio |", "|---|---|---|---|---|---|---|"]
    for op in OPERATORS:
        best: dict[int, tuple[float, float, int]] = {}
        for _ in range(args.rounds):
            for k in (1, n):
                run = _run(op, k)
                if k not in best or run[0] < best[k][0]:
                    best[k] = run
        (w1, c1, _), (wn, cn, built) = best[1], best[n]
        lines.append(f"| {op} | {w1:.1f} s | {c1:.1f} s | {wn:.1f} s | {cn:.1f} s | "
                     f"{built} of {n} | {wn / w1:.2f}x |")
        print(lines[-1], flush=True)
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
