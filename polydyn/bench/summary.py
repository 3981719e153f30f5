"""``bench/RESULTS.md`` rendered from a suite's JSON (``suite.json``), so that every figure in
it traces to the committed results file of the same run."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .report import machine_markdown, markdown_table, ratio, rows_by_point, sweep_key


@dataclass(frozen=True)
class Bar:
    """A speed target of issue 4: polydyn over ``baseline`` at least ``ratio`` at each point of
    sweep ``key`` where ``where(sizes)`` holds (or for their geometric mean)."""

    key: str
    text: str
    baseline: str
    ratio: float
    where: Callable[[dict[str, int]], bool] = lambda s: True
    geomean: bool = False


# issue 4's conv sizes (B, C, F, H) for the bar against torch; the suite's other convs
# (few channels, or many channels and small images) are measured, not bars
BAR_CONVS = {(1, 64, 64, 56), (8, 64, 64, 28), (1, 32, 64, 57)}
BARS = [
    Bar("matmul-square", ">= 0.9x NumPy at every size from 500 up", "numpy", 0.9,
        lambda s: s["N"] >= 500),
    Bar("matmul-square", "geometric mean >= 1.0x NumPy", "numpy", 1.0, geomean=True),
    Bar("matmul-skinny", ">= 0.8x NumPy at N=1 (M=K=1024)", "numpy", 0.8, lambda s: s["N"] == 1),
    Bar("matmul-skinny", ">= 0.9x NumPy at N=8, 33", "numpy", 0.9, lambda s: s["N"] in (8, 33)),
    Bar("bias_relu", ">= 1x NumPy at every size", "numpy", 1.0),
    Bar("bias_relu", ">= 2x NumPy at the two large sizes", "numpy", 2.0, lambda s: s["N"] >= 4096),
    Bar("softmax-rows", ">= 1x NumPy everywhere", "numpy", 1.0),
    Bar("softmax-large", ">= 1x NumPy", "numpy", 1.0),
    Bar("softmax-rows", ">= 1x torch eager at L >= 512", "torch", 1.0, lambda s: s["L"] >= 512),
    Bar("softmax-large", ">= 1x torch eager (L=4096)", "torch", 1.0),
    Bar("layernorm", ">= 1x NumPy everywhere", "numpy", 1.0),
    Bar("layernorm", ">= 1x torch eager at N >= 128", "torch", 1.0, lambda s: s["N"] >= 128),
    Bar("conv2d", ">= 0.8x torch eager (F.conv2d) at (1,64,64,56), (8,64,64,28), (1,32,64,57)",
        "torch", 0.8, lambda s: (s["B"], s["C"], s["F"], s["H"]) in BAR_CONVS),
    Bar("conv2d", ">= 1.5x im2col + NumPy at (4,3,32,224)", "numpy", 1.5, lambda s: s["C"] == 3),
    Bar("jacobi2d", ">= 1.3x plain C + OpenMP (naive)", "naive", 1.3),
]


def _sizes(row: dict[str, Any]) -> dict[str, int]:
    return {k[4:]: int(v) for k, v in row.items() if k.startswith("sym_")}


def bar_lines(doc: dict[str, Any]) -> list[str]:
    sweeps = {sweep_key(s): s for s in doc["sweeps"]}
    lines = ["| sweep | target | measured (polydyn / baseline) | met |", "|---|---|---|---|"]
    for bar in BARS:
        sweep = sweeps.get(bar.key)
        if sweep is None:
            continue
        found = []
        for point, cells in rows_by_point(sweep).items():
            poly = cells.get("polydyn")
            if poly and bar.where(_sizes(poly)):
                found.append((point, ratio(poly, cells.get(bar.baseline))))
        have = [x for _, x in found if x is not None]
        if not found:
            continue
        if not have:
            lines.append(f"| {bar.key} | {bar.text} | {bar.baseline} not measured | n/a |")
            continue
        if bar.geomean:
            value = math.exp(sum(math.log(x) for x in have) / len(have))
            shown, met = f"{value:.2f}x over {len(have)} sizes", value >= bar.ratio
        else:
            shown = ", ".join(f"{p}: {x:.2f}x" if x is not None else f"{p}: n/a"
                              for p, x in found)
            met = all(x >= bar.ratio for x in have) and len(have) == len(found)
        lines.append(f"| {bar.key} | {bar.text} | {shown} | {'yes' if met else '**no**'} |")
    return lines


def generic_lines(doc: dict[str, Any]) -> list[str]:
    """Dispatched kernel against dispatch forced to the generic variant (issue 3)."""
    lines = ["| sweep | sizes | variant run | dispatched / forced generic |", "|---|---|---|---|"]
    for sweep in doc["sweeps"]:
        if sweep["operator"] not in ("matmul", "softmax"):
            continue
        for point, cells in rows_by_point(sweep).items():
            poly, generic = cells.get("polydyn"), cells.get("generic")
            x = ratio(poly, generic)
            if poly and x is not None:
                lines.append(f"| {sweep_key(sweep)} | {point} | {poly['variant']} | {x:.2f}x |")
    return lines if len(lines) > 2 else []


def cost_lines(doc: dict[str, Any]) -> list[str]:
    lines = ["| operator | variants | cold compile (s) | warm compile (s) | C lines |",
             "|---|---|---|---|---|"]
    for c in doc.get("compile", []):
        lines.append(f"| {c['operator']} | {c['variants']} ({', '.join(c['variant_names'])}) "
                     f"| {c['cold_s']:.2f} | {c['warm_s']:.3f} | {c['source_lines']} |")
    compiled = [(sweep_key(s), s["stats"]["torch.compile"]) for s in doc["sweeps"]
                if "torch.compile" in s.get("stats", {})]
    if compiled:
        lines += ["", "torch.compile(dynamic=True) over the same sweeps (fresh inductor cache):",
                  "", "| sweep | cold compile (s, first call) | recompiles over the sweep |",
                  "|---|---|---|"]
        for key, stats in compiled:
            calls = stats.get("compiles", [])
            first = calls[0]["seconds"] if calls else float("nan")
            again = sum(1 for c in calls[1:] if c.get("graphs"))
            lines.append(f"| {key} | {first:.1f} | {again} |")
    return lines


def overhead_lines(doc: dict[str, Any]) -> list[str]:
    lines = ["| call (bias_relu, N=1, M=8) | median µs | min µs |", "|---|---|---|"]
    lines += [f"| {o['call']} | {o['median_us']:.2f} | {o['min_us']:.2f} |"
              for o in doc.get("overhead", [])]
    return lines


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def render(doc: dict[str, Any], results_dir: str = "results",
           source: str = "bench/results", gaps: str = "") -> str:
    """The whole RESULTS.md text; PNG links are relative to ``results_dir``; ``source`` names
    the results directory in the text; ``gaps`` (markdown, written by hand from measured
    figures) follows the speed targets: what limits the ones not met."""
    busy = [r.get("busy") or 0.0 for s in doc["sweeps"] for r in s["rows"]]
    mode = doc.get("mode", "full")
    rounds = doc.get("settings", {}).get("rounds", 1)
    turns = (f", the implementations of a point timed in turns ({rounds} rounds, the order "
             "rotated each round)") if rounds > 1 else ""
    out = ["# polydyn benchmark results", "",
           f"Generated by `bench/run_all.py{' --quick' if mode == 'quick' else ''}` from "
           f"`{source}/suite.json` (same run as `suite.csv` and the PNGs there); "
           "do not edit by hand.", "", machine_markdown(doc["machine"]),
           f"Mode: {mode}. Rates are medians of repeated calls after one checked call{turns}; each "
           "implementation was checked once per point (reference interpreter at small sizes, "
           "float64 NumPy at large ones). Other processes kept up to "
           f"{max(busy, default=0):.0%} of the CPUs busy just before a round of measurements "
           f"(median {_median(busy):.0%}; the suite waited up to "
           f"{doc.get('settings', {}).get('quiet', 0):g} s for idle CPUs).", ""]
    if mode == "full":
        out += ["## Speed targets (issue 4)", "", *bar_lines(doc), ""]
        if gaps:
            out += [gaps.rstrip(), ""]
    gen = generic_lines(doc)
    if gen:
        out += ["## Where specialization pays (issue 3)", "",
                "Forced generic goes through `Kernel.run_variant`, the checked Python call "
                "path (argument checks, a region test remembered per sizes), where a "
                "dispatched call takes the compiled entry point: at small sizes that "
                "Python cost dominates the ratio.", "", *gen, ""]
    out += ["## Per-call overhead", "", *overhead_lines(doc), "",
            "## Compile cost", "", *cost_lines(doc), "", "## Sweeps", ""]
    devices = doc["machine"].get("devices", [])
    for sweep in doc["sweeps"]:
        name = sweep_key(sweep)
        out += [f"### {name}", "", markdown_table(sweep, devices=devices)]
        out += [f"![{name}]({results_dir}/{png})" for png in sweep.get("plots", [])] + [""]
    return "\n".join(out)
