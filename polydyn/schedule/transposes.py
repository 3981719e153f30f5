"""Transposing copies (``Y[b, j, i] = X[b, i, j]``, a layout change): tiles of 16 x 16 over
the two members the arrays run along, the other members untiled, and a ``transpose`` mark
on such a tile's outer point loop where the elements are 4 bytes wide. The C emitter
(``codegen_c/transposes.py``) copies a full tile through registers (``pd_tr16_f32``: 16
vector loads, 16 stores, the shuffles between them), where each element copied alone
reads or writes a line per element. Partial tiles, and a tile of other sizes given by a
recipe, run the plain loops.

Tiling only the transposed pair keeps the batch loop untiled: a batch of 16 was below the
generic tile of 48 and ran untiled, a column of the output written per row of the input."""

from __future__ import annotations

import islpy as isl

from ..errors import InternalError
from ..scop.exprs import Load
from ..scop.ir import Scop
from .bands import member_dependence
from .tree import TRANSPOSE, LoopMark, split_and_mark

# The points of a tile along each member of the pair: a 16 x 16 tile of 4-byte elements is
# 16 vectors of AVX-512, and a whole line of each array per row.
TRANSPOSE_BLOCK = 16


def transposing_copies(scop: Scop) -> list[str]:
    """The statements that copy an array into another order (``Wt[k, o] = W[o, k]``): a
    load stored as it is, each subscript of both one loop variable, the same variables in
    another order."""
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
    """For a band whose statements all copy one array into another in another order: the
    member the source runs along (its last subscript's) and the member the target runs
    along, the same two for every statement; else None."""
    deps_of = member_dependence(node, scop)
    copies = set(transposing_copies(scop))
    pair = None
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        if name not in copies or stmt.target.array == stmt.value.array:
            return None
        ends = []
        for ref in (stmt.value, stmt.target):
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
    """Tile sizes for a band of transposing copies: ``TRANSPOSE_BLOCK`` on the pair, 1 on
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
    statements are transposing copies of f32 elements (both sides) and its
    pair has ``TRANSPOSE_BLOCK`` points each."""
    pair = transpose_pair(band, scop)
    if pair is None or any(sizes[k] != TRANSPOSE_BLOCK for k in pair):
        return False
    for name in member_dependence(band, scop):
        stmt = scop.statement(name)
        if {scop.array(ref.array).dtype for ref in (stmt.target, stmt.value)} != {"f32"}:
            return False
    return True


def mark_transposes(point: isl.ScheduleNode, scop: Scop) -> isl.ScheduleNode:
    """The point band of a tile that ``transposed_in_blocks`` split into marked loops, the
    outer loop of the pair marked ``transpose``. Returns the band's place."""
    pair = transpose_pair(point, scop)
    if pair is None:
        raise InternalError("a transpose mark on a band that is not of transposing copies")
    outer = min(pair)
    return split_and_mark(point, [
        LoopMark(bool(point.band_member_get_coincident(k)), TRANSPOSE if k == outer else "")
        for k in range(point.band_n_member())])
