"""Small helpers over isl schedule trees: band traversal and the loop marks the emitters read."""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl

# Mark names placed above single-member bands; the C/OpenCL emitters read them on the AST.
PARALLEL = "parallel"
SEQUENTIAL = "sequential"


def is_band(node: isl.ScheduleNode) -> bool:
    return node.get_type() == isl.schedule_node_type.band


def map_bands(schedule: isl.Schedule,
              fn: Callable[[isl.ScheduleNode], isl.ScheduleNode]) -> isl.Schedule:
    """Apply ``fn`` to every band node, bottom-up; ``fn`` returns the node at the same place."""

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        return fn(node) if is_band(node) else node

    return schedule.map_schedule_node_bottom_up(visit)


def _mark_band(node: isl.ScheduleNode) -> isl.ScheduleNode:
    """Split a band into one-member bands, each under a mark saying whether it is parallel."""
    n = node.band_n_member()
    flags = [bool(node.band_member_get_coincident(i)) for i in range(n)]
    for _ in range(n - 1):
        node = node.band_split(1).child(0)
    for _ in range(n - 1):
        node = node.parent()
    for k in range(n):
        node = node.insert_mark(isl.Id(PARALLEL if flags[k] else SEQUENTIAL)).child(0)
        if k < n - 1:
            node = node.child(0)
    for _ in range(2 * n - 1):
        node = node.parent()
    return node


def mark_loops(schedule: isl.Schedule) -> isl.Schedule:
    """Every band member gets a mark above it: ``parallel`` (coincident) or ``sequential``."""
    return map_bands(schedule, _mark_band)


def band_members(schedule: isl.Schedule) -> list[tuple[int, list[bool], bool]]:
    """``(depth, coincident flags, permutable)`` of every band, outermost first (for summaries)."""
    out: list[tuple[int, list[bool], bool]] = []

    def walk(node: isl.ScheduleNode, depth: int) -> None:
        if is_band(node):
            n = node.band_n_member()
            out.append((depth, [bool(node.band_member_get_coincident(i)) for i in range(n)],
                        bool(node.band_get_permutable())))
            depth += n
        for i in range(node.n_children()):
            walk(node.child(i), depth)

    walk(schedule.get_root(), 0)
    return out
