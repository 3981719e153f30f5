"""Timing one call: warm-up, repeated samples until a time budget, robust statistics; and the
progress bar of long sweeps."""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO


@dataclass(frozen=True)
class Timing:
    """Seconds per call. ``spread`` is the interquartile range over the median (0.02: the middle
    half of the samples lie within 2% of each other); ``samples`` the timed samples, each of
    ``inner`` back-to-back calls (``inner > 1`` only for calls too short to time alone)."""

    median: float
    min: float
    max: float
    mean: float
    spread: float
    samples: int
    inner: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Budget:
    """How long to spend on one measurement: ``seconds`` of timed samples (after warm-up), at
    least ``min_samples`` and at most ``max_samples`` of them; a sample lasts at least
    ``min_sample`` seconds (short calls are repeated inside one sample)."""

    seconds: float = 1.0
    min_samples: int = 5
    max_samples: int = 1000
    min_sample: float = 2e-4
    warmup_seconds: float = 0.1

    @staticmethod
    def quick() -> Budget:
        return Budget(seconds=0.2, min_samples=3, max_samples=200, warmup_seconds=0.02)


def _quantile(sorted_xs: list[float], q: float) -> float:
    pos = q * (len(sorted_xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(per_call: list[float], inner: int) -> Timing:
    xs = sorted(per_call)
    med = statistics.median(xs)
    iqr = _quantile(xs, 0.75) - _quantile(xs, 0.25)
    return Timing(median=med, min=xs[0], max=xs[-1], mean=statistics.fmean(xs),
                  spread=iqr / med if med > 0 else 0.0, samples=len(xs), inner=inner)


def _time_calls(fn: Callable[[], Any], count: int) -> float:
    clock = time.perf_counter
    start = clock()
    for _ in range(count):
        fn()
    return clock() - start


def measure(fn: Callable[[], Any], budget: Budget | None = None, warm: bool = False) -> Timing:
    """Time ``fn()``: warm-up (skipped when ``warm``: the caller just ran it), then samples
    until the budget is spent. Calls longer than the whole budget get ``min_samples`` anyway."""
    return measure_interleaved([fn], budget, [warm])[0]


def measure_interleaved(fns: Sequence[Callable[[], Any]], budget: Budget | None = None,
                        warm: Sequence[bool] | None = None, rounds: int = 1,
                        before_round: Callable[[int], Any] | None = None) -> list[Timing]:
    """Time several functions in turns: ``rounds`` rounds, each giving every function
    ``1/rounds`` of the budget, the order rotated each round, so that a burst of load from
    outside (a virtual machine's neighbours) falls on all of them alike instead of on
    whichever was being timed. Each function's timing is over all its samples.

    Each round warms a function up again for ``budget.warmup_seconds`` (the others ran in
    between: cold caches, and their thread pools still spinning for a while), except
    functions whose first call outlasted a round's share: those are timed straight away.
    ``warm[k]``: the caller just ran ``fns[k]``, so its first call is a sample.
    ``before_round(r)`` runs before round ``r`` (waiting for idle CPUs, say)."""
    budget = budget or Budget()
    warm = list(warm) if warm is not None else [False] * len(fns)
    share = budget.seconds / rounds
    per_call: list[list[float]] = [[] for _ in fns]
    inner = [1] * len(fns)
    long_call = [False] * len(fns)
    for r in range(rounds):
        if before_round is not None:
            before_round(r)
        least = math.ceil(budget.min_samples * (r + 1) / rounds)
        most = max(least, math.ceil(budget.max_samples * (r + 1) / rounds))
        for k in (r + j for j in range(len(fns))):
            k %= len(fns)
            fn, samples = fns[k], per_call[k]
            if r == 0:
                one = _time_calls(fn, 1)
                if warm[k]:  # already warm: the first call is a sample
                    samples.append(one)
                if one < budget.min_sample:
                    inner[k] = math.ceil(budget.min_sample / max(one, 1e-9))
                    samples.clear()
                long_call[k] = one >= share
            spent = one if r == 0 else 0.0
            if not long_call[k] and not (r == 0 and warm[k]):
                while spent < budget.warmup_seconds:
                    spent += _time_calls(fn, 1)
            total = 0.0
            while len(samples) < least or (total < share and len(samples) < most):
                sample = _time_calls(fn, inner[k])
                samples.append(sample / inner[k])
                total += sample
    return [summarize(samples, n) for samples, n in zip(per_call, inner, strict=True)]


class Progress:
    """``[#####-----] 12/40 matmul N=512 ...`` on stderr, redrawn in place. It appears only
    once ``after`` seconds have passed (short sweeps stay quiet) and only on a terminal unless
    ``force`` (then one line per step, for logs)."""

    def __init__(self, total: int, label: str = "", after: float = 1.0,
                 enabled: bool = True, force: bool = False, stream: TextIO | None = None):
        self.total = max(1, total)
        self.label = label
        self.after = after
        self.stream = stream or sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled and (tty or force)
        self.inplace = tty
        self.start = time.perf_counter()
        self.done = 0
        self.shown = False

    def step(self, what: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if elapsed < self.after and self.done < self.total:
            return
        width = 24
        fill = round(width * self.done / self.total)
        eta = elapsed / self.done * (self.total - self.done)
        line = (f"[{'#' * fill}{'-' * (width - fill)}] {self.done}/{self.total} "
                f"{self.label} {what}  {elapsed:.0f}s, ~{eta:.0f}s left")
        if self.inplace:
            self.stream.write("\r" + line[:118].ljust(118))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.inplace:
            self.stream.write("\n")
            self.stream.flush()


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs since boot, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def cpu_busy(interval: float = 0.2) -> float:
    """Fraction of all CPUs busy during ``interval`` seconds (while this process sleeps, so it is
    other processes' load); 0.0 where /proc/stat is missing."""
    before = _cpu_times()
    time.sleep(interval)
    after = _cpu_times()
    if before is None or after is None or after[1] == before[1]:
        return 0.0
    return (after[0] - before[0]) / (after[1] - before[1])


def wait_quiet(threshold: float = 0.15, max_wait: float = 60.0) -> float:
    """Wait (up to ``max_wait`` seconds) until other processes leave the CPUs mostly idle, so
    that multi-threaded timings are not disturbed; returns the last busy fraction seen."""
    deadline = time.monotonic() + max_wait
    busy = cpu_busy()
    while busy > threshold and time.monotonic() < deadline:
        busy = cpu_busy(0.5)
    return busy
