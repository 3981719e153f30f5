"""Transposed statements: a copy into another order (``Y[b, j, i] = X[b, i, j]``, a layout
change), or any statement that reads one array in another order than it writes
(``Y[b, j, i] = X[b, i, j] * s + c[i]``). Tiles of 16 x 16 over the two members the arrays
run along, the other members untiled, and a ``transpose`` mark on such a tile's outer point
loop where the read is of f32. The C emitter (``codegen_c/transposes.py``) transposes a full
tile of the read in registers (``pd_tr16_f32``: 16 vector loads, the shuffles, 16 stores),
into the target for a copy, else into a local tile that the statement then reads along its
target's rows; in place, each element read or written alone costs a line. Partial tiles,
and a tile of other sizes given by a recipe, run the plain loops.

Tiling only the transposed pair keeps the batch loop untiled: a batch of 16 was below the
generic tile of 48 and ran untiled, a column of the output written per row of the input."""

from __future__ import annotations

import islpy as isl

from ..errors import InternalError
from ..scop.exprs import Load
from ..scop.ir import Scop, Statement
from .bands import member_dependence
from .tree import TRANSPOSE, LoopMark, split_and_mark

# The points of a tile along each member of the pair: a 16 x 16 tile of 4-byte elements is
# 16 vectors of AVX-512, and a whole line of each array per row.
TRANSPOSE_BLOCK = 16


def _order(ref: Load) -> list[str] | None:
    """The loop variable of each subscript of ``ref``, where each is one variable alone."""
    out = []
    for sub in ref.index:
        linear = sub.linear()
        if linear is None or linear[1] != 0 or list(linear[0].values()) != [1]:
            return None
        out.append(next(iter(linear[0])))
    return out if out and len(set(out)) == len(out) else None


def transposed_read(stmt: Statement) -> Load | None:
    """The one array ``stmt`` reads in another order than it writes (``X[b, i, j]`` for
    ``Y[b, j, i]``): each subscript of both one loop variable, the same variables, the last
    ones differing; None where no array or more than one is read so."""
    if not isinstance(stmt.target, Load) or (target := _order(stmt.target)) is None:
        return None
    found = {}
    for ref in stmt.value.walk():
        if isinstance(ref, Load) and ref.array != stmt.target.array and \
                (order := _order(ref)) is not None and sorted(order) == sorted(target) and \
                order[-1] != target[-1]:
            found[ref.array] = ref
    return next(iter(found.values())) if len(found) == 1 else None


def transposing_copies(scop: Scop) -> list[str]:
    """The statements that copy an array into another order (``Wt[k, o] = W[o, k]``): a
    load stored as it is, each subscript of both one loop variable, the same variables in
    another order. Their readers gain nothing from running fused with them, and proximity
    to them pulls the readers' loops into the copy's order (a product's rows innermost):
    ``auto.schedule_constraints`` leaves them out of the proximity."""
    out = []
    for s in scop.statements:
        value, target = s.value, s.target
        if s.op != "=" or not isinstance(value, Load) or not isinstance(target, Load):
            continue
        orders = [[next(iter(a.vars())) if len(a.vars()) == 1 else None for a in ref.index]
                  for ref in (target, value)]
        if None in orders[0] or None in orders[1] or sorted(orders[0]) != sorted(orders[1]):
            continue
        if orders[0] != orders[1]:
            out.append(s.name)
    return out


def transpose_pair(node: isl.ScheduleNode, scop: Scop) -> tuple[int, int] | None:
    """For a band whose statements each read one array in another order than they write
    (``transposed_read``), an array no statement of the band writes: the member the read
    runs along (its last subscript's) and the member the target runs along, the same two
    for every statement; else None."""
    deps_of = member_dependence(node, scop)
    written = {scop.statement(name).target.array for name in deps_of
               if isinstance(scop.statement(name).target, Load)}
    pair = None
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        read = transposed_read(stmt)
        if read is None or read.array in written:
            return None
        ends = []
        for ref in (read, stmt.target):
            var = next(iter(ref.index[-1].vars()))
            at = [k for k, its in enumerate(members) if var in its]
            if len(at) != 1:
                return None
            ends.append(at[0])
        if ends[0] == ends[1] or (pair is not None and tuple(ends) != pair):
            return None
        pair = (ends[0], ends[1])
    return pair


def transpose_sizes(node: isl.ScheduleNode, scop: Scop) -> tuple[int, ...] | None:
    """Tile sizes for a band of transposed statements: ``TRANSPOSE_BLOCK`` on the pair, 1 on
    the other members; None for other bands."""
    pair = transpose_pair(node, scop)
    if pair is None:
        return None
    sizes = [1] * node.band_n_member()
    for k in pair:
        sizes[k] = TRANSPOSE_BLOCK
    return tuple(sizes)


def transposed_in_blocks(band: isl.ScheduleNode, scop: Scop, sizes: list[int]) -> bool:
    """Whether the tiles of ``band`` by ``sizes`` are transposed in registers: its
    statements' transposed reads (``transpose_pair``) are of f32 elements and its pair has
    ``TRANSPOSE_BLOCK`` points each."""
    pair = transpose_pair(band, scop)
    if pair is None or any(sizes[k] != TRANSPOSE_BLOCK for k in pair):
        return False
    return all(scop.array(transposed_read(scop.statement(name)).array).dtype == "f32"
               for name in member_dependence(band, scop))


def mark_transposes(point: isl.ScheduleNode, scop: Scop) -> isl.ScheduleNode:
    """The point band of a tile that ``transposed_in_blocks`` split into marked loops, the
    outer loop of the pair marked ``transpose``. Returns the band's place."""
    pair = transpose_pair(point, scop)
    if pair is None:
        raise InternalError("a transpose mark on a band without transposed reads")
    outer = min(pair)
    return split_and_mark(point, [
        LoopMark(bool(point.band_member_get_coincident(k)), TRANSPOSE if k == outer else "")
        for k in range(point.band_n_member())])
