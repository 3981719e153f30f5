"""From an operator (or an operator file) and sweep specifications to written results."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..operator_files import pick_operator, with_assume
from .report import suite_markdown, write_csv, write_json
from .runner import Settings, SweepResult, sweep
from .sweep import Sweep, complete, expand, parse_fix, parse_sweep


def numpy_impl_of(op: Any) -> Callable[..., Any] | None:
    """The ``numpy_impl`` defined next to a Python operator, if any."""
    fn = getattr(op, "fn", None)
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    return getattr(module, "numpy_impl", None)


def compiler(scop_or_op: Any) -> Callable[..., Any]:
    """``pd.compile`` bound to what should be compiled (an operator, or a Scop with extra
    assumptions)."""
    from ..pipeline import compile as pd_compile

    def compile_fn(_op: Any, **kw: Any) -> Any:
        return pd_compile(scop_or_op, **kw)

    return compile_fn


def points_of(scop: Any, sweeps: Sequence[Sweep], fixed: dict[str, int]
              ) -> list[dict[str, int]]:
    return complete(expand(sweeps, fixed), scop.syms, scop.index_syms)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "bench"


def write_outputs(results: Sequence[SweepResult], out: Path, stem: str, settings: Settings,
                  plots: bool = True, extra: dict[str, Any] | None = None
                  ) -> tuple[list[Path], str]:
    """``stem.csv``, ``stem.json``, ``stem.md`` and one PNG per sweep; returns the files and
    the markdown text."""
    out.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    if plots:
        from .plot import plot_sweep

        for r in results:
            name = slug(f"{r.operator}-{r.label}" if r.label else r.operator)
            written = plot_sweep(r, out / f"{name}.png")
            r.plots = [p.name for p in written]
            pngs += written
    files = [out / f"{stem}.csv", out / f"{stem}.json", out / f"{stem}.md"]
    write_csv(files[0], results)
    doc = write_json(files[1], results, settings, extra)
    text = suite_markdown(doc)
    files[2].write_text(text)
    files += pngs
    return files, text


def bench_operator(op: Any, numpy_impl: Callable[..., Any] | None, sweeps: Sequence[Sweep],
                   fixed: dict[str, int], settings: Settings, label: str = "",
                   compile_fn: Callable[..., Any] | None = None) -> SweepResult:
    """Run one sweep of one operator (a Python API for the suite and for notebooks)."""
    scop = op.scop if hasattr(op, "scop") else op
    points = points_of(scop, sweeps, fixed)
    axis = sweeps[0].names if sweeps else ()
    return sweep(op, numpy_impl, points, settings, compile_fn or compiler(op), axis=axis,
                 axis_log=bool(sweeps and sweeps[0].log), label=label)


def bench_operator_file(path: str, op_name: str | None, sweep_specs: Sequence[str],
                        fix_specs: Sequence[str], settings: Settings, out: Path,
                        assume: str | None = None, plots: bool = True
                        ) -> tuple[list[Path], str]:
    """``polydyn bench op.py ...``: load, sweep, write; returns the files and the table."""
    from ..scop.ragged import RaggedOperator

    op = pick_operator(path, op_name)
    if isinstance(op, RaggedOperator):  # its inputs are batches of sequences
        raise UsageError(f"{path}: {op.name} is a ragged operator: `polydyn bench` sweeps "
                         "dense sizes; time it in Python on pd.Jagged batches "
                         "(bench/ragged.py does)")
    scop = with_assume(op, assume)
    sweeps = [parse_sweep(s) for s in sweep_specs]
    result = bench_operator(op, numpy_impl_of(op), sweeps, parse_fix(fix_specs), settings,
                            compile_fn=compiler(scop if assume else op))
    return write_outputs([result], out, slug(scop.name), settings, plots)
