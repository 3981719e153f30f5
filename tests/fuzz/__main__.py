"""``python -m tests.fuzz --n 1000 --seed S [--jobs J] [--targets c,opencl] [--schedules K]
[--replay] [--shrink] [--out DIR]``.

Generates ``n`` random operators (operator ``i`` of seed ``S`` is ``fz<S*100000+i>``),
checks each in a worker process on every target under the automatic schedule and under ``K``
random recipes (with ``--replay``, the automatic variants' recipes must generate the same
source again), prints one line per failure and the summary line ``N passed, N failed (...),
N refused by the frontend; <target>/<schedule> counts; ...``. With ``--shrink`` each failure is
reduced to a minimal operator (and recipe) and saved under ``--out`` (default
tests/fuzz/regressions/). ``--one OPSEED`` prints the source of one operator and checks it
(with the same ``--targets``/``--schedules`` it draws the same recipes); ``--show`` only
prints. Exit status 1 when something failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .generator import generate, render
from .known import known_failure
from .runner import FAILURES, Pool, available_targets, sanitizer_env

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
# The OpenCL budget (measured, see README.md): every operator runs the automatic schedule and
# its recipes on every target (OPENCL_RECIPES_EVERY = 1; with k, the recipes run on OpenCL for
# one operator in k only, by the operator's seed).
OPENCL_RECIPES_EVERY = 1


def op_seed(seed: int, i: int) -> int:
    return seed * 100_000 + i


def make_task(opseed: int, literal_steps: bool = False, targets: tuple[str, ...] = ("c",),
              schedules: int = 0, replay: bool = False) -> dict[str, Any]:
    """The task for one operator: its source and how to check it (tiles of 4 or 8, syms
    up to 12, three points per variant), on which targets, and how many recipes on which
    (the recipes themselves are drawn in the worker, from the operator's loops and
    ``recipe_seed``); ``replay``: the automatic variants' recipes replayed too."""
    import random

    op = generate(opseed, literal_steps=literal_steps)
    rng = random.Random(opseed ^ 0x5EED)
    recipe_targets = [t for t in targets
                      if t == "c" or opseed % OPENCL_RECIPES_EVERY == 0] or list(targets)
    return {"id": opseed, "name": op.name, "source": render(op),
            "max_tile": rng.choice((4, 8)), "hi": 12 if len(op.syms) <= 2 else 9,
            "limit": 3, "low": True, "check_seed": opseed % 1000, "targets": list(targets),
            "schedules": schedules, "recipe_targets": recipe_targets,
            "recipe_seed": opseed ^ 0x5C4ED, "replay": replay}


def fuzz(n: int, seed: int, *, jobs: int = 2, timeout: float = 300.0, shrink: bool = False,
         out: Path | None = None, log=print, cache_dir: str | None = None,
         literal_steps: bool = False, sanitize: bool = False, report=None,
         targets: tuple[str, ...] | None = None, schedules: int = 2,
         replay: bool = False) -> dict[str, Any]:
    """Check ``n`` operators of ``seed`` on ``targets`` (default: every available one) under
    the automatic schedule (with ``replay``, its variants' recipes must generate the same
    source again) and ``schedules`` random recipes; returns counts, failures and
    timing. ``report`` gets the summary as soon as the checks are done, before any shrinking
    (which can take long); with ``shrink`` every unknown mismatch, error or crash is then
    shrunk and saved."""
    targets = tuple(targets or available_targets())
    tasks = [make_task(op_seed(seed, i), literal_steps, targets, schedules, replay)
             for i in range(n)]
    start = time.perf_counter()
    results: list[tuple[dict, dict]] = []

    def on_result(task: dict, res: dict) -> None:
        results.append((task, res))
        for failure in failing_units(res):
            failure["known"] = known_failure(failure, task["name"])
            tag = failure["status"] + (f", known: {failure['known']}" if failure["known"] else "")
            log(f"FAIL {task['name']} [{tag}] {describe_unit(failure)}: "
                f"{failure.get('message', '')[:400]}")
        if len(results) % 100 == 0:
            log(f"... {len(results)}/{n} ({time.perf_counter() - start:.0f} s)")

    with tempfile.TemporaryDirectory(prefix="pd-fuzz-cache-") as tmp_cache:
        pool = Pool(jobs=jobs, timeout=timeout, cache_dir=cache_dir or tmp_cache,
                    env_extra=sanitizer_env() if sanitize else {})
        try:
            pool.map(tasks, on_result)
            summary = summarize(results, n, seed, sanitize, time.perf_counter() - start)
            summary.update(targets=list(targets), schedules=schedules)
            if report:
                report(summary)
            if shrink:
                summary["saved"] = _shrink_all(results, pool, out or REGRESSIONS, seed, log)
        finally:
            pool.close()
    return summary


