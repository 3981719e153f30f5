"""Writing what a benchmark measured: machine info, CSV, JSON, a markdown table (and the plots,
from plot.py)."""

from __future__ import annotations

import csv
import datetime
import json
import math
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..version import __version__
from .roofline import Peak, impl_peaks, share, share_text
from .runner import Measurement, Settings, SweepResult

CSV_FIELDS = ["operator", "label", "impl", "target", "sizes", "variant", "status", "check",
              "max_error", "flops", "bytes", "metric", "rate_median", "rate_best", "median_s",
              "min_s", "spread", "samples", "inner", "busy", "message"]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def simd() -> str:
    """The widest x86 vector extension the CPU reports (``avx512f``, ``avx2``, ...)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in flags), "")
    except OSError:
        pass
    return ""


def _version(module: str) -> str:
    mod = sys.modules.get(module)
    if mod is None:
        try:
            mod = __import__(module)
        except Exception:
            return "not installed"
    return str(getattr(mod, "__version__", "?"))


def blas_name() -> str:
    try:
        import numpy as np

        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:
        return "?"


def publish(lines: list[str], out: Path | None) -> None:
    """Print a bench script's markdown lines; with ``out``, write them there too."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        out.write_text(text)


def git_revision() -> str:
    """The checkout's commit, with ``+dirty`` when files differ from it ("" outside git)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                             capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return rev + ("+dirty" if dirty else "")


def machine_info() -> dict[str, Any]:
    """CPU model, cores, compilers, thread counts and library versions of this run."""
    from ..codegen_c.toolchain import compiler_version
    from ..options import Options

    options = Options()
    try:
        cc = compiler_version(options.cc)
    except Exception as exc:
        cc = f"unavailable ({exc})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch_threads = None
    if "torch" in sys.modules:
        torch_threads = sys.modules["torch"].get_num_threads()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "simd": simd(),
        "cores": cores,
        "os": platform.platform(),
        "cc": options.cc,
        "cc_version": cc,
        "cflags": " ".join(options.all_cflags),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", f"unset (OpenMP uses {cores})"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
        "torch_threads": torch_threads,
        "python": platform.python_version(),
        "polydyn": __version__,
        "git": git_revision(),
        "numpy": _version("numpy"),
        "blas": blas_name(),
        "islpy": _version("islpy"),
        "torch": _version("torch") if "torch" in sys.modules else "not loaded",
        "devices": devices(),
    }


def devices() -> list[str]:
    """The OpenCL devices this run's kernels used and the CUDA GPU torch used, if any."""
    found = []
    if "pyopencl" in sys.modules:
        from ..runtime.opencl import devices_in_use

        found += [f"OpenCL: {d}" for d in devices_in_use()]
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        found.append(f"CUDA: {torch.cuda.get_device_name(0)} (torch {torch.__version__}, "
                     f"CUDA {torch.version.cuda})")
    return found


def row_dict(row: Measurement, metric: str, label: str = "") -> dict[str, Any]:
    t = row.timing
    return {
        "operator": row.operator, "label": label, "impl": row.impl, "target": row.target,
        "sizes": sizes_text(row.sizes), **{f"sym_{k}": v for k, v in row.sizes.items()},
        "variant": row.variant, "status": row.status, "check": row.check,
        "max_error": row.max_error, "flops": row.flops, "bytes": row.bytes, "metric": metric,
        "rate_median": _round(row.rate(metric)), "rate_best": _round(row.rate(metric, True)),
        "median_s": t.median if t else None, "min_s": t.min if t else None,
        "spread": _round(t.spread) if t else None, "samples": t.samples if t else None,
        "inner": t.inner if t else None, "busy": _round(row.busy, 2), "message": row.message,
    }


def _round(x: float, digits: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def sizes_text(sizes: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def sweep_dict(result: SweepResult) -> dict[str, Any]:
    return {
        "operator": result.operator, "label": result.label, "metric": result.metric,
        "axis": list(result.axis), "axis_log": result.axis_log, "points": result.points,
        "variants": result.variants,
        "boundaries": {g: [{"at": x, "before": a, "after": b} for x, a, b in bs]
                       for g, bs in result.boundaries.items()},
        "impls": result.impls, "skipped": result.skipped, "compile_s": result.compile_s,
        "stats": result.stats, "plots": result.plots,
        "rows": [row_dict(r, result.metric, result.label) for r in result.rows],
    }


def write_csv(path: Path, results: Sequence[SweepResult]) -> None:
    rows = [row_dict(r, res.metric, res.label) for res in results for r in res.rows]
    sym_fields = sorted({k for r in rows for k in r if k.startswith("sym_")})
    fields = CSV_FIELDS[:5] + sym_fields + CSV_FIELDS[5:]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in r.items()})


