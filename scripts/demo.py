"""The main job: compile bundled kernels once each, run them over several shapes, check every
shape and compare its speed with NumPy.

Each shape is checked against the operator's reference semantics (its loop nest run on NumPy).
Where the reference interpreter would take too long at that size, the row says so: the result
is checked against the kernel module's NumPy implementation, and the reference is run at the
smallest shape found in the same variant instead. Each kernel call and its NumPy counterpart
are warmed up, then timed over repeated calls (median, and the interquartile spread). The last
line counts the checks and gives the geometric mean of the speed-ups over NumPy; the exit
status is 1 when a check failed.

    python scripts/demo.py [--quick] [--kernels matmul,softmax] [--ref-limit N]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polydyn as pd
from kernels import load
from polydyn.bench.timing import Budget, Timing, cpu_busy, measure_interleaved
from polydyn.bench.work import choose_metric, rate, work
from polydyn.testing import call_args, check_kernel, make_inputs

REFERENCE_LIMIT = 200_000  # statement instances the reference interpreter runs in about 1 s

SHAPES = {
    "matmul": [dict(N=1, M=64, K=64), dict(N=37, M=29, K=41), dict(N=256, M=256, K=256),
               dict(N=500, M=500, K=500), dict(N=1000, M=3, K=64)],
    "softmax": [dict(N=7, L=13), dict(N=64, L=512), dict(N=512, L=4096)],
    "bias_relu": [dict(N=1, M=1024), dict(N=128, M=1000), dict(N=4096, M=4097)],
    "conv2d": [dict(B=1, C=3, F=4, H=9, W=9, KH=3, KW=3),
               dict(B=1, C=64, F=64, H=56, W=56, KH=3, KW=3)],
}
# --quick: the first (small) shape of each kernel, and a short time budget
QUICK_BUDGET = Budget(seconds=0.05, min_samples=3, max_samples=50, warmup_seconds=0.01)
BUDGET = Budget(seconds=0.25, min_samples=5, max_samples=2000, warmup_seconds=0.1)


@dataclass
class Tally:
    """Checks passed and run, and the speed-up over NumPy of every timed shape."""

    passed: int = 0
    total: int = 0
    speedups: list[float] = field(default_factory=list)

    def record(self, ok: bool) -> None:
        self.passed += ok
        self.total += 1

    def summary(self) -> str:
        n = len(self.speedups)
        geo = math.exp(sum(math.log(s) for s in self.speedups) / n) if n else float("nan")
        return (f"{self.passed} of {self.total} checks passed; geometric-mean speed vs NumPy: "
                f"{geo:.2f}x over {n} shapes")


def shown(sizes: dict) -> str:
    return ", ".join(f"{s}={v}" for s, v in sizes.items())


def smaller_in_variant(k: pd.Kernel, sizes: dict, limit: int) -> dict | None:
    """A shape that runs the same variant as ``sizes`` with at most ``limit`` statement
    instances: halve the largest size that keeps the variant, again and again."""
    name = k.select(**sizes).name
    current = dict(sizes)
    while work(k.scop, current).instances > limit:
        for sym in sorted(current, key=lambda s: -current[s]):
            trial = {**current, sym: current[sym] // 2}
            if trial[sym] < current[sym] and _runs(k, trial) == name:
                current = trial
                break
        else:
            return None
    return current


def _runs(k: pd.Kernel, sizes: dict) -> str | None:
    try:
        return k.select(**sizes).name
    except pd.PolydynError:  # outside the operator's assumptions
        return None


def check_reference(k: pd.Kernel, sizes: dict) -> tuple[bool, str]:
    try:
        return True, f"max err {check_kernel(k, sizes):.1e}"
    except AssertionError as exc:
        return False, f"FAILED: {exc}"


def check_numpy(k: pd.Kernel, sizes: dict, numpy_impl) -> tuple[bool, str]:
    """The kernel against the module's NumPy formula, within 1e-4 of the result's scale."""
    inputs = make_inputs(k, sizes)
    args, kw = call_args(k, inputs, sizes)
    got = k(*args, **kw)
    want = numpy_impl(*call_args(k, inputs, sizes)[0], **kw)
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, f"FAILED: shape {got.shape}, NumPy's {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    ok = err <= 1e-4 * scale
    return ok, f"max err {err:.1e}" if ok else f"FAILED: max err {err:.3g} (scale {scale:.3g})"


def check_shape(k: pd.Kernel, sizes: dict, numpy_impl, limit: int, tally: Tally) -> str:
    """Check one shape; return what the row says about it."""
    if work(k.scop, sizes).instances <= limit:
        ok, note = check_reference(k, sizes)
        tally.record(ok)
        return f"checked against the reference: {note}"
    ok, note = check_numpy(k, sizes, numpy_impl)
    tally.record(ok)
    text = f"checked against NumPy ({note}): reference too slow at this size"
    small = smaller_in_variant(k, sizes, limit)
    if small is None:
        return text + "; no small shape of the same variant found"
    ok, note = check_reference(k, small)
    tally.record(ok)
    return text + f"; reference at {shown(small)}, same variant: {note}"


def fmt_time(t: Timing) -> str:
    unit, scale = min((("s", 1.0), ("ms", 1e3), ("us", 1e6), ("ns", 1e9)),
                      key=lambda u: abs(math.log10(max(t.median * u[1], 1e-12)) - 1.5))
    return f"{t.median * scale:7.2f} {unit:2} ±{100 * t.spread:3.0f}%"


def time_shape(k: pd.Kernel, sizes: dict, numpy_impl, budget: Budget) -> tuple[Timing, Timing]:
    """Median time of the kernel and of NumPy on the same inputs, each warmed up first, timed
    in turns (two rounds) so that a burst of outside load falls on both. The inputs are copied
    per function, so an in-place kernel does not feed NumPy."""
    inputs = make_inputs(k, sizes, seed=1)
    args, kw = call_args(k, inputs, sizes)
    np_args, _ = call_args(k, inputs, sizes)
    mine, theirs = measure_interleaved(
        [lambda: k(*args, **kw), lambda: numpy_impl(*np_args, **kw)], budget, rounds=2)
    return mine, theirs


def run_kernel(name: str, shapes: list[dict], budget: Budget, limit: int, tally: Tally) -> None:
    op, numpy_impl = load(name)
    t = time.perf_counter()
    k = pd.compile(op)
    print(f"== {name}: {len(k.variants)} variants "
          f"({', '.join(v.name for v in k.variants)}), compiled in "
          f"{time.perf_counter() - t:.1f} s")
    print(f"  {'sizes':38} {'variant':9} {'polydyn':>13} {'NumPy':>13} {'speed-up':>8}  rate")
    for sizes in shapes:
        verdict = check_shape(k, sizes, numpy_impl, limit, tally)
        mine, theirs = time_shape(k, sizes, numpy_impl, budget)
        speedup = theirs.median / mine.median
        tally.speedups.append(speedup)
        w = work(k.scop, sizes)
        metric = choose_metric(w)
        print(f"  {shown(sizes):38} {k.select(**sizes).name:9} {fmt_time(mine)} "
              f"{fmt_time(theirs)} {speedup:7.2f}x  {rate(w, mine.median, metric):.1f} {metric}")
        print(f"      {verdict}")


def note_load() -> None:
    """Say so when other processes keep the CPUs busy. Then, unless the user chose a policy,
    idle OpenMP threads sleep instead of spinning (before the first kernel loads libgomp):
    a spinning thread holds a core that a descheduled thread of the same kernel needs to reach
    the barrier, and calls of a few microseconds take milliseconds."""
    busy = cpu_busy(0.5)
    if busy <= 0.25:
        return
    print(f"note: other processes kept {100 * busy:.0f}% of the {os.cpu_count()} CPUs busy; "
          "timings suffer, NumPy's as well as polydyn's", end="")
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "passive"
        print("; OMP_WAIT_POLICY=passive set for the kernels' threads", end="")
    print("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="only the first (smallest) shape of each kernel, short timings")
    parser.add_argument("--kernels", help=f"comma list of {', '.join(SHAPES)} (default: all)")
    parser.add_argument("--ref-limit", type=int, default=REFERENCE_LIMIT,
                        help="statement instances above which the reference is run at a "
                             "smaller shape of the same variant (default %(default)s)")
    args = parser.parse_args(argv)
    names = args.kernels.split(",") if args.kernels else list(SHAPES)
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    budget = QUICK_BUDGET if args.quick else BUDGET
    print(f"polydyn {pd.__version__}: compile once, run any size; times are medians of "
          f"repeated calls after a warm-up (± the interquartile spread), speed-up = NumPy time "
          f"/ polydyn time\n")
    note_load()
    tally = Tally()
    for name in names:
        shapes = SHAPES[name][:1] if args.quick else SHAPES[name]
        run_kernel(name, shapes, budget, args.ref_limit, tally)
    print(f"\n{tally.summary()}")
    return 0 if tally.passed == tally.total else 1


if __name__ == "__main__":
    sys.exit(main())
