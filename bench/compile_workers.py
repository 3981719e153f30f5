"""``python bench/compile_workers.py [--rounds R] [--out FILE]``: cold compiles of operators with
several variants, their variants' ASTs and C functions built in this process and in forked
workers (``codegen_c/functions.py``), in turns: the generation stage alone
(``pipeline.generate``: no C compiler) and the whole cold compile (a fresh cache each time,
gcc's units compiling beside the generation as they do). Prints a markdown table (best of
``--rounds``); ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polydyn as pd
from kernels import load
from polydyn.bench.report import cpu_model, publish
from polydyn.codegen_c import functions, toolchain
from polydyn.pipeline import generate
from tests import phrasings as ph


def _operators() -> dict[str, pd.Operator]:
    return {"matmul (bundled)": load("matmul")[0], "conv2d (bundled)": load("conv2d")[0],
            "matmul_scalar": ph.matmul_scalar, "attention": ph.attention,
            "batched_linear_nt_seq_first": ph.batched_linear_nt_seq_first}


def _timed(fn, processes: int) -> float:
    real = functions.variant_codes

    def fixed(units, with_tree=False, on_code=None, processes_=None):
        return real(units, with_tree, on_code, processes)

    functions.variant_codes = fixed
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        functions.variant_codes = real


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    workers = toolchain.usable_cpus()
    lines = [f"Machine: {cpu_model()}, {workers} CPUs for this process; best of "
             f"{args.rounds} rounds, in-process and {workers} workers in turns.", "",
             "| operator | variants | generation: in-process | in workers | ratio | "
             "cold compile: in-process | in workers | ratio |", "|---|---|---|---|---|---|---|---|"]
    for name, op in _operators().items():
        best: dict[tuple[str, int], float] = {}
        for _ in range(args.rounds):
            for processes in (1, workers):
                gen = _timed(lambda op=op: generate(op, "c"), processes)
                cold = _timed(lambda op=op: pd.compile(op, cache_dir=tempfile.mkdtemp()),
                              processes)
                for key, t in ((("gen", processes), gen), (("cold", processes), cold)):
                    best[key] = min(best.get(key, t), t)
        n = len(pd.compile(op).variants)
        g1, gw, c1, cw = (best[("gen", 1)], best[("gen", workers)], best[("cold", 1)],
                          best[("cold", workers)])
        lines.append(f"| {name} | {n} | {g1:.2f} s | {gw:.2f} s | {g1 / gw:.2f}x | "
                     f"{c1:.2f} s | {cw:.2f} s | {c1 / cw:.2f}x |")
        print(lines[-1], flush=True)
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
