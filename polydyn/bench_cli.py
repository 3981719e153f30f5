"""``polydyn bench``: time an operator over a sweep of sizes against its baselines.

    polydyn bench op.py [--op NAME] --sweep "N=1:4096:log16" [--fix "K=512"]
                  [--target c,opencl] [--baseline numpy,torch,naive] [--out DIR]
    polydyn bench --suite [--quick] [--out DIR]

The machinery lives in ``polydyn.bench``; this module only parses and reports.
"""

from __future__ import annotations

import argparse
from typing import Any

from .errors import UsageError

SWEEP_HELP = ("NAMES=VALUES, repeatable (several make a product; the first is the plot's x "
              "axis). VALUES: a:b:step (linear), a:b:logN (N log-spaced points; a:b means "
              "a:b:log16), a:b:linN, 1,7,33 (list), tiles:16,32 (T-1,T,T+1). Tie syms with "
              "N=M=K=256,512")


BASELINES = ("numpy", "torch", "torch.compile", "torch-cuda", "naive")


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="operator file (op.py); not with --suite")
    parser.add_argument("--op", help="operator name when the file defines several")
    parser.add_argument("--sweep", action="append", default=[], metavar="SPEC",
                        help=SWEEP_HELP)
    parser.add_argument("--fix", action="append", default=[], metavar="NAME=V",
                        help="pin a sym, e.g. K=512 (repeatable, or K=512,M=64)")
    parser.add_argument("--target", default="c", help="comma list of c, opencl (default c)")
    parser.add_argument("--baseline", default="numpy,torch,naive",
                        help="comma list of numpy, torch, torch.compile, torch-cuda, naive, "
                             "or none "
                             "(default numpy,torch,naive; torch only if installed)")
    parser.add_argument("--out", default="bench/out", metavar="DIR",
                        help="where CSV, JSON, markdown and PNG go (default bench/out)")
    parser.add_argument("--suite", action="store_true",
                        help="the standard suite over every bundled kernel (bench/run_all.py)")
    parser.add_argument("--quick", action="store_true",
                        help="short time budget per measurement (and small sizes in --suite)")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="seconds of timed calls per measurement (default 1, quick 0.2)")
    parser.add_argument("--rounds", type=int, metavar="R",
                        help="time the implementations in turns, R rounds of budget/R each "
                             "(default 3, quick 1): a burst of outside load falls on all alike")
    parser.add_argument("--metric", default="auto", choices=["auto", "gflops", "gbs"],
                        help="plot and table unit (auto: GFLOP/s when >= 2 flops per byte)")
    parser.add_argument("--no-generic", action="store_true",
                        help="do not time the forced generic variant")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--assume", help="extra isl constraints over the syms")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def _list(text: str, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    bad = [t for t in items if t not in allowed]
    if bad:
        raise UsageError(f"--{what} {', '.join(bad)}: choose from {', '.join(allowed)}")
    return items


def settings_from_args(args: argparse.Namespace) -> Any:
    from .bench.runner import Settings
    from .bench.timing import Budget

    budget = Budget.quick() if args.quick else Budget()
    if args.budget is not None:
        budget = Budget(seconds=args.budget, min_samples=budget.min_samples,
                        max_samples=budget.max_samples, warmup_seconds=budget.warmup_seconds)
    metric = {"auto": "auto", "gflops": "GFLOP/s", "gbs": "GB/s"}[args.metric]
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    if rounds < 1:
            raise UsageError(f"--rounds {rounds}: expected at least 1")
    return Settings(budget=budget,
                    baselines=_list(args.baseline, BASELINES, "baseline"),
                    targets=_list(args.target, ("c", "opencl"), "target") or ("c",),
                    generic=not args.no_generic, metric=metric, seed=args.seed,
                    progress=not args.no_progress, rounds=rounds)


def run_bench_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    settings = settings_from_args(args)
    out = Path(args.out)
    if args.suite:
        if args.file:
            raise UsageError("--suite runs every bundled kernel: give no operator file")
        from dataclasses import replace

        from .bench.suite import default_settings, run_suite

        suite_settings = replace(default_settings(args.quick), baselines=settings.baselines,
                                 targets=settings.targets, progress=settings.progress,
                                 seed=settings.seed, generic=settings.generic)
        if args.budget is not None:
            suite_settings = replace(suite_settings, budget=settings.budget)
        result = run_suite(out, quick=args.quick, settings=suite_settings,
                           plots=not args.no_plot)
        print(result.markdown)
        print("wrote " + ", ".join(str(f) for f in result.files))
        return 0
    if not args.file:
        raise UsageError("give an operator file (polydyn bench op.py --sweep N=1:4096) "
                         "or --suite")
    from .bench.workflow import bench_operator_file

    files, table = bench_operator_file(args.file, args.op, args.sweep, args.fix, settings, out,
                                       assume=args.assume, plots=not args.no_plot)
    print(table)
    print("wrote " + ", ".join(str(f) for f in files))
    return 0
