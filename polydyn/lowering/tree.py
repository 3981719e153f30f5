"""The typed loop tree: isl's AST (stage 4) as frozen nodes that the printers and the
OpenCL mapping walk. Each node holds isl's own expressions (``isl.AstExpr``) and, read once
here, what astgen annotated it with: a loop's carried dependences (``LoopCarry``), a mark's
typed mark (``LoopMark``, ``PackMark``, ``InitMark``) and its box, a statement instance's
iterator map. Nothing downstream asks isl's AST nodes again, and a pass can rebuild a
subtree (``dataclasses.replace``) where an isl AST node cannot be changed.

Nodes compare by identity: two loops with the same text at two places are two loops.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..errors import InternalError
from ..schedule.reductions import LoopCarry
from ..schedule.tree import INIT, PROMOTE, InitMark, LoopMark, Mark, PackMark

NO_CARRY = LoopCarry("")  # not known (an AST built without annotations): neither parallel
# nor a reduction


@dataclass(frozen=True, eq=False)
class Loop:
    """``for (iterator = init; cond; iterator += inc) body``; ``degenerate``: it runs once,
    at ``init``."""

    iterator: str
    init: isl.AstExpr
    cond: isl.AstExpr
    inc: isl.AstExpr
    body: Node
    degenerate: bool
    carry: LoopCarry = NO_CARRY


@dataclass(frozen=True, eq=False)
class Block:
    children: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class If:
    cond: isl.AstExpr
    then: Node
    orelse: Node | None = None


@dataclass(frozen=True, eq=False)
class MarkNode:
    """A polydyn mark above ``node``. ``box``: astgen's annotation of a promote mark
    (``LazyBox`` or None) or of a pack mark (a tuple of ``PackBox``), else None."""

    mark: Mark
    node: Node
    box: Any = None

    @property
    def loop(self) -> LoopMark | None:
        return self.mark if isinstance(self.mark, LoopMark) else None

    @property
    def role(self) -> str:
        """The loop mark's role, ``init`` for an init mark, else ''."""
        if isinstance(self.mark, InitMark):
            return INIT
        return self.mark.role if isinstance(self.mark, LoopMark) else ""


@dataclass(frozen=True, eq=False)
class Instance:
    """One instance of statement ``name``: its iterators' values, in order, as isl's AST
    expressions and (in an annotated AST) as isl's iterator map ``{ [loops] -> S[i] }``."""

    name: str
    args: tuple[isl.AstExpr, ...]
    iterators: isl.PwMultiAff | None = None

    def steps(self, loop: str) -> tuple[int, ...] | None:
        """How much each statement iterator moves when the AST iterator ``loop`` moves by
        one, from the iterator map: None without one, or where an iterator is not one affine
        expression of the loops or divides ``loop``."""
        if self.iterators is None:
            return None
        pos = self.iterators.get_space().find_dim_by_name(isl.dim_type.in_, loop)
        out = []
        for k in range(self.iterators.dim(isl.dim_type.out)):
            pieces = self.iterators.get_pw_aff(k).get_pieces()
            if len(pieces) != 1:
                return None
            aff = pieces[0][1]
            if pos >= 0 and any(aff.get_div(d).involves_dims(isl.dim_type.in_, pos, 1)
                                for d in range(aff.dim(isl.dim_type.div))):
                return None  # a division of the loop's iterator (its floor)
            step = aff.get_coefficient_val(isl.dim_type.in_, pos) if pos >= 0 else None
            if step is not None and not step.is_int():
                return None
            out.append(0 if step is None else int(step.to_python()))
        return tuple(out)

    def moving(self, iters: tuple[str, ...] | list[str], loop: str) -> set[str]:
        """The statement iterators (named ``iters``) whose values move with the AST
        iterator ``loop``: from the iterator map where it is affine in ``loop``
        (``steps``), else the iterators whose expression names ``loop``."""
        steps = self.steps(loop)
        if steps is not None:
            return {v for v, step in zip(iters, steps, strict=True) if step}
        return {v for v, e in zip(iters, self.args, strict=True) if loop in expr_ids(e)}


@dataclass(frozen=True, eq=False)
class Collapsed:
    """``original``, a loop whose body is the loop ``inner`` (through a plain loop mark),
    run as ``inner`` alone over both loops' values (``lowering/collapse.py``):
    ``original``'s iterator stays 0 while ``inner``'s runs over ``rows`` times its own
    extent. ``parallel``: ``inner``'s mark says it is parallel. Walks over the tree see
    ``original``: the same statement instances and loops."""

    original: Loop
    inner: Loop
    parallel: bool

    @property
    def rows(self) -> isl.AstExpr:
        """``original``'s extent (its condition is ``iterator < rows``)."""
        return self.original.cond.get_op_arg(1)


Node = Loop | Block | If | MarkNode | Instance | Collapsed


