"""Temporaries contracted to local scalars: a temporary whose every access names one cell,
written first in each iteration of the loop around its uses,

    for i ...:  T[i] = init;  for j ...: T[i] = max(T[i], X[i, j]);  ... Y[i, j] / T[i] ...

becomes the local scalar ``T`` of that iteration (array contraction), as if the operator had
been written with one:

    for i ...:  T = init;  for j ...: T = max(T, X[i, j]);  ... Y[i, j] / T ...

A cell read and written through memory in a sequential loop is neither vectorized nor kept
in a register by the C compiler; a local scalar's reduction is (simd reduction, registers),
and the temporary's N cells are neither written nor read back.

The rewrite is exact where it applies: every access of T (target or read) has the same
subscripts, and the first statement that touches T in the innermost loop around all of them
(``C``, or the operator's body when there is none) is a direct child of C's body that assigns
T with ``=`` and does not read it. Each iteration of C then starts by overwriting the cell,
and every later access of the iteration names that cell, so no value crosses iterations: a
scalar private to the iteration holds the same values. The temporary's final contents are
not observable (temporaries are neither inputs nor outputs).
"""

from __future__ import annotations

from .exprs import Expr, Load, Scalar, map_children, reads_array
from .ir import Array, Loop, Node, Scop, Statement, StmtRef, statements_under


def contract_temporaries(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every temporary of that form held in a local scalar, and a sentence for
    each (``scop`` itself and none when there is no such temporary)."""
    chosen = [a for a in scop.arrays if a.kind == "temp" and contractible(scop, a.name)]
    if not chosen:
        return scop, ()
    notes = []
    statements = list(scop.statements)
    arrays = list(scop.arrays)
    for a in chosen:
        touching = [s for s in statements if s.touches(a.name)]
        by_name = {s.name: s for s in statements}
        first = next(by_name[n] for n in statements_under(scop.tree) if by_name[n].touches(a.name))
        index = _index_of(touching[0], a.name)
        statements = [_as_scalar(s, a) if s.touches(a.name) else s for s in statements]
        arrays[arrays.index(a)] = Array(a.name, a.dtype, (), "local", first.iters)
        cell = ", ".join(str(i) for i in index)
        notes.append(f"{a.name}: the temporary is kept in a local scalar ({a.name}[{cell}] "
                     f"lives within one iteration of the loops around it)")
    return scop.replace(statements=tuple(statements), arrays=tuple(arrays)), tuple(notes)


def contractible(scop: Scop, array: str) -> bool:
    """Whether the temporary ``array`` has the form above (its cell lives within one
    iteration of the loop around its accesses)."""
    touching = [s for s in scop.statements if s.touches(array)]
    if not touching:
        return False
    indexes = {_index_of(s, array) for s in touching}
    if len(indexes) != 1 or None in indexes:
        return False
    names = {s.name for s in touching}
    body = _innermost_common(scop.tree, names)
    first = next((n for n in body if _names(n) & names), None)
    if not isinstance(first, StmtRef):
        return False
    stmt = scop.statement(first.name)
    (index,) = indexes
    return (isinstance(stmt.target, Load) and stmt.target.array == array and
            stmt.op == "=" and not reads_array(stmt.value, array) and
            all(aff.vars() <= set(stmt.iters) | set(scop.syms) for aff in index))


def _index_of(stmt: Statement, array: str) -> tuple | None:
    """The one subscript tuple every access of ``array`` in ``stmt`` has, else None."""
    refs = [e for e in (stmt.target, *stmt.value.walk()) if isinstance(e, Load) and
            e.array == array]
    found = {tuple(r.index) for r in refs}
    return found.pop() if len(found) == 1 else None


def _innermost_common(body: tuple[Node, ...], names: set[str]) -> tuple[Node, ...]:
    """The body of the innermost loop whose subtree holds every statement in ``names`` (the
    operator's body when no loop does); a guard holding them all stops the descent (the
    caller then finds no unconditional first write)."""
    holders = [n for n in body if _names(n) & names]
    if len(holders) == 1 and isinstance(holders[0], Loop) and \
            _names(holders[0]) >= names:
        return _innermost_common(holders[0].body, names)
    return body


def _names(node: Node) -> set[str]:
    return set(statements_under(node))


def _as_scalar(stmt: Statement, a: Array) -> Statement:
    target = Scalar(a.dtype, a.name) if isinstance(stmt.target, Load) and \
        stmt.target.array == a.name else stmt.target
    return stmt.replace(target=target, value=_substitute(stmt.value, a))


def _substitute(e: Expr, a: Array) -> Expr:
    if isinstance(e, Load) and e.array == a.name:
        return Scalar(a.dtype, a.name)
    return map_children(e, lambda x: _substitute(x, a))
