"""The replay check: the generated source of every bundled kernel, per target and CPU plan.

``python -m tests.replay`` compares what polydyn generates now with the committed snapshot in
``snapshots/`` and prints a diff of every difference; ``--update`` rewrites the snapshot. A
commit that changes generated code updates the snapshot in the same commit and says which
kernels changed and why (tests/test_replay.py fails otherwise).

A snapshot is taken for each bundled kernel (kernels.ALL) on the C target under each CPU plan
(``polydyn.target.CpuTarget.of``: avx512, avx2, sse, neon; 1 MiB of L2) and on the OpenCL
target (a ``GpuTarget`` of work-groups up to 1024 work-items), with the automatic schedule and
default options. Nothing is built: ``polydyn.pipeline.generate`` stops at the text.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from polydyn.target import Target

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
ISAS = ("avx512", "avx2", "sse", "neon")
L2_BYTES = 1 << 20
MAX_GROUP = 1024


def cases() -> list[tuple[str, str, str | None]]:
    """(kernel, target, isa) for every snapshot: C under each plan, then OpenCL."""
    import kernels

    return [(name, "c", isa) for name in kernels.ALL for isa in ISAS] + \
           [(name, "opencl", None) for name in kernels.ALL]


def case_dir(kernel: str, target: str, isa: str | None) -> Path:
    return SNAPSHOTS / kernel / (f"{target}-{isa}" if isa else target)


def generate(kernel: str, target: str, isa: str | None) -> dict[str, str]:
    """The generated files of one case, by name."""
    import kernels
    from polydyn.options import Options
    from polydyn.pipeline import generate as generate_sources

    op, _ = kernels.load(kernel)
    gen = generate_sources(op, machine(target, isa),
                           options=Options(max_tile=None, dump_dir=None))
    return dict(gen.sources)


def machine(target: str, isa: str | None) -> Target:
    """The machine a case plans for: a CPU plan of ``isa`` with 1 MiB of L2, or an OpenCL
    device whose work-groups hold up to 1024 work-items."""
    from polydyn.target import CpuTarget, GpuTarget

    if target == "c":
        return CpuTarget.of(isa, L2_BYTES)
    return GpuTarget(max_group=MAX_GROUP)


def compare(kernel: str, target: str, isa: str | None) -> list[str]:
    """A unified diff (snapshot -> now) for each file that differs, appears or disappears."""
    now = generate(kernel, target, isa)
    where = case_dir(kernel, target, isa)
    before = {p.name: p.read_text() for p in sorted(where.glob("*"))} if where.is_dir() else {}
    diffs = []
    for name in sorted(set(now) | set(before)):
        old, new = before.get(name, ""), now.get(name, "")
        if old != new:
            rel = where.relative_to(SNAPSHOTS) / name
            diffs.append("".join(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                f"snapshot/{rel}", f"now/{rel}", n=2)))
    return diffs


def update(kernel: str, target: str, isa: str | None) -> bool:
    """Write the snapshot of one case; True when it changed."""
    now = generate(kernel, target, isa)
    where = case_dir(kernel, target, isa)
    where.mkdir(parents=True, exist_ok=True)
    changed = False
    for old in where.glob("*"):
        if old.name not in now:
            old.unlink()
            changed = True
    for name, text in now.items():
        path = where / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed = True
    return changed
