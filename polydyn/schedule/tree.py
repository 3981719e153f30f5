"""Small helpers over isl schedule trees: band traversal and the loop marks the emitters read."""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl

# Mark names placed above single-member bands; the C/OpenCL emitters read them on the AST.
# A mark is "parallel" or "sequential", optionally followed by ":role" for loops that a
# transformation gave a job: "promote" (accumulators live in registers around this loop),
# "rrow" and "rvec" (the rows and the vector of a register tile).
PARALLEL = "parallel"
SEQUENTIAL = "sequential"
PROMOTE, RROW, RVEC = "promote", "rrow", "rvec"
# A sum split among the threads (rfactor): the C emitter opens one parallel region at the
# "rfactor" loop, whose iterations every thread runs, each thread adding into a private
# copy of the sum's target; the threads share out the iterations of the "split" loop below
# it; the copies are added into the target at the end.
RFACTOR, SPLIT = "rfactor", "split"
# Above the loops of an init statement fused just before a register tile (schedule.inits):
# the C emitter starts the tile's accumulators from its values instead of running it.
INIT = "init"
# Above the register tiles of a cache tile: "pack:A,B" copies the named arrays' footprint in
# the tile into local buffers with a padded row stride (the C emitter, where the footprint
# is a box of constant size: full tiles).
PACK = "pack"


def pack_mark(arrays: list[str]) -> str:
    return f"{PACK}:{','.join(arrays)}"


def packed_arrays(name: str) -> list[str] | None:
    """The arrays of a pack mark, None for any other mark."""
    kind, _, arrays = name.partition(":")
    return arrays.split(",") if kind == PACK else None


def mark_name(parallel: bool, role: str = "") -> str:
    return (PARALLEL if parallel else SEQUENTIAL) + (f":{role}" if role else "")


def parse_mark(name: str) -> tuple[bool, str]:
    """``(is parallel, role)`` of a loop mark."""
    kind, _, role = name.partition(":")
    return kind == PARALLEL, role


def node_at(schedule: isl.Schedule, path: tuple[int, ...]) -> isl.ScheduleNode:
    """The node at ``path`` (child positions from the root)."""
    node = schedule.get_root()
    for k in path:
        node = node.child(k)
    return node


def node_path(node: isl.ScheduleNode) -> tuple[int, ...]:
    """Child positions from the root down to ``node`` (``node_at``'s inverse)."""
    out = []
    while node.has_parent():
        out.append(node.get_child_position())
        node = node.parent()
    return tuple(reversed(out))


def statement_names(domain: isl.UnionSet) -> set[str]:
    """The statements of a (union) domain, by name."""
    names: set[str] = set()
    domain.foreach_set(lambda s: names.add(s.get_tuple_name()))
    return names


def is_band(node: isl.ScheduleNode) -> bool:
    return node.get_type() == isl.schedule_node_type.band


def chain_below(node: isl.ScheduleNode) -> list[isl.ScheduleNode] | None:
    """The nodes under ``node`` down to its leaf, when each has one child; else None."""
    out = []
    node = node.child(0)
    while node.get_type() != isl.schedule_node_type.leaf:
        if node.n_children() != 1:
            return None
        out.append(node)
        node = node.child(0)
    return out


def map_bands(schedule: isl.Schedule,
              fn: Callable[[isl.ScheduleNode], isl.ScheduleNode]) -> isl.Schedule:
    """Apply ``fn`` to every band node, bottom-up; ``fn`` returns the node at the same place."""

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        return fn(node) if is_band(node) else node

    return schedule.map_schedule_node_bottom_up(visit)


def split_and_mark(node: isl.ScheduleNode, names: list[str]) -> isl.ScheduleNode:
    """Split a band into one-member bands, each under a mark with the given name. Returns the
    node at the band's place (the first mark)."""
    n = node.band_n_member()
    for _ in range(n - 1):
        node = node.band_split(1).child(0)
    for _ in range(n - 1):
        node = node.parent()
    for k in range(n):
        node = node.insert_mark(isl.Id(names[k])).child(0)
        if k < n - 1:
            node = node.child(0)
    for _ in range(2 * n - 1):
        node = node.parent()
    return node


def _mark_band(node: isl.ScheduleNode) -> isl.ScheduleNode:
    """Mark every member parallel (coincident) or sequential, unless already marked."""
    if node.has_parent() and node.parent().get_type() == isl.schedule_node_type.mark and \
            packed_arrays(node.parent().mark_get_id().get_name()) is None:
        return node
    n = node.band_n_member()
    return split_and_mark(node, [mark_name(bool(node.band_member_get_coincident(i)))
                                 for i in range(n)])


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
