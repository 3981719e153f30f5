"""A lowering pass of the C target: two loops that walk rows of arrays as one contiguous
run become one loop (a ``Collapsed`` node):

    for (h = 0; h < H; h += 1)  for (w = 0; w < W; w += 1)  s += X[((b * C + c) * H + h) * W + w];

becomes ``h = 0; for (w = 0; w < H * W; w += 1) s += ...``: with ``h`` at 0 and ``w`` over
``H * W`` the subscripts name the same elements in the same order, since every access uses
``h`` and ``w`` as adjacent subscripts of dimensions ``[.., H', W]`` (``W`` the inner loop's
extent; row-major, ``h * W + w`` is the running offset). The vector loop then runs 49
iterations for a 7 x 7 pool, not 7 with a reduction's tail and horizontal sum for each.

Only an innermost pair of plain loops (no role in their marks) from 0 with step 1 whose body
is statements alone, an inner extent that is a size or a constant, and the same carried
dependences on both loops (both free of dependences, or both carrying the same reductions, or
both sequential), so the inner loop's pragma holds for the run. Not below marks with a role
or packs (register tiles, packed copies, split sums print their statements their own way),
not a loop the printer may share among threads (an outermost parallel one), and not in a
team region's outer loop body outside its shared loops (``teams.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl

from ..astgen import ast_expr_c
from ..scop.exprs import Index, Load
from ..scop.ir import Scop, Statement
from .teams import forms_team, local_writers
from .tree import (
    Block,
    Collapsed,
    If,
    Instance,
    Loop,
    MarkNode,
    Node,
    expr_ids,
    has_loop,
    instances,
)

_T = isl.ast_expr_op_type


def collapse(tree: Node, scop: Scop) -> Node:
    """``tree`` with every pair of loops that walks rows as one contiguous run collapsed."""
    return _Pass(scop, local_writers(scop)).node(tree, _Around())


@dataclass(frozen=True)
class _Around:
    """The loops around a node, as the printer sees them: a parallel loop (its mark), and a
    team region's outer loop body outside its shared loops."""

    in_parallel: bool = False
    team: bool = False


@dataclass(frozen=True)
class _Pass:
    scop: Scop
    writers: frozenset[str]

    def node(self, n: Node, at: _Around) -> Node:
        if isinstance(n, Block):
            return replace(n, children=tuple(self.node(c, at) for c in n.children))
        if isinstance(n, If):
            return replace(n, then=self.node(n.then, at),
                           orelse=None if n.orelse is None else self.node(n.orelse, at))
        if isinstance(n, Loop):
            return self.loop(n, at, parallel=False)
        if isinstance(n, MarkNode):
            if n.role == "init":  # printed where its register tile is, in the same place
                return replace(n, node=self.node(n.node, at))
            if n.loop is None or n.role:  # packs, register tiles, split sums: their own
                return n
            return replace(n, node=self.marked(n.node, at, n.loop.parallel))
        return n

    def marked(self, n: Node, at: _Around, parallel: bool) -> Node:
        """A plain loop mark applies to the loops reached through blocks and ifs."""
        if isinstance(n, Loop):
            return self.loop(n, at, parallel)
        if isinstance(n, Block):
            return replace(n, children=tuple(self.marked(c, at, parallel) for c in n.children))
        if isinstance(n, If):
            return replace(n, then=self.marked(n.then, at, parallel),
                           orelse=None if n.orelse is None else
                           self.marked(n.orelse, at, parallel))
        return self.node(n, at)

    def loop(self, n: Loop, at: _Around, parallel: bool) -> Node:
        if n.degenerate:
            return replace(n, body=self.node(n.body, at))
        if not at.team and not (parallel and not at.in_parallel):
            pair = collapsible(n, self.scop)
            if pair is not None:
                return pair
        if at.team:  # a shared loop's body is the threads' as usual
            shared = parallel and n.carry.parallel and has_loop(n.body)
            inside = _Around(True, team=not shared)
        elif forms_team(n, parallel, at.in_parallel, self.writers):
            inside = _Around(True, team=True)
        else:
            inside = _Around(at.in_parallel or parallel)
        return replace(n, body=self.node(n.body, inside))


