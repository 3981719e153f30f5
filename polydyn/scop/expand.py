"""Local scalars expanded into temporaries where the loops around their iteration, not their
own inner loops, run along the arrays' rows (the inverse of scop/contract.py):

    for b, d:  m = X[b, 0, d];  for s: m = max(m, X[b, s, d]);  for s: Y[b, s, d] = ... m ...

(a softmax over the middle axis of ``[B, S, D]``) reads X down its columns in every loop over
``s``: the scalar, private to one ``(b, d)``, keeps ``d`` outside those loops, so no loop is
stride 1 and nothing vectorizes. Expanded over the loops of its iteration, the scalar is a
temporary ``m[b, d]``, and the automatic schedule (``schedule.auto.sink_row_members``) can run
``d`` below the loops over ``s``, along X's rows.

The rewrite is exact where it applies: the first statement that touches the scalar in the
innermost loop around its statements is a direct child of that loop's body that assigns it
with ``=`` without reading it, so each iteration starts by overwriting its own cell. It is
done where it pays: that loop's variable ``v`` is the last subscript of every array access
below it in an inner loop, and some access there moves along an inner loop in another
subscript; the loops around have constant step 1, start at 0 and end at a size.
"""

from __future__ import annotations

import islpy as isl

from .affine import Aff
from .exprs import Load, Scalar, reads_scalar, substitute_scalar
from .ir import Array, Loop, Node, Scop, Statement, StmtRef, statements_under


def expand_row_scalars(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every local scalar of that form held in a temporary over the loops of
    its iteration, and a sentence for each (``scop`` itself and none when none is)."""
    found: dict[str, tuple[Loop, ...]] = {}
    _search(scop, scop.tree, (), found)
    if not found:
        return scop, ()
    arrays = list(scop.arrays)
    statements = list(scop.statements)
    notes = []
    for name, loops in found.items():
        a = scop.array(name)
        cell = Load(a.dtype, name, tuple(Aff.var(loop.var) for loop in loops))
        arrays[arrays.index(a)] = Array(name, a.dtype, tuple(loop.hi for loop in loops), "temp")
        statements = [_expanded(s, name, cell) if _names_scalar(s, name) else s
                      for s in statements]
        notes.append(f"{name}: the scalar is kept in {name}[{', '.join(lp.var for lp in loops)}]"
                     f" (the loop over {loops[-1].var} then runs along the rows)")
    return scop.replace(statements=tuple(statements), arrays=tuple(arrays)), tuple(notes)


def _search(scop: Scop, body: tuple[Node, ...], loops: tuple[Loop, ...],
            found: dict[str, tuple[Loop, ...]]) -> None:
    """The scalars expanded over ``loops`` (the loops around ``body``) and over loops below."""
    if loops and _rows_outside(scop, body, loops[-1].var) and \
            all(_sized(scop, loop) for loop in loops):
        for node in body:
            if not isinstance(node, StmtRef):
                continue
            stmt = scop.statement(node.name)
            target = stmt.target
            if isinstance(target, Scalar) and scop.array(target.name).kind == "local" and \
                    target.name not in found and _first_write(scop, body, target.name, node):
                found[target.name] = loops
    for node in body:
        if isinstance(node, Loop):
            _search(scop, node.body, (*loops, node), found)


def _rows_outside(scop: Scop, body: tuple[Node, ...], v: str) -> bool:
    """The statements in the loops of ``body`` run along ``v`` in their arrays' rows
    (``rows_along``)."""
    verdicts = []
    for node in body:
        if isinstance(node, Loop):
            for name in statements_under(node):
                stmt = scop.statement(name)
                below = set(stmt.iters[stmt.iters.index(v) + 1:]) if v in stmt.iters else set()
                verdicts.append(rows_along(scop, stmt, v, below))
    return bool(verdicts) and None not in verdicts and any(verdicts)


def rows_along(scop: Scop, stmt: Statement, v: str, below: set[str]) -> bool | None:
    """None when an array access of ``stmt`` moves along loop ``v`` other than in its last
    subscript alone with stride 1; else whether one that does moves along a loop of
    ``below`` in another subscript (an access that does not move along ``v``, a weight
    ``g[c]``, is the same for every ``v``)."""
    across = False
    for ref in (stmt.target, *stmt.value.walk()):
        if not isinstance(ref, Load) or scop.array(ref.array).kind in ("local", "value") or \
                not any(v in aff.vars() for aff in ref.index):
            continue
        last = ref.index[-1].linear()
        if last is None or last[0] != {v: 1} or any(v in aff.vars() for aff in ref.index[:-1]):
            return None
        across |= any(aff.vars() & below for aff in ref.index[:-1])
    return across


def _sized(scop: Scop, loop: Loop) -> bool:
    """``for var in range(0, hi)`` with ``hi`` a size: never negative under the context."""
    if loop.step != 1 or not loop.lo.is_const() or loop.lo.eval({}) != 0 or \
            not loop.hi.vars() <= set(scop.syms):
        return False
    negative = isl.Set(f"[{', '.join(scop.syms)}] -> {{ : {loop.hi.to_isl()} < 0 }}")
    return negative.intersect(scop.context.align_params(negative.get_space())).is_empty()


def _first_write(scop: Scop, body: tuple[Node, ...], name: str, node: StmtRef) -> bool:
    """``node`` is the first statement of ``body`` touching scalar ``name``, every statement
    that names it lies in ``body``, and it assigns it without reading it."""
    users = {s.name for s in scop.statements if _names_scalar(s, name)}
    inside = [n for n in statements_under(body) if n in users]
    stmt = scop.statement(node.name)
    return set(inside) == users and inside[0] == node.name and stmt.op == "=" and \
        not reads_scalar(stmt.value, name)


def _names_scalar(stmt: Statement, name: str) -> bool:
    return (isinstance(stmt.target, Scalar) and stmt.target.name == name) or \
        reads_scalar(stmt.value, name)


def _expanded(stmt: Statement, name: str, cell: Load) -> Statement:
    target = cell if isinstance(stmt.target, Scalar) and stmt.target.name == name \
        else stmt.target
    return stmt.replace(target=target, value=substitute_scalar(stmt.value, name, cell))
