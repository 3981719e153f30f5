"""Walks over isl AST nodes shared by the C loop emitter, its register tiles (tiles.py) and
the OpenCL mapping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from ..astgen import expr_ids
from ..schedule.reductions import LoopCarry
from ..schedule.tree import loop_mark

# Statement instances (or copied elements) under a parallel loop below which threads cost
# more than they save (an OpenMP fork/join is about a microsecond here; each statement's
# instances count). The figures behind these thresholds: bench/HISTORY.md, points 5b and 7.
PARALLEL_MIN_WORK = 8192
# The same for a loop around register tiles (a micro-kernel does 32 multiply-adds a cycle:
# 2^22 of them take about 65 us on one thread).
TILED_PARALLEL_MIN_WORK = 1 << 22
# The same for a loop around register tiles whose iterations share no data (every access
# moves with its iterator: batched matmul's batch loop): no thread reads another's tiles.
SEPARATE_PARALLEL_MIN_WORK = 1 << 15
# The same for the region a pack opens (every thread copies the tile, no fork per tile:
# RegisterTiles.pack).
PACKED_PARALLEL_MIN_WORK = 1 << 20


@dataclass
class LoopState:
    """What the C emitter knows about the loops around the node it prints."""

    in_parallel: bool = False
    used_locals: set[str] = field(default_factory=set)
    # inside a team region (see CEmitter.team_loop): the C flag that is true when the
    # outer loop shares out its iterations, false when the parallel loops here do
    team: str | None = None
    # inside the parallel region a pack opened (RegisterTiles.pack): the first loop on each
    # path shares out its iterations among the region's threads, without a fork of its own
    region: bool = False


class UnsharedWorkError(Exception):
    """A pack's body has work that no loop shares out among the threads of a region around
    it (RegisterTiles.pack then emits the copy and the body as before)."""


def has_loop(n: isl.AstNode) -> bool:
    t = n.get_type()
    if t == isl.ast_node_type.for_:
        return not n.for_is_degenerate() or has_loop(n.for_get_body())
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return any(has_loop(ch.get_at(i)) for i in range(ch.n_ast_node()))
    if t == isl.ast_node_type.if_:
        return has_loop(n.if_get_then_node()) or (
            n.if_has_else_node() and has_loop(n.if_get_else_node()))
    if t == isl.ast_node_type.mark:
        return has_loop(n.mark_get_node())
    return False


@dataclass(frozen=True)
class UserCall:
    """A statement instance in the AST: the statement's name and, per statement iterator,
    its value as printed and the identifiers (loop iterators, syms) that value uses, read
    from isl's expression."""

    name: str
    args: tuple[str, ...]
    uses: tuple[frozenset[str], ...]

    def values(self, iters: tuple[str, ...] | list[str]) -> dict[str, str]:
        return dict(zip(iters, self.args, strict=True))

    def moving(self, iters: tuple[str, ...] | list[str], loop: str) -> set[str]:
        """The statement iterators whose values move with the AST iterator ``loop``."""
        return {v for v, u in zip(iters, self.uses, strict=True) if loop in u}


def ast_users(n: isl.AstNode, em: Any) -> list[UserCall]:
    """Every statement instance (user node) under ``n``, in AST order."""
    t = n.get_type()
    if t == isl.ast_node_type.user:
        call = n.user_get_expr()
        exprs = [call.get_op_arg(i) for i in range(1, call.get_op_n_arg())]
        return [UserCall(call.get_op_arg(0).get_id().get_name(),
                         tuple(em.ast_expr(e) for e in exprs),
                         tuple(expr_ids(e) for e in exprs))]
    if t == isl.ast_node_type.for_:
        return ast_users(n.for_get_body(), em)
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return [u for i in range(ch.n_ast_node()) for u in ast_users(ch.get_at(i), em)]
    if t == isl.ast_node_type.if_:
        out = ast_users(n.if_get_then_node(), em)
        return out + (ast_users(n.if_get_else_node(), em) if n.if_has_else_node() else [])
    if t == isl.ast_node_type.mark:
        return ast_users(n.mark_get_node(), em)
    return []


def strip_parens(text: str) -> str:
    """``(a < b)`` -> ``a < b`` when the outer parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def mark_box(n: isl.AstNode) -> Any:
    """What astgen annotated a promote or pack mark with (``LazyBox`` or None, a tuple
    of ``PackBox``), or None when the AST has no annotation there."""
    try:
        ann = n.get_annotation()
    except isl.Error:  # an AST built without annotations
        return None
    return ann.get_user() if ann is not None else None


def loop_annotation(n: isl.AstNode) -> LoopCarry:
    """What the loop carries (astgen's annotation); ``NO_CARRY`` when the AST has none."""
    try:
        ann = n.get_annotation()
    except isl.Error:  # an AST built without annotations
        return NO_CARRY
    carry = ann.get_user() if ann is not None else None
    return carry if isinstance(carry, LoopCarry) else NO_CARRY


NO_CARRY = LoopCarry("")  # not known: neither parallel nor a reduction


def role_loops(n: isl.AstNode, role: str, through_ifs: bool) -> list[isl.AstNode | None]:
    """The nodes under marks with ``role`` in the subtree ``n`` (None where such a mark's
    child is not a for node), looking into ifs only when ``through_ifs``."""
    t = n.get_type()
    if t == isl.ast_node_type.mark:
        if getattr(loop_mark(n), "role", "") == role:
            child = n.mark_get_node()
            return [child if child.get_type() == isl.ast_node_type.for_ else None]
        return role_loops(n.mark_get_node(), role, through_ifs)
    if t == isl.ast_node_type.for_:
        return role_loops(n.for_get_body(), role, through_ifs)
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return [x for i in range(ch.n_ast_node())
                for x in role_loops(ch.get_at(i), role, through_ifs)]
    if t == isl.ast_node_type.if_ and through_ifs:
        out = role_loops(n.if_get_then_node(), role, through_ifs)
        if n.if_has_else_node():
            out += role_loops(n.if_get_else_node(), role, through_ifs)
        return out
    return []


def find_role_loop(n: isl.AstNode, role: str, through_ifs: bool = False
                    ) -> isl.AstNode | None:
    """The for node under the first mark with ``role`` in the subtree ``n``."""
    found = role_loops(n, role, through_ifs)
    return found[0] if found else None


def count_role_loops(n: isl.AstNode, role: str) -> int:
    return len(role_loops(n, role, through_ifs=True))


def constant_trip(n: isl.AstNode) -> int | None:
    """The trip count of ``for (c = 0; c <= K; c += 1)`` with constant K, else None."""
    init, cond, inc = n.for_get_init(), n.for_get_cond(), n.for_get_inc()
    if init.get_type() != isl.ast_expr_type.int or init.get_val().to_python() != 0:
        return None
    if inc.get_type() != isl.ast_expr_type.int or inc.get_val().to_python() != 1:
        return None
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2:
        return None
    bound = cond.get_op_arg(1)
    if bound.get_type() != isl.ast_expr_type.int:
        return None
    k = bound.get_val().to_python()
    op = cond.get_op_type()
    if op == isl.ast_expr_op_type.le:
        return k + 1
    if op == isl.ast_expr_op_type.lt:
        return k
    return None