def from_isl(n: isl.AstNode, loops: bool = False, marks: bool = False) -> Node:
    """The typed tree of isl's AST ``n``. ``loops``: every for node and statement instance
    carries an annotation (``astgen.annotated_ast``); ``marks``: every promote mark and
    non-empty pack mark does (``astgen.build_ast``). Only those are read: asking a node
    without one raises inside islpy, which a sanitizer-preloaded process cannot unwind."""
    t = n.get_type()
    if t == isl.ast_node_type.for_:
        carry = NO_CARRY
        if loops:
            user = n.get_annotation().get_user()
            carry = user if isinstance(user, LoopCarry) else NO_CARRY
        body = from_isl(n.for_get_body(), loops, marks)
        return Loop(n.for_get_iterator().get_id().get_name(), n.for_get_init(),
                    n.for_get_cond(), n.for_get_inc(), body, bool(n.for_is_degenerate()), carry)
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return Block(tuple(from_isl(ch.get_at(i), loops, marks)
                           for i in range(ch.n_ast_node())))
    if t == isl.ast_node_type.if_:
        orelse = from_isl(n.if_get_else_node(), loops, marks) if n.if_has_else_node() \
            else None
        return If(n.if_get_cond(), from_isl(n.if_get_then_node(), loops, marks), orelse)
    if t == isl.ast_node_type.mark:
        mark = n.mark_get_id().get_user()
        if not isinstance(mark, LoopMark | PackMark | InitMark):
            raise InternalError(f"a mark polydyn did not place: {n.mark_get_id().get_name()}")
        box = None
        if marks and ((isinstance(mark, LoopMark) and mark.role == PROMOTE) or
                      (isinstance(mark, PackMark) and mark.arrays)):
            box = n.get_annotation().get_user()
        return MarkNode(mark, from_isl(n.mark_get_node(), loops, marks), box)
    if t == isl.ast_node_type.user:
        call = n.user_get_expr()
        iterators = n.get_annotation().get_user() if loops else None
        return Instance(call.get_op_arg(0).get_id().get_name(),
                        tuple(call.get_op_arg(i) for i in range(1, call.get_op_n_arg())),
                        iterators)
    raise InternalError(f"unexpected isl AST node type {t}")


def expr_ids(e: isl.AstExpr) -> frozenset[str]:
    """The identifiers (loop iterators, syms) an isl AST expression uses."""
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        return frozenset([e.get_id().get_name()])
    if t == isl.ast_expr_type.int:
        return frozenset()
    return frozenset().union(*(expr_ids(e.get_op_arg(i)) for i in range(e.get_op_n_arg())))


def children(n: Node) -> tuple[Node, ...]:
    """The nodes right below ``n``."""
    if isinstance(n, Loop):
        return (n.body,)
    if isinstance(n, Block):
        return n.children
    if isinstance(n, If):
        return (n.then,) if n.orelse is None else (n.then, n.orelse)
    if isinstance(n, MarkNode):
        return (n.node,)
    if isinstance(n, Collapsed):
        return (n.original,)
    return ()


def instances(n: Node) -> Iterator[Instance]:
    """Every statement instance under ``n``, in AST order."""
    if isinstance(n, Instance):
        yield n
    for c in children(n):
        yield from instances(c)


def has_loop(n: Node) -> bool:
    """A loop that runs more than once under ``n`` (or ``n`` itself)."""
    if isinstance(n, Loop):
        return not n.degenerate or has_loop(n.body)
    return any(has_loop(c) for c in children(n))


def role_loops(n: Node, role: str, through_ifs: bool) -> list[Loop | None]:
    """The nodes under marks with ``role`` in the subtree ``n`` (None where such a mark's
    child is not a loop), looking into ifs only when ``through_ifs``."""
    if isinstance(n, MarkNode) and n.loop is not None and n.loop.role == role:
        return [n.node if isinstance(n.node, Loop) else None]
    if isinstance(n, If) and not through_ifs:
        return []
    return [x for c in children(n) for x in role_loops(c, role, through_ifs)]


def find_role_loop(n: Node, role: str, through_ifs: bool = False) -> Loop | None:
    """The loop under the first mark with ``role`` in the subtree ``n``."""
    found = role_loops(n, role, through_ifs)
    return found[0] if found else None


def count_role_loops(n: Node, role: str) -> int:
    return len(role_loops(n, role, through_ifs=True))


def constant_trip(n: Loop) -> int | None:
    """The trip count of ``for (c = 0; c <= K; c += 1)`` with constant K, else None."""
    init, cond, inc = n.init, n.cond, n.inc
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


def tree_text(n: Node, indent: str = "") -> str:
    """``n`` as C-like text with its marks and what each loop carries: the AST dump."""
    if isinstance(n, Loop):
        head = f"{indent}for ({n.iterator} = {n.init.to_C_str()}; {n.cond.to_C_str()}; " \
            f"{n.iterator} += {n.inc.to_C_str()})"
        note = f"  // {n.carry}" if n.carry.kind else ""
        if n.degenerate:
            head, note = f"{indent}// once: {n.iterator} = {n.init.to_C_str()}", ""
        return f"{head}{note}\n{tree_text(n.body, indent + '  ')}"
    if isinstance(n, Block):
        return "".join(tree_text(c, indent) for c in n.children)
    if isinstance(n, If):
        out = f"{indent}if ({n.cond.to_C_str()})\n{tree_text(n.then, indent + '  ')}"
        return out + (f"{indent}else\n{tree_text(n.orelse, indent + '  ')}"
                      if n.orelse is not None else "")
    if isinstance(n, MarkNode):
        return f"{indent}// {n.mark}\n{tree_text(n.node, indent)}"
    if isinstance(n, Collapsed):
        return f"{indent}// collapsed: {n.original.iterator} = 0, " \
            f"{n.inner.iterator} over {n.rows.to_C_str()} rows\n" \
            f"{tree_text(n.inner, indent)}"
    return f"{indent}{n.name}({', '.join(a.to_C_str() for a in n.args)});\n"
