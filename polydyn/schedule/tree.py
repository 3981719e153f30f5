"""Small helpers over isl schedule trees: band traversal and the loop marks the emitters read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

# Mark names placed above single-member bands; the C/OpenCL emitters read them on the AST.
# A mark is "parallel" or "sequential", optionally followed by ":role" for loops that a
# transformation gave a job: "promote" (accumulators live in registers around this loop),
# "rrow" and "rvec" (the rows and the vector of a register tile).
PARALLEL = "parallel"
SEQUENTIAL = "sequential"
PROMOTE, RROW, RVEC = "promote", "rrow", "rvec"
# A loop a recipe's vectorize() names (checked free of dependences): "omp simd" in C.
VECTOR = "vector"
# A sum split among the threads (rfactor): the C emitter opens one parallel region at the
# "rfactor" loop, whose iterations every thread runs, each thread adding into a private
# copy of the sum's target; the threads share out the iterations of the "split" loop below
# it; the copies are added into the target at the end.
RFACTOR, SPLIT = "rfactor", "split"
# The outer point loop of a tile of transposing copies whose pair has 16 points each
# (schedule/transposes.py): the C emitter copies a full tile through registers.
TRANSPOSE = "transpose"
# Above the loops of an init statement fused just before a register tile (schedule.inits):
# the C emitter starts the tile's accumulators from its values instead of running it.
INIT = "init"
# Above the register tiles of a cache tile: "pack:A,B" copies the named arrays' footprint in
# the tile into local buffers with a padded row stride (the C emitter, where the footprint
# is a box of constant size: full tiles); "pack-rows:A", below one row of register tiles,
# copies a rows operand read down its columns (A.T @ B's ``A[k, i]``) into runs of the
# tile's rows.
PACK = "pack"


@dataclass(frozen=True)
class LoopMark:
    """The mark above a one-member band: whether its iterations may run at once, and the
    job a transformation gave the loop (``role``: one of the names above, ``vector``,
    ``unrollN``, or none). Printed ``parallel:promote`` in dumps and AST comments."""

    parallel: bool
    role: str = ""

    def __str__(self) -> str:
        return (PARALLEL if self.parallel else SEQUENTIAL) + (f":{self.role}" if self.role
                                                              else "")


@dataclass(frozen=True)
class PackMark:
    """The mark above the register tiles of a cache tile whose ``arrays`` are packed.
    ``rows``: the arrays are a register tile's rows operand, read a broadcast at a time,
    packed below one tile row of the cache tile in rows of the register tile's height
    (unpadded: each reduction step's values in one run)."""

    arrays: tuple[str, ...]
    rows: bool = False

    def __str__(self) -> str:
        return f"{PACK}{'-rows' if self.rows else ''}:{','.join(self.arrays)}"


@dataclass(frozen=True)
class InitMark:
    """The mark above the loops of an init statement fused before a register tile."""

    def __str__(self) -> str:
        return INIT


Mark = LoopMark | PackMark | InitMark


def mark_id(mark: Mark) -> isl.Id:
    """The isl id of a mark node: the mark's text, the mark itself as the id's user."""
    return isl.Id(str(mark), user=mark)


def mark_of(node: isl.ScheduleNode | isl.AstNode) -> Mark | None:
    """The mark of a schedule-tree or AST mark node (None for one polydyn did not place)."""
    mark = node.mark_get_id().get_user()
    return mark if isinstance(mark, LoopMark | PackMark | InitMark) else None


def loop_mark(node: isl.ScheduleNode | isl.AstNode) -> LoopMark | None:
    """The loop mark of a mark node, None for a pack or init mark."""
    mark = mark_of(node)
    return mark if isinstance(mark, LoopMark) else None


def is_sequential_mark(node: isl.ScheduleNode) -> bool:
    """A mark node whose loop runs its iterations in order."""
    mark = loop_mark(node)
    return mark is not None and not mark.parallel


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


def band_above(node: isl.ScheduleNode) -> bool:
    """Whether a band node encloses ``node`` (loops around it)."""
    while node.has_parent():
        node = node.parent()
        if is_band(node):
            return True
    return False


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


def split_and_mark(node: isl.ScheduleNode, marks: list[LoopMark]) -> isl.ScheduleNode:
    """Split a band into one-member bands, each under its mark. Returns the node at the
    band's place (the first mark)."""
    n = node.band_n_member()
    for _ in range(n - 1):
        node = node.band_split(1).child(0)
    for _ in range(n - 1):
        node = node.parent()
    for k in range(n):
        node = node.insert_mark(mark_id(marks[k])).child(0)
        if k < n - 1:
            node = node.child(0)
    for _ in range(2 * n - 1):
        node = node.parent()
    return node


def _mark_band(node: isl.ScheduleNode) -> isl.ScheduleNode:
    """Mark every member parallel (coincident) or sequential, unless already marked."""
    if node.has_parent() and node.parent().get_type() == isl.schedule_node_type.mark and \
            not isinstance(mark_of(node.parent()), PackMark):
        return node
    n = node.band_n_member()
    return split_and_mark(node, [LoopMark(bool(node.band_member_get_coincident(i)))
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
