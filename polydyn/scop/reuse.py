"""A math function's value computed in two loops over the same range, stored once:

    for j in R:  s op= E(j)                    for j in R:  T[c(j)] = E(j);  s op= T[c(j)]
    ...                                  ->    ...
    for j in R:  T[c(j)] = G(E(j))             for j in R:  T[c(j)] = G(T[c(j)])

where ``E`` calls a math function (softmax written with ``exp(X[i, j] - m)`` in its sum and
again in its normalization: the bundled softmax stores the exponentials in ``Y`` and divides
them in place). ``T[c(j)]`` is the cell the second loop writes at ``j``; the first loop then
writes the value the second one reads back, so ``E`` is evaluated once per point.

The rewrite is exact: the two loops are siblings with the same bounds, each holds the one
statement; ``c`` takes one subscript to be the loop's variable alone (so the loop's points
write distinct cells) and the others do not depend on it; ``T`` has ``E``'s type, and no
statement from the first loop to the second touches it, nor writes an array or a scalar that
``E`` reads. The second loop overwrites every cell the first one wrote, with the value it
computed before.
"""

from __future__ import annotations

from .exprs import Call, Expr, Load, Scalar, replace_subexpr
from .ir import Guard, Loop, Node, Scop, Statement, StmtRef, rewrite_tree, statements_under
from .names import fresh_name, rename_expr
from .printer import format_expr


def reuse_values(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every value of that form stored once, and a sentence for each (``scop``
    itself and none when there is none)."""
    notes: list[str] = []
    while True:
        found = _find(scop, scop.tree)
        if found is None:
            return scop, tuple(notes)
        first, second, value = found
        scop, note = _rewrite(scop, first, second, value)
        notes.append(note)


def _find(scop: Scop, body: tuple[Node, ...]) -> tuple[Loop, Loop, Expr] | None:
    for a, node in enumerate(body):
        if isinstance(node, Loop):
            inner = _find(scop, node.body)
            if inner is not None:
                return inner
            for b in range(a + 1, len(body)):
                match = _match(scop, body, a, b)
                if match is not None:
                    return match
        elif isinstance(node, Guard):
            inner = _find(scop, node.then) or _find(scop, node.orelse)
            if inner is not None:
                return inner
    return None


def _match(scop: Scop, body: tuple[Node, ...], a: int, b: int
           ) -> tuple[Loop, Loop, Expr] | None:
    first, second = body[a], body[b]
    if not (isinstance(second, Loop) and isinstance(first, Loop) and
            len(first.body) == 1 == len(second.body) and
            all(isinstance(n, StmtRef) for n in (*first.body, *second.body)) and
            (first.lo, first.hi, first.step) == (second.lo, second.hi, second.step)):
        return None
    update = scop.statement(first.body[0].name)
    store = scop.statement(second.body[0].name)
    value = update.value
    if not (isinstance(update.target, Scalar) and update.op in ("+=", "*=") and
            isinstance(store.target, Load) and store.op == "=" and
            any(isinstance(e, Call) for e in value.walk()) and
            scop.array(store.target.array).dtype == value.dtype and
            scop.array(store.target.array).kind in ("out", "inout", "temp")):
        return None
    cell = store.target
    v = second.var
    if not any(sub.linear() == ({v: 1}, 0) for sub in cell.index) or \
            sum(v in sub.vars() for sub in cell.index) != 1:
        return None
    mine = rename_expr(value, {first.var: v})
    if not _contains(store.value, mine):
        return None
    # nothing from the first loop to the second touches the cell's array or changes a value
    # E reads (the first loop writes its scalar only, which E does not read)
    reads = {e.array for e in value.walk() if isinstance(e, Load)} | \
        {e.name for e in value.walk() if isinstance(e, Scalar)}
    if update.target.name in reads or cell.array in reads:
        return None
    for name in statements_under(body[a + 1:b]):
        s = scop.statement(name)
        written = s.target.array if isinstance(s.target, Load) else s.target.name
        if s.touches(cell.array) or written in reads:
            return None
    if any(isinstance(e, Load) and e.array == cell.array for e in store.value.walk()):
        return None
    return first, second, mine


def _contains(e: Expr, part: Expr) -> bool:
    return any(x == part for x in e.walk())


def _rewrite(scop: Scop, first: Loop, second: Loop, value: Expr) -> tuple[Scop, str]:
    update = scop.statement(first.body[0].name)
    store = scop.statement(second.body[0].name)
    cell = store.target
    assert isinstance(cell, Load)
    there = rename_expr(cell, {second.var: first.var})  # the cell at the first loop's point
    taken = {s.name for s in scop.statements} | {a.name for a in scop.arrays} | set(scop.syms)
    name = fresh_name(f"{update.name}_v", taken)
    new = Statement(name, update.iters, there, "=", rename_expr(value, {second.var: first.var}),
                    update.domain.set_tuple_name(name), update.loc)
    changed = {update.name: update.replace(value=there),
               store.name: store.replace(value=replace_subexpr(store.value, value, cell))}
    statements: list[Statement] = []
    for s in scop.statements:
        if s.name == update.name:
            statements.append(new)
        statements.append(changed.get(s.name, s))
    tree = _insert_before(scop.tree, update.name, StmtRef(name))
    note = (f"{format_expr(value)}: computed once, in {format_expr(cell)}, where two loops "
            f"over {second.var} both compute it")
    return scop.replace(statements=tuple(statements), tree=tree), note


def _insert_before(nodes: tuple[Node, ...], name: str, new: StmtRef) -> tuple[Node, ...]:
    return rewrite_tree(nodes, lambda n: (new, n) if isinstance(n, StmtRef) and n.name == name
                        else None)
