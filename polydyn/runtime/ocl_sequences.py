"""The sequences of a ragged call on OpenCL, launched together: each kernel's twin over the
groups of many sequences (``codegen_ocl/sequences.py``) runs, in one launch, that kernel for
every sequence whose variant launches it at the same step.

The per-sequence host code (``codegen_ocl/host.py``) says what each sequence launches: it runs
once per sequence with a recorder in place of the launcher (a few integer expressions each).
Launches are grouped by their step in the sequence's list and the kernel: the groups of step
0 go first, then step 1, and so on, which keeps each sequence's own order (the queue runs in
order; sequences share no written data, SPEC section 7). A launch holds every work-group of
its sequences, one after another along dimension 0 (``group_table``), and each group reads
its sequence's row of the sequence table (``row``). A sequence whose
variant loops on the host, uses local memory sized at launch or scalars kept in global
memory, or launches a kernel with no twin, runs on its own as before (``RaggedKernel``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

SUFFIX = "_seq"  # the twin of kernel K is K_seq
GROUP_ROW = 4  # a group table's row: the sequence, the group's id along each dimension


def row(syms: list[int], offsets: tuple[int, ...], groups: tuple[int, ...],
        array_offsets: list[int]) -> list[int]:
    """One sequence's row of a twin's table: the syms' values (in the Scop's order), the
    mapped members' first values and work-group counts (outermost first, as the host code
    gives them), each array argument's element offset (in argument order)."""
    return [*syms, *offsets, *groups, *array_offsets]


def twin_ids(kernels: list[Any]) -> list[int | None]:
    """For each kernel id (``KernelInfo``s in id order), its twin's id, or None."""
    ids = {info.name: j for j, info in enumerate(kernels)}
    return [ids.get(info.name + SUFFIX) for info in kernels]


def launch_together(inner: Any, call: Any, device: Mapping[str, Any], length: str,
                    batched: frozenset[str], twin_of: list[int | None]) -> list[int]:
    """Launch the kernels of every sequence of ``call`` that can share launches on
    ``inner``'s queue (``device``: the call's flat device arrays); the sequences left to run
    one by one. ``length``: the ragged sym; ``batched``: the arrays split by sequence;
    ``twin_of``: ``twin_ids`` of the kernels."""
    scop = inner.scop
    arrays = [a.name for a in scop.arg_arrays if a.kind != "value"]
    steps: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
    alone: list[int] = []
    for b, n in enumerate(call.lengths.tolist()):
        vals = [n if s == length else call.syms[s] for s in scop.syms]
        variant = inner._select(*vals)
        launches: list[tuple[Any, ...]] = []

        def record(kid: int, hosts: tuple[int, ...], offsets: tuple[int, ...],
                   groups: tuple[int, ...], local_bytes: tuple[int, ...] = (),
                   launches: list[tuple[Any, ...]] = launches) -> None:
            if min(groups) > 0:
                launches.append((kid, hosts, offsets, groups, local_bytes))

        if variant >= 0:
            inner._runs[variant](record, *vals)
        if variant < 0 or inner._spills[variant] or any(
                hosts or local or twin_of[kid] is None for kid, hosts, _, _, local in launches):
            alone.append(b)
            continue
        moved = [int(call.offsets[a][b]) if a in batched else 0 for a in arrays]
        for step, (kid, _, offsets, groups, _) in enumerate(launches):
            # a kernel of one work-group (no mapped member) has no offsets nor counts
            steps[(step, kid)].append((len(offsets), row(vals, offsets,
                                                         groups[:len(offsets)], moved)))
    if steps:
        _launch(inner, call, device, steps, twin_of)
    return alone


def _launch(inner: Any, call: Any, device: Mapping[str, Any],
            steps: Mapping[tuple[int, int], list[tuple[int, list[int]]]],
            twin_of: list[int | None]) -> None:
    from .opencl import _cl

    cla = _cl().array
    queue = inner.queue
    pool = inner._pool(queue)
    knls = inner._program(queue.context, False)
    tail = []
    for a in inner.scop.arg_arrays:
        x = call.values[a.name] if a.kind == "value" else device[a.name]
        tail.append(x if a.kind == "value" else x.data if x.size else None)
    first = len(inner.scop.syms)
    with inner._lock:
        for (_, kid), rows in sorted(steps.items()):
            info = inner._kernels[twin_of[kid]]
            n = rows[0][0]
            table = np.asarray([r for _, r in rows], np.int64)
            groups = group_table(table[:, first + n:first + 2 * n])
            local = info.local_size
            glob = (local[0] * len(groups), *local[1:])
            knls[twin_of[kid]](queue, glob, local,
                               cla.to_device(queue, groups, allocator=pool).data,
                               cla.to_device(queue, table, allocator=pool).data, *tail)


def group_table(counts: np.ndarray) -> np.ndarray:
    """The rows of a launch's group table: for each sequence ``r`` (``counts[r]``: its
    work-group counts along the mapped members, outermost first; none for a kernel of one
    group), each of its groups as ``[r, id along dimension 0, along 1, along 2]`` (OpenCL
    dimension 0 is the innermost member), the innermost fastest."""
    n = counts.shape[1]
    parts = []
    for r, c in enumerate(counts.tolist()):
        total = math.prod(c)
        part = np.zeros((total, GROUP_ROW), np.int64)
        part[:, 0] = r
        for k, ids in enumerate(np.unravel_index(np.arange(total), c) if n else ()):
            part[:, n - k] = ids  # member k (outermost first) is dimension n - 1 - k
        parts.append(part)
    return np.concatenate(parts) if parts else np.zeros((0, GROUP_ROW), np.int64)
