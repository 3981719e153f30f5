"""Two loops that walk rows of arrays as one contiguous run, printed as one loop:

    for (h = 0; h < H; h += 1)  for (w = 0; w < W; w += 1)  s += X[((b * C + c) * H + h) * W + w];

becomes ``h = 0; for (w = 0; w < H * W; w += 1) s += ...``: with ``h`` at 0 and ``w`` over
``H * W`` the subscripts name the same elements in the same order, since every access uses
``h`` and ``w`` as adjacent subscripts of dimensions ``[.., H', W]`` (``W`` the inner loop's
extent; row-major, ``h * W + w`` is the running offset). The vector loop then runs 49
iterations for a 7 x 7 pool, not 7 with a reduction's tail and horizontal sum for each.

Only an innermost pair of plain loops (no role in their marks) from 0 with step 1 whose body
is statements alone, an
inner extent that is a size or a constant, and the same carried dependences on both loops
(both free of dependences, or both carrying the same reductions, or both sequential), so the
inner loop's pragma holds for the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..schedule.tree import loop_mark
from ..scop.exprs import Index, Load
from .astnodes import ast_users, loop_annotation

_T = isl.ast_expr_op_type


@dataclass(frozen=True)
class Collapse:
    """``outer``'s loop and its body loop ``inner`` run as ``inner`` over ``bound`` (C)."""

    inner: isl.AstNode
    bound: str
    parallel: bool  # the inner loop's mark says it is parallel


def collapsible(n: isl.AstNode, em: Any) -> Collapse | None:
    """The collapse of the for node ``n`` with the loop that is its body, or None."""
    outer = _plain_loop(n, em)
    inner_node, parallel = _body_loop(n)
    if outer is None or inner_node is None:
        return None
    inner = _plain_loop(inner_node, em)
    if inner is None:
        return None
    extent = inner_node.for_get_cond().get_op_arg(1)
    width = _width(extent)
    a, b = loop_annotation(n), loop_annotation(inner_node)
    if width is None or not _statements_only(inner_node.for_get_body()) or \
            not a.kind or (a.kind, a.reductions) != (b.kind, b.reductions):
        return None
    for user in ast_users(inner_node, em):
        stmt = em.scop.statement(user.name)
        values = user.values(stmt.iters)
        rows = [v for v, x in values.items() if x == outer]
        cols = [v for v, x in values.items() if x == inner]
        others = set(stmt.iters) - set(rows) - set(cols)
        if len(rows) != 1 or len(cols) != 1 or any(
                {outer, inner} & used for v, used in zip(stmt.iters, user.uses, strict=True)
                if v in others) or not _adjacent(em.scop, stmt, rows[0], cols[0], width):
            return None
    return Collapse(inner_node, f"({em.ast_expr(n.for_get_cond().get_op_arg(1))}) * "
                                f"({em.ast_expr(extent)})", parallel)


def _body_loop(n: isl.AstNode) -> tuple[isl.AstNode | None, bool]:
    """The for node that is ``n``'s body (through a plain loop mark), and whether that mark
    says it is parallel."""
    body, parallel = n.for_get_body(), False
    if body.get_type() == isl.ast_node_type.mark:
        mark = loop_mark(body)
        if mark is None or mark.role:
            return None, False
        body, parallel = body.mark_get_node(), mark.parallel
    return (body, parallel) if body.get_type() == isl.ast_node_type.for_ else (None, False)


def _width(extent: isl.AstExpr) -> tuple[dict[str, int], int] | None:
    """An inner loop's extent as ``Aff.linear`` gives it: a size or a constant, else None."""
    if extent.get_type() == isl.ast_expr_type.id:
        return {extent.get_id().get_name(): 1}, 0
    if extent.get_type() == isl.ast_expr_type.int:
        return {}, int(extent.get_val().to_python())
    return None


def _plain_loop(n: isl.AstNode, em: Any) -> str | None:
    """The iterator of ``for (it = 0; it < e; it += 1)``, else None."""
    if n.for_is_degenerate():
        return None
    cond = n.for_get_cond()
    it = n.for_get_iterator().get_id().get_name()
    if em.ast_expr(n.for_get_init()) != "0" or em.ast_expr(n.for_get_inc()) != "1" or \
            cond.get_type() != isl.ast_expr_type.op or cond.get_op_type() != _T.lt:
        return None
    first = cond.get_op_arg(0)
    if first.get_type() != isl.ast_expr_type.id or first.get_id().get_name() != it:
        return None
    return it


def _statements_only(n: isl.AstNode) -> bool:
    t = n.get_type()
    if t == isl.ast_node_type.user:
        return True
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return all(ch.get_at(i).get_type() == isl.ast_node_type.user
                   for i in range(ch.n_ast_node()))
    return False


def _adjacent(scop: Any, stmt: Any, row: str, col: str,
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
