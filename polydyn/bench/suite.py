"""The standard suite: every bundled kernel over the sizes the performance issues name, plus
compile cost and per-call overhead (``bench/run_all.py``, ``polydyn bench --suite``).

Full mode uses the sizes of the speed bars (issue 4); ``quick`` uses small sizes of the same
shapes so that CI can afford it (a few minutes on 2 cores).
"""

from __future__ import annotations

import pickle
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .costs import call_overhead, compile_costs
from .runner import Settings, SweepResult, sweep
from .sweep import parse_fix, parse_sweep
from .timing import Budget, Progress
from .workflow import bench_operator, compiler, write_outputs


@dataclass(frozen=True)
class Entry:
    """One sweep of the suite: ``sweeps``/``fixed`` as on the command line, or explicit
    ``points`` (plotted side by side, no axis); ``extra`` baselines on top of the settings'."""

    kernel: str
    label: str
    sweeps: tuple[str, ...] = ()
    fixed: str = ""
    points: tuple[str, ...] = ()
    metric: str = "auto"
    extra: tuple[str, ...] = ()  # more baselines (torch.compile: costly, full mode only)


def _pts(*specs: str) -> tuple[str, ...]:
    return specs


TC = ("torch.compile",)


def full_suite() -> list[Entry]:
    conv = "KH=3,KW=3"
    return [
        Entry("matmul", "square", ("N=M=K=256,500,512,1000,1024,1531,2048",), metric="GFLOP/s",
              extra=TC),
        Entry("matmul", "skinny", ("N=1,8,33,128",), "M=1024,K=1024", metric="GFLOP/s"),
        Entry("matmul", "gemv", points=_pts("N=1,K=4096,M=4096", "N=1,K=4096,M=11008",
                                            "N=1,K=11008,M=4096"), metric="GFLOP/s"),
        Entry("matmul", "tiles", ("N=M=K=tiles:16,32,64,128",), metric="GFLOP/s"),
        Entry("batched_matmul", "", ("N=M=K=32,64,128,256",), "B=8", metric="GFLOP/s"),
        Entry("bias_relu", "", points=_pts("N=1,M=1024", "N=128,M=1000", "N=1024,M=1024",
                                           "N=4096,M=4097", "N=8192,M=8192"), metric="GB/s",
              extra=TC),
        Entry("softmax", "rows", ("L=16,127,512,2048",), "N=64", metric="GB/s"),
        Entry("softmax", "large", points=_pts("N=512,L=4096"), metric="GB/s"),
        Entry("softmax", "sweep", ("L=1:4096:log12",), "N=64", metric="GB/s", extra=TC),
        Entry("layernorm", "", points=_pts("N=1,D=768", "N=128,D=768", "N=512,D=1024",
                                           "N=2048,D=4096"), metric="GB/s", extra=TC),
        Entry("conv2d", "", points=_pts(f"B=1,C=64,F=64,H=56,W=56,{conv}",
                                        f"B=8,C=64,F=64,H=28,W=28,{conv}",
                                        f"B=1,C=32,F=64,H=57,W=57,{conv}",
                                        f"B=4,C=3,F=32,H=224,W=224,{conv}",
                                        f"B=1,C=256,F=256,H=14,W=14,{conv}",
                                        f"B=1,C=512,F=512,H=7,W=7,{conv}"), metric="GFLOP/s",
              extra=TC),
        Entry("maxpool", "", points=_pts("B=1,C=64,H=112,W=112", "B=8,C=64,H=56,W=56",
                                         "B=1,C=3,H=225,W=225"), metric="GB/s"),
        Entry("transpose", "", ("N=M=256,1000,1024,2048,4096",), metric="GB/s"),
        Entry("jacobi2d", "", ("N=500,1000,2000",), "T=20", metric="GFLOP/s"),
    ]


def quick_suite() -> list[Entry]:
    conv = "KH=3,KW=3"
    return [
        Entry("matmul", "square", ("N=M=K=64,127,256",), metric="GFLOP/s"),
        Entry("matmul", "skinny", ("N=1,8,33",), "M=256,K=256", metric="GFLOP/s"),
        Entry("batched_matmul", "", ("N=M=K=16,64",), "B=4", metric="GFLOP/s"),
        Entry("bias_relu", "", points=_pts("N=1,M=1024", "N=128,M=1000", "N=1024,M=1024"),
              metric="GB/s"),
        Entry("softmax", "rows", ("L=16,127,512,2048",), "N=64", metric="GB/s"),
        Entry("layernorm", "", points=_pts("N=1,D=768", "N=128,D=768"), metric="GB/s"),
        Entry("conv2d", "", points=_pts(f"B=1,C=16,F=16,H=34,W=34,{conv}",
                                        f"B=2,C=3,F=8,H=64,W=64,{conv}"), metric="GFLOP/s"),
        Entry("maxpool", "", points=_pts("B=1,C=16,H=64,W=64", "B=2,C=3,H=57,W=57"),
              metric="GB/s"),
        Entry("transpose", "", ("N=M=256,1000",), metric="GB/s"),
        Entry("jacobi2d", "", ("N=100,300",), "T=20", metric="GFLOP/s"),
    ]