def collapsible(n: Loop, scop: Scop) -> Collapsed | None:
    """The collapse of the loop ``n`` with the loop that is its body, or None."""
    outer = _plain_loop(n)
    inner, parallel = _body_loop(n)
    if outer is None or inner is None:
        return None
    inner_it = _plain_loop(inner)
    if inner_it is None:
        return None
    width = _width(inner.cond.get_op_arg(1))
    a, b = n.carry, inner.carry
    if width is None or not _statements_only(inner.body) or \
            not a.kind or (a.kind, a.reductions) != (b.kind, b.reductions):
        return None
    for call in instances(inner):
        stmt = scop.statement(call.name)
        values = {v: ast_expr_c(e) for v, e in zip(stmt.iters, call.args, strict=True)}
        rows = [v for v, x in values.items() if x == outer]
        cols = [v for v, x in values.items() if x == inner_it]
        others = set(stmt.iters) - set(rows) - set(cols)
        if len(rows) != 1 or len(cols) != 1 or any(
                {outer, inner_it} & expr_ids(e)
                for v, e in zip(stmt.iters, call.args, strict=True) if v in others) or \
                not _adjacent(scop, stmt, rows[0], cols[0], width):
            return None
    return Collapsed(n, inner, parallel)


def _body_loop(n: Loop) -> tuple[Loop | None, bool]:
    """The loop that is ``n``'s body (through a plain loop mark), and whether that mark
    says it is parallel."""
    body, parallel = n.body, False
    if isinstance(body, MarkNode):
        mark = body.loop
        if mark is None or mark.role:
            return None, False
        body, parallel = body.node, mark.parallel
    return (body, parallel) if isinstance(body, Loop) else (None, False)


def _width(extent: isl.AstExpr) -> tuple[dict[str, int], int] | None:
    """An inner loop's extent as ``Aff.linear`` gives it: a size or a constant, else None."""
    if extent.get_type() == isl.ast_expr_type.id:
        return {extent.get_id().get_name(): 1}, 0
    if extent.get_type() == isl.ast_expr_type.int:
        return {}, int(extent.get_val().to_python())
    return None


def _plain_loop(n: Loop) -> str | None:
    """The iterator of ``for (it = 0; it < e; it += 1)``, else None."""
    if n.degenerate:
        return None
    cond = n.cond
    if ast_expr_c(n.init) != "0" or ast_expr_c(n.inc) != "1" or \
            cond.get_type() != isl.ast_expr_type.op or cond.get_op_type() != _T.lt:
        return None
    first = cond.get_op_arg(0)
    if first.get_type() != isl.ast_expr_type.id or first.get_id().get_name() != n.iterator:
        return None
    return n.iterator


def _statements_only(n: Node) -> bool:
    if isinstance(n, Instance):
        return True
    return isinstance(n, Block) and all(isinstance(c, Instance) for c in n.children)


def _adjacent(scop: Scop, stmt: Statement, row: str, col: str,
              width: tuple[dict[str, int], int]) -> bool:
    """Every access of ``stmt`` that uses ``row`` or ``col`` has them as adjacent subscripts
    ``[.., row, col, ..]`` of an array whose dimension at ``col`` is ``width``; no other
    expression uses them."""
    pair = {row, col}
    for e in stmt.value.walk():
        if isinstance(e, Index) and e.aff.vars() & pair:
            return False
    refs = [e for e in (stmt.target, *stmt.value.walk()) if isinstance(e, Load)]
    for ref in refs:
        hits = [d for d, aff in enumerate(ref.index) if aff.vars() & pair]
        if not hits:
            continue
        shape = scop.array(ref.array).shape
        if len(hits) != 2 or hits[1] != hits[0] + 1 or \
                ref.index[hits[0]].linear() != ({row: 1}, 0) or \
                ref.index[hits[1]].linear() != ({col: 1}, 0) or \
                shape[hits[1]].linear() != width:
            return False
    return True
