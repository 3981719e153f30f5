"""Where the C printer opens its two kinds of parallel regions of many loops: team regions
(``LoopEmitter.team_loop``: an outermost parallel loop with loops inside, whose trip count
may be below the number of threads, and whose every statement lies inside loops the region
can share out) and pack regions (``PackedTiles.pack``: one region around a packed tile's
copies and the loops below, every statement inside a loop the region shares out). The
printer decides with these predicates, before it prints; the collapse pass asks them too,
since a team region's loops print in their own forms."""

from __future__ import annotations

from collections.abc import Set

import islpy as isl

from ..schedule.reductions import SELECT_LOOP, SEQUENTIAL_LOOP
from ..schedule.tree import PackMark
from ..scop.exprs import Scalar
from ..scop.ir import Scop
from .tree import Block, Collapsed, If, Loop, MarkNode, Node, has_loop, instances


def local_writers(scop: Scop) -> frozenset[str]:
    """The statements that assign a local scalar: a team region has none (their scalars
    would need private copies)."""
    return frozenset(s.name for s in scop.statements if isinstance(s.target, Scalar)
                     and scop.array(s.target.name).kind == "local")


def team_body(n: Node, parallel: bool | None = None) -> bool:
    """Whether every statement under ``n`` (a parallel loop's body) lies inside a parallel
    loop (with loops inside) reached through blocks, ifs, plain loop marks, sequential loops
    and packs only: the loops a team region shares out when the outer loop has too few
    iterations (every thread runs the sequential loops and copies the packed tiles for
    itself). ``parallel``: the loop mark above says the loop is parallel (None: outside a
    loop mark)."""
    if isinstance(n, Block):
        return all(team_body(c, parallel) for c in n.children)
    if isinstance(n, If):
        return team_body(n.then, parallel) and (n.orelse is None or
                                                team_body(n.orelse, parallel))
    if isinstance(n, MarkNode):
        if isinstance(n.mark, PackMark):
            return team_body(n.node)
        mark = n.loop
        return mark is not None and mark.role == "" and team_body(n.node, mark.parallel)
    if isinstance(n, Collapsed):
        return team_body(n.original, parallel)
    if isinstance(n, Loop) and parallel is not None:
        if n.degenerate:
            return False
        if parallel and n.carry.parallel and has_loop(n.body):
            return True
        return not parallel and team_body(n.body)
    return False


def forms_team(n: Loop, parallel: bool, in_parallel: bool, writers: Set[str]) -> bool:
    """Whether the loop ``n`` (its mark parallel or not; ``in_parallel``: a loop around it
    is) opens a team region: an outermost parallel loop, carrying nothing sequential, with
    loops inside, a trip count known as ``iterator < e`` or ``<= e``, no statement under it
    that assigns a local scalar (``writers``: ``local_writers``) and a ``team_body``."""
    cond = n.cond
    return parallel and not in_parallel and not n.degenerate and \
        n.carry.kind not in (SEQUENTIAL_LOOP, SELECT_LOOP) and has_loop(n.body) and \
        cond.get_type() == isl.ast_expr_type.op and cond.get_op_n_arg() == 2 and \
        cond.get_op_type() in (isl.ast_expr_op_type.lt, isl.ast_expr_op_type.le) and \
        not any(i.name in writers for i in instances(n.body)) and team_body(n.body)


def region_body(n: Node, writers: Set[str], parallel: bool | None = None) -> bool:
    """Whether a pack's region can hold ``n`` (the pack mark's child): every statement under
    it lies in a parallel loop with loops inside (its mark parallel and nothing carried),
    reached through blocks, ifs, plain loop and init marks, loops of one iteration and packs
    without boxes; no other pack or mark with a role on the way; no statement under a shared
    loop assigns a local scalar (``writers``). ``parallel``: the loop mark above says the
    loop is parallel (None: no loop mark applies here)."""
    if isinstance(n, Block):
        return all(region_body(c, writers, parallel) for c in n.children)
    if isinstance(n, If):
        return region_body(n.then, writers, parallel) and (
            n.orelse is None or region_body(n.orelse, writers, parallel))
    if isinstance(n, MarkNode):
        if isinstance(n.mark, PackMark):
            return not n.box and region_body(n.node, writers)
        if n.loop is None:  # an init's mark: its loops as under a sequential one
            return region_body(n.node, writers, False)
        return not n.loop.role and region_body(n.node, writers, n.loop.parallel)
    if isinstance(n, Loop):
        if n.degenerate:
            return region_body(n.body, writers)
        return bool(parallel) and n.carry.parallel and has_loop(n.body) and \
            not any(i.name in writers for i in instances(n.body))
    return False
