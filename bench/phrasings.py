"""``python bench/phrasings.py [--quick] [--only NAME,...] [--out FILE]``: every operator of
``tests/phrasings.py`` (written as users write them) timed in turns, in one process, beside
the bundled kernel it phrases (where there is one) and PyTorch eager, at the sizes
``BENCH_SIZES`` names. Prints a markdown table (GFLOP/s for products, GB/s of the arrays
passed for the rest, and the ratios); ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import polydyn as pd
from kernels import load
from polydyn.bench.report import cpu_model
from polydyn.bench.timing import Budget, measure_interleaved, wait_quiet
from polydyn.bench.work import work
from polydyn.scop.exprs import NUMPY_NAME
from polydyn.testing import make_inputs
from tests import phrasings as ph


def _rate(op: pd.Operator, sizes: dict[str, int], seconds: float) -> tuple[float, str]:
    """GFLOP/s for products, else GB/s of the minimal traffic (isl's counts)."""
    w = work(op.scop, sizes)
    if op.scop.name.startswith(("matmul", "linear", "batched_linear", "attention", "scores",
                                "conv", "pairwise")):
        return w.flops / seconds / 1e9, "GFLOP/s"
    return w.bytes / seconds / 1e9, "GB/s"


def run(op: pd.Operator, sizes: dict[str, int], budget: Budget, torch) -> str:
    kernel = pd.compile(op)
    inputs = make_inputs(op, sizes, seed=1)
    args = ph.positional(op, inputs)
    want = ph.NUMPY[op](*ph.float64(args))  # (before a call changes the inout arrays)
    outs = [np.empty(tuple(d.eval(sizes) for d in a.shape), NUMPY_NAME[a.dtype])
            for a in op.scop.arg_arrays if a.kind == "out"]
    names = [a.name for a in op.scop.arg_arrays if a.kind == "out"]
    fns = [lambda: kernel(*args, **dict(zip(names, outs, strict=True)))]
    labels = ["phrasing"]
    if op in ph.BUNDLED:
        name, convert = ph.BUNDLED[op]
        bundled = pd.compile(load(name)[0])
        bargs = convert(*args)
        fns.append(lambda: bundled(*bargs))
        labels.append("bundled")
    if torch is not None:
        targs = [torch.from_numpy(a) if isinstance(a, np.ndarray) else float(a) for a in args]
        fn = ph.TORCH[op]
        fns.append(lambda: fn(torch, *targs))
        labels.append("torch")
    got = ph.results(op, args, fns[0]())
    for value, expected in zip(got, want if isinstance(want, tuple) else (want,), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-3, atol=1e-3)
    times = measure_interleaved(fns, budget, rounds=3, before_round=lambda _: wait_quiet())
    t = dict(zip(labels, (x.median for x in times), strict=True))
    rate, unit = _rate(op, sizes, t["phrasing"])
    shape = " ".join(f"{k}={v}" for k, v in sizes.items())
    cells = [f"{op.scop.name}", shape, f"{t['phrasing'] * 1e3:.3f}", f"{rate:.1f} {unit}"]
    cells.append(f"{t['bundled'] / t['phrasing']:.2f}x" if "bundled" in t else "-")
    cells.append(f"{t['torch'] / t['phrasing']:.2f}x" if "torch" in t else "-")
    cells.append(", ".join(v.name for v in kernel.variants if v.name == kernel.select(
        **{s: sizes[s] for s in op.scop.syms}).name))
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma list of phrasing names")
    parser.add_argument("--out", default="", help="also write the table to this file")
    opts = parser.parse_args()
    budget = Budget(seconds=1.0) if opts.quick else Budget(seconds=4.0)
    try:
        import torch

        torch.set_num_threads(len(__import__("os").sched_getaffinity(0)))
    except ImportError:
        torch = None
    only = set(filter(None, opts.only.split(",")))
    lines = [f"Machine: {cpu_model()}, "
             f"{len(__import__('os').sched_getaffinity(0))} CPUs; torch "
             f"{torch.__version__ if torch else 'not installed'}", "",
             "| phrasing | sizes | ms | rate | vs bundled | vs torch eager | variant |",
             "|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for op in ph.ALL:
        if only and op.scop.name not in only:
            continue
        for sizes in ph.BENCH_SIZES[op]:
            line = run(op, sizes, budget, torch)
            print(line, flush=True)
            lines.append(line)
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
