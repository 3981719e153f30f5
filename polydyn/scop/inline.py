"""Values of one iteration inlined into the reductions that read them: a local scalar set
and then read by the updates of the same loop body,

    for d ...:  t = A[i, d] - B[j, d];  s += t * t

becomes one update, ``s += (A[i, d] - B[j, d]) * (A[i, d] - B[j, d])``: a reduction whose
body is one statement, the form the accumulator rewrites (``forward``, ``hold``) and the
register tiles take (the C compiler computes the repeated subexpression once).

Exact where it applies: ``t = e`` (``e`` not reading t) is a direct child of a body, every
other statement that names t comes after it as a direct child of the same body and only
reads it, and none of the statements between it and the last of them writes an array or a
scalar that ``e`` reads: each read then sees the value ``e`` has at that point. Each reader
is an update (``s op= f(t)``, or ``s = g(s, t)``) of another target: plain stores (``Y[i, j]
= f(t)``) keep the scalar, which ``forward`` keeps in their cell. ``e`` is copied once per
read, so it is inlined only where it calls no function or is read once.
"""

from __future__ import annotations

from .exprs import Call, Cast, Expr, Load, Scalar, reads_scalar, substitute_scalar
from .ir import Loop, Node, Scop, Statement, StmtRef, rewrite_tree, statements_under
from .printer import format_expr


def inline_reduction_values(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every local scalar of that form inlined into its readers, and a sentence
    for each (``scop`` itself and none when there is none)."""
    notes: list[str] = []
    while (found := _candidate(scop, scop.tree)) is not None:
        define, readers = found
        updated = sorted({format_expr(scop.statement(r).target) for r in readers})
        notes.append(f"{define.target.name}: its value {format_expr(define.value)} is "
                     f"computed in the update of {', '.join(updated)}")
        scop = _inline(scop, define, readers)
    return scop, tuple(notes)


def _candidate(scop: Scop, body: tuple[Node, ...]) -> tuple[Statement, list[str]] | None:
    """The first definition under ``body`` that may be inlined, with its readers' names."""
    for pos, node in enumerate(body):
        if isinstance(node, StmtRef):
            readers = _readers(scop, body, pos)
            if readers is not None:
                return scop.statement(node.name), readers
        else:
            for inner in (node.body,) if isinstance(node, Loop) else (node.then, node.orelse):
                found = _candidate(scop, inner)
                if found is not None:
                    return found
    return None


def _readers(scop: Scop, body: tuple[Node, ...], pos: int) -> list[str] | None:
    """The statements that read the scalar ``body[pos]`` defines, when the rule above lets
    its value be inlined into them; else None."""
    define = scop.statement(body[pos].name)
    target = define.target
    if not isinstance(target, Scalar) or define.op != "=" or \
            reads_scalar(define.value, target.name) or \
            scop.array(target.name).kind != "local":
        return None
    t = target.name
    naming = [s for s in scop.statements if s.name != define.name and _names(s, t)]
    if not naming:
        return None
    later = {n.name: k for k, n in enumerate(body) if isinstance(n, StmtRef) and k > pos}
    if any(s.name not in later or _writes(s, t) or not _is_update(s) for s in naming):
        return None
    uses = sum(isinstance(x, Scalar) and x.name == t for s in naming for x in s.value.walk())
    if uses > 1 and any(isinstance(x, Call) for x in define.value.walk()):
        return None
    last = max(later[s.name] for s in naming)
    read = {x.array if isinstance(x, Load) else x.name for x in define.value.walk()
            if isinstance(x, Load | Scalar)}
    between = [scop.statement(n) for node in body[pos + 1:last] for n in statements_under(node)]
    if any(_written(s) in read for s in between):
        return None
    return [s.name for s in naming]


def _names(stmt: Statement, scalar: str) -> bool:
    return _writes(stmt, scalar) or reads_scalar(stmt.value, scalar)


def _writes(stmt: Statement, scalar: str) -> bool:
    return isinstance(stmt.target, Scalar) and stmt.target.name == scalar


def _written(stmt: Statement) -> str:
    return stmt.target.array if isinstance(stmt.target, Load) else stmt.target.name


def _is_update(stmt: Statement) -> bool:
    """``s op= e``, or ``s = g(s, e)`` (a max, a sum written out)."""
    own = stmt.target
    return stmt.op != "=" or any(x == own for x in stmt.value.walk())


def _inline(scop: Scop, define: Statement, readers: list[str]) -> Scop:
    t = define.target
    value: Expr = define.value if define.value.dtype == t.dtype else Cast(t.dtype, define.value)
    statements = tuple(
        s.replace(value=substitute_scalar(s.value, t.name, value)) if s.name in readers else s
        for s in scop.statements if s.name != define.name)
    tree = rewrite_tree(scop.tree, lambda n: () if n == StmtRef(define.name) else None)
    still = any(_names(s, t.name) for s in statements)
    arrays = scop.arrays if still else tuple(a for a in scop.arrays if a.name != t.name)
    return scop.replace(statements=statements, tree=tree, arrays=arrays)