@dataclass
class SuiteResult:
    sweeps: list[SweepResult]
    compile: list[dict[str, Any]] = field(default_factory=list)
    overhead: list[dict[str, Any]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    markdown: str = ""


def import_kernels() -> Any:
    """The bundled ``kernels`` package (the repository root is put on sys.path if needed)."""
    try:
        import kernels
    except ImportError:
        root = Path(__file__).resolve().parents[2]
        if (root / "kernels" / "__init__.py").is_file():
            sys.path.insert(0, str(root))
        import kernels
    return kernels


def run_entry(entry: Entry, settings: Settings) -> SweepResult:
    kernels = import_kernels()
    op, numpy_impl = kernels.load(entry.kernel)
    extra = tuple(b for b in entry.extra
                  if b not in settings.baselines and "torch" in settings.baselines)
    settings = replace(settings, metric=entry.metric, baselines=settings.baselines + extra)
    fixed = parse_fix([entry.fixed]) if entry.fixed else {}
    if entry.points:
        points = [{**fixed, **parse_fix([p])} for p in entry.points]
        ordered = [{s: p[s] for s in op.scop.syms} for p in points]
        return sweep(op, numpy_impl, ordered, settings, compiler(op), label=entry.label)
    sweeps = [parse_sweep(s) for s in entry.sweeps]
    return bench_operator(op, numpy_impl, sweeps, fixed, settings, label=entry.label)


def default_settings(quick: bool) -> Settings:
    if quick:
        return Settings(budget=Budget.quick())
    return Settings(budget=Budget(seconds=1.0, min_samples=4), quiet=15.0, rounds=4)


def _checkpoint(parts: Path, entry: Entry) -> Path:
    return parts / f"{entry.kernel}-{entry.label or 'all'}.pkl"


def _entry_results(entries: Sequence[Entry], settings: Settings, parts: Path,
                   resume: bool, deadline: float | None = None
                   ) -> tuple[list[SweepResult], list[str]]:
    """Each entry's SweepResult, saved under ``parts`` as soon as it is measured so that an
    interrupted full run can ``resume`` (the checkpoints are private, pickled, and removed
    once the suite's files are written); past ``deadline`` (seconds from now) no entry is
    started: their names come back as the second list."""
    progress = Progress(len(entries), "suite", after=0.0, enabled=settings.progress,
                        force=True)
    inner = replace(settings, progress=False)
    parts.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    results, late = [], []
    for entry in entries:
        saved = _checkpoint(parts, entry)
        if resume and saved.is_file():
            results.append(pickle.loads(saved.read_bytes()))
            progress.step(f"{entry.kernel} {entry.label} (resumed)")
            continue
        if deadline is not None and time.monotonic() - start >= deadline:
            late.append(f"{entry.kernel}-{entry.label}" if entry.label else entry.kernel)
            progress.step(f"{entry.kernel} {entry.label} (past the deadline, not run)")
            continue
        result = run_entry(entry, inner)
        saved.write_bytes(pickle.dumps(result))
        results.append(result)
        progress.step(f"{entry.kernel} {entry.label}")
    progress.close()
    return results, late


def run_suite(out: Path, quick: bool = False, settings: Settings | None = None,
              plots: bool = True, only: Sequence[str] = (), resume: bool = False,
              costs: bool = True, deadline: float | None = None) -> SuiteResult:
    """Run the suite (``only``: kernel names or ``kernel-label`` to restrict it), write
    ``suite.csv``, ``suite.json``, ``suite.md`` and the PNGs under ``out``; ``resume`` reuses
    the sweeps an interrupted run of the same suite already measured; ``costs``: also measure
    the C target's compile time and call overhead; ``deadline``: seconds after which no
    further sweep starts (those are listed in the JSON's ``not_run``), for a run that must
    end within a time limit."""
    settings = settings or default_settings(quick)
    entries = quick_suite() if quick else full_suite()
    if only:
        entries = [e for e in entries if e.kernel in only or f"{e.kernel}-{e.label}" in only]
    parts = out / ".partial"
    results, late = _entry_results(entries, settings, parts, resume, deadline)
    kernels = import_kernels()
    names = sorted({e.kernel for e in entries})
    compiled: list[dict[str, Any]] = []
    overhead: list[dict[str, Any]] = []
    if costs:
        compiled = compile_costs([kernels.load(n)[0] for n in names], repeats=1 if quick else 3)
        overhead = call_overhead(kernels.load("bias_relu"), quick=quick)
    suite = SuiteResult(results, compiled, overhead)
    suite.files, suite.markdown = write_outputs(
        results, out, "suite", settings, plots,
        extra={"mode": "quick" if quick else "full", "compile": compiled, "overhead": overhead,
               **({"not_run": late} if late else {})})
    shutil.rmtree(parts, ignore_errors=True)
    return suite
