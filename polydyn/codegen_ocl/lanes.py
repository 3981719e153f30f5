"""Which kernel bodies a work-group of lanes can share (the lane kernels of mapping.py)."""

from __future__ import annotations

import islpy as isl

from ..codegen_c.astnodes import loop_annotation
from ..schedule.reductions import REDUCE_LOOP
from ..scop.ir import Scop
from .scalars import scalar_users

# local scalar types a lane kernel combines (the prelude's pd_max_<type>/pd_min_<type>)
LANE_TYPES = ("f32", "f64", "i32", "i64")
_AT = isl.ast_node_type


def lane_body(scop: Scop, ast: isl.AstNode, statements: set[str]) -> bool:
    """Whether a kernel body can be dealt out to lanes: it has a loop, every loop outside
    all others (loops of one iteration are blocks) is parallel or carried only by reductions
    (into local scalars of the types the combine knows), and each local scalar it touches is
    touched by no other kernel's statement (it stays in the lanes' registers). Statements
    outside the loops run in every lane when they assign a local scalar, else in lane 0
    between barriers."""
    loops: list[str] = []

    def fits(n: isl.AstNode) -> bool:
        kind = n.get_type()
        if kind == _AT.block:
            children = n.block_get_children()
            return all(fits(children.get_at(k)) for k in range(children.n_ast_node()))
        if kind == _AT.if_:
            return fits(n.if_get_then_node()) and \
                (not n.if_has_else_node() or fits(n.if_get_else_node()))
        if kind == _AT.mark:
            return fits(n.mark_get_node())
        if kind == _AT.for_ and n.for_is_degenerate():  # one value: a block, not a loop
            return fits(n.for_get_body())
        if kind == _AT.for_:
            carry = loop_annotation(n)
            loops.append(carry)
            return carry.parallel or (carry.kind == REDUCE_LOOP and all(
                scop.array(name).dtype in LANE_TYPES for _, name in carry.reductions))
        return kind == _AT.user

    if not fits(ast) or not loops:
        return False
    return all(users <= statements or not users & statements
               for users in scalar_users(scop).values())
