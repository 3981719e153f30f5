"""``python -m tests.fuzz --n 1000 --seed S [--jobs J] [--shrink] [--out DIR]``.

Generates ``n`` random operators (operator ``i`` of seed ``S`` is ``fz<S*100000+i>``),
checks each in a worker process, prints one line per failure and the summary line
``N passed, N failed (...), N refused by the frontend``. With ``--shrink`` each failure is
reduced to a minimal operator and saved under ``--out`` (default tests/fuzz/regressions/).
``--one OPSEED`` prints the source of one operator and checks it; ``--show`` only prints.
Exit status 1 when something failed.
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
from .runner import FAILURES, Pool, sanitizer_env

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


def op_seed(seed: int, i: int) -> int:
    return seed * 100_000 + i


def make_task(opseed: int, literal_steps: bool = False) -> dict[str, Any]:
    """The task for one operator: its source and how to check it (tiles of 4 or 8, syms
    up to 12, three points per variant)."""
    import random

    op = generate(opseed, literal_steps=literal_steps)
    rng = random.Random(opseed ^ 0x5EED)
    return {"id": opseed, "name": op.name, "source": render(op),
            "max_tile": rng.choice((4, 8)), "hi": 12 if len(op.syms) <= 2 else 9,
            "limit": 3, "check_seed": opseed % 1000}


def fuzz(n: int, seed: int, *, jobs: int = 2, timeout: float = 300.0, shrink: bool = False,
         out: Path | None = None, log=print, cache_dir: str | None = None,
         literal_steps: bool = False, sanitize: bool = False,
         report=None) -> dict[str, Any]:
    """Check ``n`` operators of ``seed``; returns counts, failures and timing. ``report``
    gets the summary as soon as the checks are done, before any shrinking (which can take
    long); with ``shrink`` every unknown mismatch, error or crash is then shrunk and saved."""
    tasks = [make_task(op_seed(seed, i), literal_steps) for i in range(n)]
    start = time.perf_counter()
    results: list[tuple[dict, dict]] = []

    def on_result(task: dict, res: dict) -> None:
        results.append((task, res))
        if res["status"] in FAILURES:
            res["known"] = known_failure(res)
            tag = f"{res['status']}, known: {res['known']}" if res["known"] else res["status"]
            log(f"FAIL {task['name']} [{tag}] {res.get('message', '')[:400]}")
        if len(results) % 100 == 0:
            log(f"... {len(results)}/{n} ({time.perf_counter() - start:.0f} s)")

    with tempfile.TemporaryDirectory(prefix="pd-fuzz-cache-") as tmp_cache:
        pool = Pool(jobs=jobs, timeout=timeout, cache_dir=cache_dir or tmp_cache,
                    env_extra=sanitizer_env() if sanitize else {})
        try:
            pool.map(tasks, on_result)
            summary = summarize(results, n, seed, sanitize, time.perf_counter() - start)
            if report:
                report(summary)
            if shrink:
                summary["saved"] = _shrink_all(results, pool, out or REGRESSIONS, seed, log)
        finally:
            pool.close()
    return summary


def summarize(results: list[tuple[dict, dict]], n: int, seed: int, sanitize: bool,
              seconds: float) -> dict[str, Any]:
    counts = Counter(r["status"] for _, r in results)
    failures = [(t, r) for t, r in results if r["status"] in FAILURES]
    known = Counter(r["known"] for _, r in failures if r["known"])
    refusals = Counter(_reason(r["message"]) for _, r in results if r["status"] == "refused")
    variant_names = Counter(v for _, r in results for v in r.get("names", ()))
    failed = len(failures)
    return {
        "n": n, "seed": seed, "sanitize": sanitize, "passed": counts["pass"], "failed": failed,
        "known": sum(known.values()), "known_by": dict(known),
        "unknown": failed - sum(known.values()),
        **{s: counts[s] for s in FAILURES}, "refused": counts["refused"],
        "refusal_reasons": dict(refusals.most_common()),
        "variants": sum(r.get("variants", 0) for _, r in results),
        "checks": sum(r.get("runs", 0) for _, r in results),
        "variant_names": dict(variant_names.most_common()),
        "seconds": round(seconds, 1),
        "failures": [{"name": t["name"], "status": r["status"], "known": r["known"],
                      "message": r.get("message", "")} for t, r in failures],
        "slowest": sorted(((r.get("seconds", 0.0), t["name"]) for t, r in results),
                          reverse=True)[:5],
    }


def _shrink_all(results: list[tuple[dict, dict]], pool: Pool, out: Path, seed: int,
                log) -> list[str]:
    """Shrink and save each unknown mismatch, error and crash (not timeouts: every
    candidate would take the whole timeout)."""
    from .shrink import save_regression, shrink_failure

    saved = []
    for task, res in results:
        if res["status"] in ("mismatch", "error", "crash") and not res["known"]:
            small = shrink_failure(task, res, pool, log=log)
            saved.append(str(save_regression(small, res, out, seed)))
    return saved


def _reason(message: str) -> str:
    """A refusal message without its place and example values, for grouping."""
    import re

    text = message.split(": ", 1)[1] if ": " in message else message
    text = re.sub(r"for example at .*", "", text)
    return re.sub(r"`[^`]*`", "`...`", text)[:120]


def summary_line(s: dict[str, Any]) -> str:
    detail = ", ".join(f"{s[k]} {k}" for k in FAILURES if s[k])
    if s["known"]:
        detail += f"; {s['known']} of them known bugs: " + ", ".join(
            f"{v}x {k}" for k, v in s["known_by"].items())
    return (f"{s['passed']} passed, {s['failed']} failed" + (f" ({detail})" if detail else "")
            + f", {s['refused']} refused by the frontend; {s['n']} operators, seed "
            f"{s['seed']}, {s['seconds']} s")


def shrink_one(opseed: int, args: argparse.Namespace) -> int:
    from .shrink import save_regression, shrink_failure

    task = make_task(opseed, args.literal_steps)
    pool = Pool(jobs=args.jobs, timeout=args.timeout)
    try:
        res = pool.map([task])[0]
        if res["status"] not in FAILURES:
            print(f"{task['name']}: {res['status']}, nothing to shrink")
            return 0
        small = shrink_failure(task, res, pool)
    finally:
        pool.close()
    print(small["source"])
    print(json.dumps(small["result"], indent=1)[:3000])
    path = save_regression(small, res, args.out or REGRESSIONS, opseed // 100_000)
    print(f"saved {path}")
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per operator")
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
    if args.shrink_one is not None:
        return shrink_one(args.shrink_one, args)
    if args.one is not None:
        task = make_task(args.one, args.literal_steps)
        print(task["source"])
        if args.show:
            return 0
        pool = Pool(jobs=1, timeout=args.timeout)
        try:
            res = pool.map([task])[0]
        finally:
            pool.close()
        print(json.dumps(res, indent=1))
        return 1 if res["status"] in FAILURES else 0
    def report(s: dict[str, Any]) -> None:
        if s["refusal_reasons"]:
            print("refusals: " + "; ".join(f"{v}x {k}" for k, v in s["refusal_reasons"].items()))
        print(summary_line(s), flush=True)
        if args.json:
            args.json.write_text(json.dumps(s, indent=1) + "\n")

    s = fuzz(args.n, args.seed, jobs=args.jobs, timeout=args.timeout, shrink=args.shrink,
             out=args.out, literal_steps=args.literal_steps, sanitize=args.sanitize,
             report=report)
    if args.json and args.shrink:
        args.json.write_text(json.dumps(s, indent=1) + "\n")
    return 1 if s["unknown"] else 0


if __name__ == "__main__":
    sys.exit(main())
