"""PNG plots of a sweep: the rate (GFLOP/s or GB/s) against the swept sym, one line per
implementation, the dispatcher's region boundaries as vertical lines, and the variant that ran
at each point as the marker of the polydyn line (legend) and a label under the point."""

from __future__ import annotations

from pathlib import Path

from .report import impl_order, sizes_text
from .runner import Measurement, SweepResult, groups

MARKERS = "osD^v<>ph*"
MAX_BOUNDARY_LINES = 24


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sweep(result: SweepResult, path: Path) -> list[Path]:
    """One PNG per group of points (``path`` itself when there is one group); categorical x
    (point labels) when the sweep has no single axis. Returns the files written."""
    plt = _pyplot()
    written = []
    point_groups = groups(result.points, result.axis) if result.axis else {"": result.points}
    for n, (group, members) in enumerate(point_groups.items()):
        out = path if len(point_groups) == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        keys = {sizes_text(p) for p in members}
        rows = [r for r in result.rows if sizes_text(r.sizes) in keys]
        fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=100)
        _draw(ax, result, rows, members, group)
        fig.tight_layout()
        fig.savefig(out)
        plt.close(fig)
        written.append(out)
    return written


def _varying(members: list) -> list[str]:
    return [k for k in (members[0] if members else {}) if len({p[k] for p in members}) > 1]


def _draw(ax, result: SweepResult, rows: list[Measurement], members: list, group: str) -> None:
    if result.axis:
        _draw_lines(ax, result, rows, members, group)
    else:
        _draw_bars(ax, result, rows, members)
    keep = set(result.axis) | set(_varying(members))
    fixed = {k: v for k, v in (members[0] if members else {}).items() if k not in keep}
    title = f"{result.operator} {result.label}".strip()
    ax.set_title(f"{title}   {sizes_text(fixed)}" if fixed else title, fontsize=10)
    ax.set_ylabel(result.metric)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def _draw_lines(ax, result: SweepResult, rows: list[Measurement], members: list,
                group: str) -> None:
    variants = [v["name"] for v in result.variants]
    for impl in impl_order(result):
        mine = [r for r in rows if r.impl == impl and r.timing is not None]
        if not mine:
            continue
        xs = [float(r.sizes[result.axis[0]]) for r in mine]
        ys = [r.rate(result.metric) for r in mine]
        line = ax.plot(xs, ys, "-", lw=1.5, label=impl, zorder=2)[0]
        if impl == "polydyn":
            _variant_markers(ax, xs, ys, mine, variants, line.get_color())
        else:
            ax.plot(xs, ys, ".", color=line.get_color(), zorder=2)
    bounds = result.boundaries.get(group, [])
    for k, (x, _before, after) in enumerate(bounds[:MAX_BOUNDARY_LINES]):
        ax.axvline(x, color="0.6", ls="--", lw=0.8, zorder=1,
                   label="variant boundary" if k == 0 else None)
        ax.annotate(after, (x, 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                    rotation=90, va="top", ha="right", color="0.4")
    ax.set_xlabel(" = ".join(result.axis) + (f"   ({group})" if group else ""))
    xs = sorted({p[result.axis[0]] for p in members})
    if min(xs) > 0 and (result.axis_log or max(xs) >= 30 * min(xs)):
        ax.set_xscale("log")
    if len(xs) <= 12:
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs], fontsize=8)
        ax.minorticks_off()


def _draw_bars(ax, result: SweepResult, rows: list[Measurement], members: list) -> None:
    """Unrelated points (no swept axis): grouped bars, the polydyn variant over its bars."""
    impls = impl_order(result)
    labels = [sizes_text({k: p[k] for k in _varying(members)} or p) for p in members]
    keys = [sizes_text(p) for p in members]
    width = 0.8 / max(1, len(impls))
    for n, impl in enumerate(impls):
        mine = {sizes_text(r.sizes): r for r in rows if r.impl == impl and r.timing is not None}
        xs = [k + (n - (len(impls) - 1) / 2) * width for k, key in enumerate(keys) if key in mine]
        found = [mine[key] for key in keys if key in mine]
        bars = ax.bar(xs, [r.rate(result.metric) for r in found], width, label=impl, zorder=2)
        if impl == "polydyn":
            for bar, r in zip(bars, found, strict=True):
                ax.annotate(r.variant, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                            textcoords="offset points", xytext=(0, 2), fontsize=6,
                            ha="center", rotation=90)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=15, ha="right", fontsize=7)


def _variant_markers(ax, xs: list[float], ys: list[float], rows: list[Measurement],
                     variants: list[str], color: str) -> None:
    """A marker per variant (in the legend as ``ran: NAME``) and its name under each point."""
    shown: set[str] = set()
    for x, y, r in zip(xs, ys, rows, strict=True):
        k = variants.index(r.variant) if r.variant in variants else len(MARKERS) - 1
        label = None if r.variant in shown else f"ran: {r.variant}"
        shown.add(r.variant)
        ax.plot([x], [y], MARKERS[k % len(MARKERS)], color=color, ms=6, label=label, zorder=3)
        if len(rows) <= 24:
            ax.annotate(r.variant, (x, y), textcoords="offset points", xytext=(0, -11),
                        fontsize=6, ha="center", color=color)
