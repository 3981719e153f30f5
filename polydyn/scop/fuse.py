"""Loop nests fused through a temporary: a nest that writes a temporary followed by a nest
over the same ranges that reads it at the same cell,

    for i, j:  T[i, j] = X[i, j] + b[j]
    for i, j:  Y[i, j] = 0.5 * T[i, j] * (1 + erf(T[i, j] * 0.7071))

runs as one nest, so that each cell of ``T`` lives within one iteration:

    for i, j:  T[i, j] = X[i, j] + b[j];  Y[i, j] = 0.5 * T[i, j] * (1 + erf(...))

``scop/contract.py`` then holds the cell in a local scalar: the temporary is neither written
to memory nor read back (one pass over the data instead of two, and no allocation). A product
into a temporary followed by its activation (``T[n, o] = b[o]; T[n, o] += X[n, k] * W[k, o]``
then ``Y[n, o] = max(T[n, o], 0)``) becomes the activation of a sum held in a scalar, which
``scop/forward.py`` keeps in ``Y``'s cell: the form an operator written without the
temporary has.

Two adjacent loops fuse where they have the same bounds (the second's variable renamed to the
first's); inside, the first's last loop and the second's first loop fuse the same way. The
fusion is kept only where the temporary becomes contractible (``contract.contractible``) and
the fused program order keeps every dependence of the order as written (isl).
"""

from __future__ import annotations

from dataclasses import replace

import islpy as isl

from .contract import contractible
from .deps import keeps_dependences
from .ir import Guard, Loop, Node, Scop, Statement, statements_under
from .names import rename_aff, rename_expr, rename_tree


def fuse_through_temporaries(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every such pair of nests fused, and a sentence for each (``scop``
    itself and none when nothing fuses)."""
    notes: list[str] = []
    while True:
        found = _first_fusion(scop, scop.tree, ())
        if found is None:
            return scop, tuple(notes)
        scop, temp = found
        notes.append(f"{temp}: the nests that write and read it run as one (each cell lives "
                     "within one iteration)")


def _first_fusion(scop: Scop, body: tuple[Node, ...], path: tuple[int, ...]
                  ) -> tuple[Scop, str] | None:
    for k, node in enumerate(body):
        if isinstance(node, Loop):
            inner = _first_fusion(scop, node.body, (*path, k))
            if inner is not None:
                return inner
        if k + 1 < len(body) and isinstance(node, Loop) and isinstance(body[k + 1], Loop):
            found = _try(scop, path, k)
            if found is not None:
                return found
    return None


def _try(scop: Scop, path: tuple[int, ...], k: int) -> tuple[Scop, str] | None:
    """The operator with the loops at ``path + (k,)`` and ``path + (k + 1,)`` fused, and the
    temporary that makes it pay; None where they do not fuse or nothing pays."""
    body = _body_at(scop.tree, path)
    first, second = body[k], body[k + 1]
    written = {_target(scop, n) for n in statements_under(first)} - {None}
    read = {a.name for a in scop.arrays if a.kind == "temp" and
            any(scop.statement(n).touches(a.name) for n in statements_under(second))}
    temps = sorted(t for t in written & read if not contractible(scop, t))
    if not temps:
        return None
    renames: dict[str, str] = {}
    fused = _fuse(first, second, renames)
    if fused is None:
        return None
    moved = set(statements_under(second))
    statements = tuple(_renamed(s, renames) if s.name in moved else s
                       for s in scop.statements)
    tree = _replace_at(scop.tree, path, (*body[:k], fused, *body[k + 2:]))
    after = scop.replace(statements=statements, tree=tree)
    for temp in temps:
        if contractible(after, temp) and keeps_dependences(scop, after):
            return after, temp
    return None


def _fuse(first: Loop, second: Loop, renames: dict[str, str]) -> Loop | None:
    """``first`` and ``second`` as one loop (``second``'s variables renamed into
    ``renames``), their adjoining inner loops fused too; None where the bounds differ or a
    name would clash."""
    theirs = second.var
    if second.step != first.step or (theirs != first.var and
                                     first.var in _vars_under(second.body)):
        return None
    mine = {**renames, theirs: first.var}
    if (rename_aff(second.lo, mine), rename_aff(second.hi, mine)) != (first.lo, first.hi):
        return None
    renames.update(mine)
    head, rest = first.body, second.body
    if head and rest and isinstance(head[-1], Loop) and isinstance(rest[0], Loop):
        inner_names = dict(renames)
        inner = _fuse(head[-1], rest[0], inner_names)
        if inner is not None:
            renames.update(inner_names)
            return Loop(first.var, first.lo, first.hi, first.step,
                        (*head[:-1], inner, *rename_tree(rest[1:], renames)))
    return Loop(first.var, first.lo, first.hi, first.step,
                (*head, *rename_tree(rest, renames)))


def _renamed(stmt: Statement, renames: dict[str, str]) -> Statement:
    iters = tuple(renames.get(v, v) for v in stmt.iters)
    domain = stmt.domain
    for pos, v in enumerate(iters):
        domain = domain.set_dim_name(isl.dim_type.set, pos, v)
    return replace(stmt, iters=iters, target=rename_expr(stmt.target, renames),
                   value=rename_expr(stmt.value, renames), domain=domain)


def _vars_under(nodes: tuple[Node, ...]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, Loop):
            out |= {n.var} | _vars_under(n.body)
        elif isinstance(n, Guard):
            out |= _vars_under((*n.then, *n.orelse))
    return out


def _target(scop: Scop, name: str) -> str | None:
    target = scop.statement(name).target
    return getattr(target, "array", None)


def _body_at(tree: tuple[Node, ...], path: tuple[int, ...]) -> tuple[Node, ...]:
    body = tree
    for k in path:
        node = body[k]
        assert isinstance(node, Loop)
        body = node.body
    return body


def _replace_at(tree: tuple[Node, ...], path: tuple[int, ...], new: tuple[Node, ...]
                ) -> tuple[Node, ...]:
    if not path:
        return new
    k = path[0]
    node = tree[k]
    assert isinstance(node, Loop)
    return (*tree[:k], replace(node, body=_replace_at(node.body, path[1:], new)),
            *tree[k + 1:])