def failing_units(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The failing units of an operator's result (the result itself when it failed outside
    any unit: a worker that died loading the operator)."""
    failed = [u for u in res.get("units", ()) if u["status"] in FAILURES]
    return failed or ([res] if res["status"] in FAILURES else [])


def unit_key(unit: dict[str, Any]) -> str:
    """``c/auto``, ``opencl/recipe``: how the summary groups units."""
    return f"{unit.get('target', '?')}/{'auto' if unit.get('schedule') is None else 'recipe'}"


def describe_unit(unit: dict[str, Any]) -> str:
    """Where a failure happened: the target and the schedule, with the recipe as JSON (and
    its region) so that it can be replayed with ``pd.Schedule.from_json``."""
    if "target" not in unit:
        return "loading the operator"
    if unit.get("schedule") is None:
        return f"{unit['target']}, automatic schedule"
    where = f" over {unit['region']!r} beside auto" if unit.get("region") else ""
    return f"{unit['target']}, recipe {json.dumps(unit['schedule'])}{where}"


_SCHEDULE_REASONS = (
    ("breaks dependences", "breaks dependences"),
    ("carries a dependence", "parallel/vectorize: the loop carries a dependence"),
    ("not a perfect nest", "interchange: not a perfect nest"),
    ("is not inside loop", "tile: a loop not inside the first"),
    ("no two adjacent loops", "fuse: no adjacent loops"),
    ("nothing to distribute", "distribute: nothing to distribute"),
    ("no loop named", "tile: no band of that loop"),
)


def _schedule_reason(message: str) -> str:
    for pattern, reason in _SCHEDULE_REASONS:
        if pattern in message:
            return reason
    return _reason(message)


def summarize(results: list[tuple[dict, dict]], n: int, seed: int, sanitize: bool,
              seconds: float) -> dict[str, Any]:
    """Counts per operator (``passed``, ``failed`` by the status of their first failure,
    ``refused`` by the frontend), per unit (``units``: target/schedule -> status -> count,
    and the seconds spent on each kind of unit), every failing unit with its target and
    recipe, and the slowest operators."""
    counts = Counter(r["status"] for _, r in results)
    failures = [(t, f) for t, r in results for f in failing_units(r)]
    for t, f in failures:
        f.setdefault("known", known_failure(f, t["name"]))
    known = Counter(f["known"] for _, f in failures if f["known"])
    refusals = Counter(_reason(r["message"]) for _, r in results if r["status"] == "refused")
    units: dict[str, Counter] = {}
    unit_seconds: Counter = Counter()
    schedule_refusals: Counter = Counter()
    for _, r in results:
        for u in r.get("units", ()):
            units.setdefault(unit_key(u), Counter())[u["status"]] += 1
            unit_seconds[unit_key(u)] += u.get("seconds", 0.0)
            if u["status"] == "refused":
                schedule_refusals[_schedule_reason(u.get("message", ""))] += 1
    variant_names = Counter(v for _, r in results for v in r.get("names", ()))
    return {
        "n": n, "seed": seed, "sanitize": sanitize, "passed": counts["pass"],
        "failed": sum(counts[s] for s in FAILURES), **{s: counts[s] for s in FAILURES},
        "failing_units": len(failures), "known": sum(known.values()), "known_by": dict(known),
        "unknown": len(failures) - sum(known.values()), "refused": counts["refused"],
        "refusal_reasons": dict(refusals.most_common()),
        "units": {k: dict(v) for k, v in sorted(units.items())},
        "unit_seconds": {k: round(v, 1) for k, v in sorted(unit_seconds.items())},
        "schedule_refusals": dict(schedule_refusals.most_common()),
        "variants": sum(r.get("variants", 0) for _, r in results),
        "checks": sum(r.get("runs", 0) for _, r in results),
        "variant_names": dict(variant_names.most_common()),
        "seconds": round(seconds, 1),
        "failures": [{"name": t["name"], "id": t["id"], "status": f["status"],
                      "known": f["known"], "target": f.get("target"),
                      "schedule": f.get("schedule"), "region": f.get("region"),
                      "message": f.get("message", "")} for t, f in failures],
        "slowest": sorted(((r.get("seconds", 0.0), t["name"]) for t, r in results),
                          reverse=True)[:5],
    }


def _shrink_all(results: list[tuple[dict, dict]], pool: Pool, out: Path, seed: int,
                log) -> list[str]:
    """Shrink and save the first unknown mismatch, error or crash of each operator (not
    timeouts: every candidate would take the whole timeout), under its target and recipe."""
    from .shrink import reproduces, save_regression, shrink_failure

    saved = []
    for task, res in results:
        for failure in failing_units(res):
            if failure["status"] in ("mismatch", "error", "crash") and not failure["known"] \
                    and "target" in failure:
                if not reproduces(task, failure, pool):
                    log(f"{task['name']}: the {failure['status']} ({describe_unit(failure)}) "
                        "does not reproduce alone in a fresh worker; not shrunk")
                    continue
                small = shrink_failure(task, failure, pool, log=log)
                saved.append(str(save_regression(small, failure, out, seed)))
                break
    return saved


def _reason(message: str) -> str:
    """A refusal message without its place and example values, for grouping."""
    import re

    text = message.split(": ", 1)[1] if ": " in message else message
    text = re.sub(r"for example at .*", "", text)
    return re.sub(r"`[^`]*`", "`...`", text)[:120]


def summary_line(s: dict[str, Any]) -> str:
    detail = ", ".join(f"{s[k]} {k}" for k in FAILURES if s[k])
    if s["failing_units"] != s["failed"]:
        detail += f"; {s['failing_units']} failing units"
    if s["known"]:
        detail += f"; {s['known']} of them known bugs: " + ", ".join(
            f"{v}x {k}" for k, v in s["known_by"].items())
    per_unit = "; ".join(f"{key} " + ", ".join(
        f"{c[st]} {word}" for st, word in (("pass", "passed"), ("refused", "refused"))
        if c.get(st)) + (f", {failed} failed" if (failed := sum(c.get(f, 0) for f in FAILURES))
                         else "") for key, c in s["units"].items())
    return (f"{s['passed']} passed, {s['failed']} failed" + (f" ({detail})" if detail else "")
            + f", {s['refused']} refused by the frontend"
            + (f"; {per_unit}" if per_unit else "")
            + f"; {s['n']} operators, seed {s['seed']}, {s['seconds']} s")


def shrink_one(opseed: int, args: argparse.Namespace) -> int:
    """Check one operator and shrink its first failure (under that failure's target and
    recipe)."""
    from .shrink import reproduces, save_regression, shrink_failure

    task = make_task(opseed, args.literal_steps, args.targets, args.schedules, args.replay)
    pool = Pool(jobs=args.jobs, timeout=args.timeout)
    try:
        res = pool.map([task])[0]
        failed = failing_units(res)
        if not failed:
            print(f"{task['name']}: {res['status']}, nothing to shrink")
            return 0
        print(f"shrinking {task['name']} [{failed[0]['status']}] {describe_unit(failed[0])}")
        if not reproduces(task, failed[0], pool):
            print("it does not reproduce alone in a fresh worker: nothing to shrink")
            return 1
        small = shrink_failure(task, failed[0], pool)
    finally:
        pool.close()
    print(small["source"])
    print(json.dumps(small["result"], indent=1)[:3000])
    path = save_regression(small, failed[0], args.out or REGRESSIONS, opseed // 100_000)
    print(f"saved {path}")
    return 1


def _targets(text: str) -> tuple[str, ...]:
    targets = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in targets if t not in ("c", "opencl")]
    if unknown or not targets:
        raise argparse.ArgumentTypeError(f"targets are c and opencl, got {text!r}")
    return targets


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per unit (one target under one schedule) of an operator")
    p.add_argument("--targets", type=_targets,
                   help="comma-separated targets (default: every available one: c, opencl)")
    p.add_argument("--schedules", type=int, default=2,
                   help="random recipes per operator (besides the automatic schedule)")
    p.add_argument("--replay", action="store_true", help="the automatic variants' recipes "
                   "must generate the same source again")
    p.add_argument("--shrink", action="store_true", help="shrink and save each failure")
    p.add_argument("--out", type=Path, help="where --shrink saves (tests/fuzz/regressions)")
    p.add_argument("--json", type=Path, help="also write the summary as JSON here")
    p.add_argument("--sanitize", action="store_true",
                   help="build kernels with -fsanitize=address,undefined (libasan preloaded)")
    p.add_argument("--literal-steps", action="store_true",
                   help="write reverse steps as literals (range(N - 1, -1, -1))")
    p.add_argument("--one", type=int, metavar="OPSEED", help="check one operator")
    p.add_argument("--show", action="store_true", help="with --one: only print the source")
    p.add_argument("--shrink-one", type=int, metavar="OPSEED",
                   help="shrink one failing operator and save it under --out")
    args = p.parse_args(argv)
    args.targets = args.targets or tuple(available_targets())
    if args.shrink_one is not None:
        return shrink_one(args.shrink_one, args)
    if args.one is not None:
        task = make_task(args.one, args.literal_steps, args.targets, args.schedules,
                         args.replay)
        print(task["source"])
        if args.show:
            return 0
        pool = Pool(jobs=1, timeout=args.timeout)
        try:
            res = pool.map([task])[0]
        finally:
            pool.close()
        print(json.dumps(res, indent=1))
        for failure in failing_units(res):
            print(f"FAIL [{failure['status']}] {describe_unit(failure)}")
        return 1 if res["status"] in FAILURES else 0

    def report(s: dict[str, Any]) -> None:
        if s["refusal_reasons"]:
            print("refusals: " + "; ".join(f"{v}x {k}" for k, v in s["refusal_reasons"].items()))
        if s["schedule_refusals"]:
            print("refused recipes: " + "; ".join(
                f"{v}x {k}" for k, v in s["schedule_refusals"].items()))
        print(summary_line(s), flush=True)
        if args.json:
            args.json.write_text(json.dumps(s, indent=1) + "\n")

    s = fuzz(args.n, args.seed, jobs=args.jobs, timeout=args.timeout, shrink=args.shrink,
             out=args.out, literal_steps=args.literal_steps, sanitize=args.sanitize,
             report=report, targets=args.targets, schedules=args.schedules,
             replay=args.replay)
    if args.json and args.shrink:
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    return 1 if s["unknown"] else 0


if __name__ == "__main__":
    sys.exit(main())