def write_json(path: Path, results: Sequence[SweepResult], settings: Settings | None,
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"machine": machine_info()}
    if settings is not None:
        doc["settings"] = {"budget": vars(settings.budget), "baselines": settings.baselines,
                           "targets": settings.targets, "seed": settings.seed,
                           "quiet": settings.quiet, "rounds": settings.rounds}
    doc["sweeps"] = [sweep_dict(r) for r in results]
    doc.update(extra or {})
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc


def impl_order(result: SweepResult | dict[str, Any]) -> list[str]:
    rows = result["rows"] if isinstance(result, dict) else result.rows
    seen: list[str] = []
    for r in rows:
        name = r["impl"] if isinstance(r, dict) else r.impl
        if name not in seen:
            seen.append(name)
    return seen


def _cell(row: dict[str, Any] | None, show_variant: bool) -> str:
    if row is None:
        return ""
    if row["status"] != "ok":
        return row["status"]
    text = f"{row['rate_median']:.3g}" if row["rate_median"] is not None else "?"
    return f"{text} ({row['variant']})" if show_variant and row["variant"] else text


def rows_by_point(sweep: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{sizes text: {impl: row}}`` in sweep order."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in sweep["rows"]:
        out.setdefault(r["sizes"], {})[r["impl"]] = r
    return out


def sweep_key(sweep: dict[str, Any]) -> str:
    return f"{sweep['operator']}-{sweep['label']}" if sweep["label"] else sweep["operator"]


def markdown_table(sweep: SweepResult | dict[str, Any], reference: str = "numpy",
                   devices: Sequence[str] = ()) -> str:
    """One line per point: each implementation's median rate (polydyn's with the variant that
    ran), and polydyn's speed over the reference implementation's (same point). ``devices``:
    the run's device lines (``machine["devices"]``); where polydyn or torch-cuda ran on a GPU
    whose peaks are known, their rates as a share of its roofline too."""
    if not isinstance(sweep, dict):
        sweep = sweep_dict(sweep)
    impls = impl_order(sweep)
    main = "polydyn" if "polydyn" in impls else next(
        (i for i in impls if i.startswith("polydyn")), "polydyn")
    refs = [r for r in (reference, "torch", "torch-cuda") if r in impls and main in impls]
    roofs = impl_peaks(devices, [i for i in (main, "torch-cuda") if i in impls])
    head = ["sizes", *impls] + [f"{main} / {r}" for r in refs] + \
        [f"{i} of roofline" for i in roofs]
    lines = [f"{sweep_key(sweep)}: {sweep['metric']}, median of repeated calls",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for point, cells in rows_by_point(sweep).items():
        row = [point] + [_cell(cells.get(i), i.startswith("polydyn")) for i in impls]
        row += [speedup(cells.get(main), cells.get(r)) for r in refs]
        row += [_roof_cell(cells.get(i), peak, sweep["metric"]) for i, peak in roofs.items()]
        lines.append("| " + " | ".join(row) + " |")
    notes = [f"- {k}: not run ({v})" for k, v in sweep["skipped"].items()]
    notes += [f"- {r['impl']} at {r['sizes']}: {r['status']}: {r['message']}"
              for r in sweep["rows"] if r["status"] in ("wrong", "error")]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def _roof_cell(row: dict[str, Any] | None, peak: Peak, metric: str) -> str:
    if row is None or row["status"] != "ok":
        return ""
    return share_text(share(row["rate_median"], peak, metric))


def suite_markdown(doc: dict[str, Any]) -> str:
    """A run's ``suite.md``: the machine, then one table per sweep of ``doc`` (its JSON)."""
    devices = doc["machine"].get("devices", [])
    peaks = {p.text() for s in doc["sweeps"] for p in impl_peaks(devices, impl_order(s)).values()}
    roofline = "".join(f"Roofline: {p} (the \"of roofline\" columns: median rate over that "
                       "peak).\n" for p in sorted(peaks))
    tables = [markdown_table(s, devices=devices) for s in doc["sweeps"]]
    late = doc.get("not_run")
    if late:  # sweeps a deadline kept from starting
        tables.append(f"Not run (past the run's deadline): {', '.join(late)}.\n")
    return machine_markdown(doc["machine"]) + roofline + "\n" + "\n".join(tables)


def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
    """``a``'s speed over ``b``'s: b's median time over a's."""
    if not a or not b or not a.get("median_s") or not b.get("median_s"):
        return None
    return b["median_s"] / a["median_s"]


def speedup(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    x = ratio(a, b)
    return "" if x is None else f"{x:.2f}x"


def machine_markdown(info: dict[str, Any]) -> str:
    return (f"Machine: {info['cpu']} ({info.get('simd', '')}), {info['cores']} cores; "
            f"{info['cc_version']} "
            f"(`{info['cflags']}`); OMP_NUM_THREADS={info['OMP_NUM_THREADS']}; "
            f"NumPy {info['numpy']} ({info['blas']}); torch {info['torch']}; "
            f"Python {info['python']}; polydyn {info.get('git') or info['polydyn']}; "
            f"run {info['date']}.\n" +
            "".join(f"Device: {d}.\n" for d in info.get("devices", [])))
