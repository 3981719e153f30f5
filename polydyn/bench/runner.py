"""One sweep of one operator: compile, then for each point check every implementation once and
time it (after waiting up to ``Settings.quiet`` seconds for other processes to leave the CPUs
idle: on a shared 2-core machine one busy neighbour halves a 2-thread kernel). Produces a
SweepResult (rows of Measurements) for report.py."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import PolydynError
from ..scop.interp import check_context
from ..testing import make_inputs
from .baselines import (
    Impl,
    ScopRef,
    generic_index,
    kernel_impl,
    naive_kernel,
    numpy_baseline,
    torch_baseline,
    torch_compile_baseline,
    torch_cuda_baseline,
)
from .check import Checker
from .timing import Budget, Progress, Timing, cpu_busy, measure_interleaved, wait_quiet
from .work import Work, choose_metric, rate, work


@dataclass(frozen=True)
class Settings:
    """``baselines``: any of numpy, torch, torch.compile, torch-cuda, naive; ``targets``: c,
    opencl (the first that compiles is the sweep's kernel: dispatch boundaries, variants);
    ``generic``: also time the forced generic variant when there are several; ``metric``: auto,
    GFLOP/s or GB/s;
    ``quiet``: seconds to wait at most for idle CPUs before each round of measurements (0: no
    wait); ``rounds``: the implementations of a point are timed in turns, this many rounds
    (``timing.measure_interleaved``)."""

    budget: Budget = field(default_factory=Budget)
    baselines: tuple[str, ...] = ("numpy", "torch", "naive")
    targets: tuple[str, ...] = ("c",)
    generic: bool = True
    metric: str = "auto"
    seed: int = 0
    progress: bool = True
    quiet: float = 0.0
    rounds: int = 1


@dataclass
class Measurement:
    """One implementation at one point. ``status``: ok, wrong (failed its check, not timed),
    error (raised), skipped (e.g. sizes outside the operator's assumptions)."""

    operator: str
    impl: str
    target: str
    sizes: dict[str, int]
    status: str
    variant: str = ""
    message: str = ""
    check: str = ""
    max_error: float = 0.0
    flops: int = 0
    bytes: int = 0
    timing: Timing | None = None
    busy: float = 0.0

    def rate(self, metric: str, best: bool = False) -> float:
        if self.timing is None:
            return math.nan
        w = Work(self.flops, self.bytes, 0, {})
        return rate(w, self.timing.min if best else self.timing.median, metric)


@dataclass
class SweepResult:
    operator: str
    axis: tuple[str, ...]
    axis_log: bool
    metric: str
    points: list[dict[str, int]]
    rows: list[Measurement]
    variants: list[dict[str, str]]
    boundaries: dict[str, list[tuple[int, str, str]]]
    impls: dict[str, str]
    skipped: dict[str, str]
    compile_s: float
    label: str = ""
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)


@dataclass
class Setup:
    """The compiled kernel, the implementations to time, and why others are missing."""

    kernel: Any
    impls: list[Impl]
    skipped: dict[str, str]
    compile_s: float


def _polydyn_impls(op: Any, settings: Settings, compile_fn: Callable[..., Any],
                   skipped: dict[str, str]) -> tuple[Any, list[Impl], float]:
    """The kernel for each target, and the sweep's kernel (the C one, else the first that
    compiled) with its compile time."""
    impls, kernel, compile_s = [], None, 0.0
    for target in settings.targets:
        name = "polydyn" if target == "c" else f"polydyn-{target}"
        start = time.perf_counter()
        try:
            k = compile_fn(op, target=target)
        except (PolydynError, ImportError, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            skipped[name] = f"{type(exc).__name__}: {first}"
            continue
        if kernel is None or target == "c":
            kernel, compile_s = k, time.perf_counter() - start
        impls.append(kernel_impl(name, k, note=f"{len(k.variants)} variant(s), dispatched"))
    return kernel, impls, compile_s


def _schedule_baselines(op: Any, kernel: Any, settings: Settings,
                        compile_fn: Callable[..., Any], skipped: dict[str, str]) -> list[Impl]:
    """``naive`` (original order) when the core can compile it, and the forced generic
    variant (which also stands in for naive when it cannot)."""
    impls = []
    want_naive = "naive" in settings.baselines
    naive = naive_kernel(op, kernel.scop, compile_fn) if want_naive else None
    if naive is not None:
        impls.append(kernel_impl("naive", naive[0], note=naive[1]))
    stand_in = want_naive and naive is None
    if (settings.generic and len(kernel.variants) > 1) or stand_in:
        note = "dispatch forced to the generic (last) variant"
        if stand_in:
            note += "; stands in for naive (no original-order hook in the core yet)"
            skipped["naive"] = "no original-order schedule hook in the core; see generic"
        name = "generic" if kernel.target == "c" else f"generic-{kernel.target}"
        impls.append(kernel_impl(name, kernel, generic_index(kernel), note=note))
    return impls


def _library_baselines(scop: Any, numpy_impl: Callable[..., Any] | None, settings: Settings,
                       skipped: dict[str, str]) -> list[Impl]:
    makers: list[tuple[str, Callable[[], tuple[Impl | None, str]]]] = [
        ("numpy", lambda: (numpy_baseline(scop, numpy_impl),
                           "the operator module has no numpy_impl")),
        ("torch", lambda: torch_baseline(scop)),
        ("torch.compile", lambda: torch_compile_baseline(scop)),
        ("torch-cuda", lambda: torch_cuda_baseline(scop)),
    ]
    impls = []
    for name, make in makers:
        if name in settings.baselines:
            impl, why = make()
            if impl is None:
                skipped[name] = why
            else:
                impls.append(impl)
    return impls


def build_impls(op: Any, numpy_impl: Callable[..., Any] | None, settings: Settings,
                compile_fn: Callable[..., Any]) -> Setup:
    skipped: dict[str, str] = {}
    kernel, impls, compile_s = _polydyn_impls(op, settings, compile_fn, skipped)
    if kernel is not None:
        impls += _schedule_baselines(op, kernel, settings, compile_fn, skipped)
        impls += _library_baselines(kernel.scop, numpy_impl, settings, skipped)
    return Setup(kernel, impls, skipped, compile_s)


def run_point(setup: Setup, numpy_impl: Callable[..., Any] | None, sizes: Mapping[str, int],
              settings: Settings) -> list[Measurement]:
    scop = setup.kernel.scop
    base = {"operator": scop.name, "sizes": dict(sizes)}
    try:
        check_context(scop, sizes)
    except PolydynError as exc:
        return [Measurement(**base, impl=i.name, target=i.target, status="skipped",
                            message=str(exc)) for i in setup.impls]
    w = work(scop, sizes)
    inputs = make_inputs(ScopRef(scop), sizes, settings.seed)
    checker = Checker(scop, numpy_impl, inputs, sizes, w, settings.seed)
    rows, timed = [], []
    for impl in setup.impls:
        row = Measurement(**base, impl=impl.name, target=impl.target, status="ok",
                          flops=w.flops, bytes=w.bytes)
        rows.append(row)
        try:
            prepared = impl.prepare(inputs, sizes)
            row.variant = prepared.variant
            start = time.perf_counter()
            prepared.call()
            first = time.perf_counter() - start
            verdict = checker.check(impl, prepared.results())
            row.check, row.max_error = verdict.how, verdict.error
            if not verdict.ok:
                row.status, row.message = "wrong", verdict.message
            else:
                # a long first call was warm-up enough; short ones are warmed again
                timed.append((row, prepared, first > 0.25))
        except Exception as exc:  # one broken implementation must not end the sweep
            row.status, row.message = "error", f"{type(exc).__name__}: {exc}"
    _time_rows(timed, settings)
    return rows


def _time_rows(timed: list[tuple[Measurement, Any, bool]], settings: Settings) -> None:
    """Time the checked implementations of one point, interleaved in ``settings.rounds``
    rounds; each row's ``busy`` is the most that other processes kept the CPUs busy just
    before a round."""
    if not timed:
        return
    busy = []

    def before_round(_r: int) -> None:
        busy.append(wait_quiet(max_wait=settings.quiet) if settings.quiet else cpu_busy(0.05))

    try:
        timings = measure_interleaved([p.call for _, p, _ in timed], settings.budget,
                                      [w for _, _, w in timed], settings.rounds, before_round)
    except Exception as exc:
        # find the one that raised (a broken implementation must not end the sweep)
        for row, prepared, _ in timed:
            try:
                prepared.call()
            except Exception as one:
                row.status, row.message = "error", f"{type(one).__name__}: {one}"
        if all(row.status == "ok" for row, _, _ in timed):
            raise exc
        _time_rows([t for t in timed if t[0].status == "ok"], settings)
        return
    for (row, _, _), timing in zip(timed, timings, strict=True):
        row.timing, row.busy = timing, max(busy)


def _variant_at(kernel: Any, sizes: Mapping[str, int]) -> str:
    try:
        return kernel.select(**sizes).name
    except PolydynError:
        return "-"


def variant_boundaries(kernel: Any, base: Mapping[str, int], axis: Sequence[str], lo: int,
                       hi: int, samples: int = 256) -> list[tuple[int, str, str]]:
    """``(x, before, after)`` for each x in [lo, hi] where the dispatcher's choice changes
    along ``axis`` (tied syms move together), found by sampling then bisecting; changes that
    repeat faster than the sampling (``N mod 32 = 0`` regions) are not all found."""
    def at(x: int) -> str:
        return _variant_at(kernel, {**base, **dict.fromkeys(axis, x)})

    if hi <= lo:
        return []
    if hi - lo + 1 <= samples:
        xs = list(range(lo, hi + 1))
    else:
        ratio = (hi / max(lo, 1)) ** (1 / (samples - 1))
        xs = sorted({lo, hi} | {min(hi, round(max(lo, 1) * ratio ** k)) for k in range(samples)})
    names = [at(x) for x in xs]
    found = []
    for (x0, v0), (x1, v1) in itertools.pairwise(zip(xs, names, strict=True)):
        if v0 == v1:
            continue
        while x1 - x0 > 1:  # at(x0) = v0 != at(x1)
            mid = (x0 + x1) // 2
            if at(mid) == v0:
                x0 = mid
            else:
                x1 = mid
        found.append((x1, v0, at(x1)))
    return found


def sweep(op: Any, numpy_impl: Callable[..., Any] | None, points: Sequence[dict[str, int]],
          settings: Settings, compile_fn: Callable[..., Any], axis: Sequence[str] = (),
          axis_log: bool = False, label: str = "") -> SweepResult:
    """Check and time every implementation at every point."""
    setup = build_impls(op, numpy_impl, settings, compile_fn)
    if setup.kernel is None:
        raise PolydynError(f"{getattr(op, 'name', op)}: no kernel to benchmark "
                           f"({'; '.join(f'{k}: {v}' for k, v in setup.skipped.items())})")
    kernel = setup.kernel
    scop = kernel.scop
    metric = settings.metric
    if metric == "auto":
        biggest = max(points, key=lambda p: math.prod(max(1, v) for v in p.values()))
        metric = choose_metric(work(scop, biggest))
    progress = Progress(len(points) * len(setup.impls), scop.name, enabled=settings.progress)
    rows: list[Measurement] = []
    for sizes in points:
        for row in run_point(setup, numpy_impl, sizes, settings):
            rows.append(row)
            progress.step(f"{row.impl} {_sizes_text(sizes)}")
    progress.close()
    boundaries: dict[str, list[tuple[int, str, str]]] = {}
    if axis:
        for group, members in groups(points, axis).items():
            xs = [p[axis[0]] for p in members]
            base = {k: v for k, v in members[0].items() if k not in axis}
            if len(xs) > 1:
                boundaries[group] = variant_boundaries(kernel, base, axis, min(xs), max(xs))
    variants = [{"name": v.name, "region": str(v.region), "summary": v.summary}
                for v in kernel.variants]
    return SweepResult(scop.name, tuple(axis), axis_log, metric, list(points), rows, variants,
                       boundaries, {i.name: i.note for i in setup.impls}, setup.skipped,
                       setup.compile_s, label,
                       {i.name: i.stats for i in setup.impls if i.stats})


def groups(points: Sequence[Mapping[str, int]], axis: Sequence[str]
           ) -> dict[str, list[Mapping[str, int]]]:
    """The points split by the values of the syms off the axis that vary (one plot line set
    each), keyed by a label such as ``"M=64 K=128"`` ("" when only the axis varies)."""
    varying = [k for k in (points[0] if points else {}) if k not in axis
               and len({p[k] for p in points}) > 1]
    out: dict[str, list[Mapping[str, int]]] = {}
    for p in points:
        out.setdefault(" ".join(f"{k}={p[k]}" for k in varying), []).append(p)
    return out


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())
