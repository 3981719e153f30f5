"""Cells held in local scalars: a dot product accumulated in its output cell

    T[f(i)] = init;  for k ...: T[f(i)] op= e;  [T[f(i)] = g(T[f(i)])]

becomes the same reduction kept in a local scalar, stored once

    s = init;  for k ...: s op= e;  T[f(i)] = g(s)       (g the identity without a store)

where ``e`` reads its arrays along ``k`` with stride 1 (``X[n, k] * W[o, k]``: nn.Linear's
weight layout, a product with B transposed; ``k`` may be the innermost loop of a perfect
nest, a whole array's sum in ``y[0]``) and the cell's own loops cannot carry register
tiles (some read moves along the cell's last subscript other than with stride 1 there). The
scalar's loop is then a vectorized reduction over contiguous rows, held in registers; the
cell updated through memory in that loop is neither (the C compiler cannot prove the cell
apart from the operands it reads). It is the inverse of ``forward.py``, which moves a scalar
into its cell where the cell's loops do carry register tiles.

The rewrite is exact: the init, the loop's updates and the store are the only statements
that touch T between the init and the store (they are consecutive in one body, and the loop
holds nothing else), every one names the same cell, and the updates' values do not read T.
A selection kept in two cells (an argmax into outputs) is held the same way, both cells at
once (``_hold_selections``).
"""

from __future__ import annotations

from .exprs import Bin, Expr, Load, Scalar, Select, reads_array, replace_subexpr
from .forward import along_cells, read_only, reads_across
from .ir import (
    Array,
    Guard,
    Loop,
    Node,
    Scop,
    Statement,
    StmtRef,
    rewrite_tree,
    statement_paths,
    statements_under,
)
from .names import fresh_name


def hold_cells(scop: Scop, repack: bool = False) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every cell of that form held in a local scalar, and a sentence for each
    (``scop`` itself and none when there is no such cell). ``repack``: not the cells whose
    loops carry register tiles reading the read-only operands from repacked copies
    (``forward.along_cells``). Selections kept in cells are held too (``_hold_selections``)."""
    scop, chosen = _hold_selections(scop)
    holds: list[tuple[Statement, Loop, Statement | None]] = []
    _find(scop, scop.tree, holds, read_only(scop) if repack else frozenset())
    if not holds:
        return scop, chosen
    taken = {a.name for a in scop.arrays} | set(scop.syms) | {s.name for s in scop.statements}
    statements = list(scop.statements)
    arrays = list(scop.arrays)
    tree = scop.tree
    notes = []
    for init, loop, store in holds:
        cell = init.target
        assert isinstance(cell, Load)
        s = _held_scalar(scop, init, "_acc", taken, arrays)
        changed = {init.name: init.replace(target=s)}
        nest = _nest(loop)
        for ref in nest[-1].body:
            upd = scop.statement(ref.name)
            changed[upd.name] = upd.replace(target=s, value=replace_subexpr(upd.value, cell, s))
        if store is not None:
            changed[store.name] = store.replace(value=replace_subexpr(store.value, cell, s))
        statements = [changed.get(x.name, x) for x in statements]
        if store is None:  # the cell gets the scalar's value after the loop
            tree = _store_after(init, s, loop, statements, tree, taken)
        over = ", ".join(x.var for x in nest)
        notes.append(f"{_text(cell)}: the sum over {over} is kept in the local scalar "
                     f"{s.name}, stored once")
    return scop.replace(statements=tuple(statements), arrays=tuple(arrays), tree=tree), \
        chosen + tuple(notes)


def _hold_selections(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """Selections kept in cells (an argmax into outputs),

        V[c] = v0;  K[c] = k0;  for j: K[c] = e if x > V[c] else K[c];  V[c] = max(V[c], x)

    (the inits in either order, ``<`` and ``min`` alike), with the cells held in local
    scalars across the loop and stored once after it: the loop then selects in scalars
    (``schedule.reductions.Selection``). Exact: the cells' subscripts do not move with the
    loop, the loop holds these two statements only, and nothing else in them or the inits
    reads the cells' arrays."""
    found: list[tuple[Statement, Statement, Loop]] = []
    _find_selections(scop, scop.tree, found)
    taken = {a.name for a in scop.arrays} | set(scop.syms) | {s.name for s in scop.statements}
    statements, arrays, tree = list(scop.statements), list(scop.arrays), scop.tree
    notes = []
    for inits in found:
        *cells, loop = inits
        held = {init.name: (init.target, _held_scalar(scop, init, "_sel", taken, arrays))
                for init in cells}
        changed: dict[str, Statement] = {}
        for init in cells:
            changed[init.name] = init.replace(target=held[init.name][1])
        for ref in loop.body:
            stmt = scop.statement(ref.name)
            value, target = stmt.value, stmt.target
            for cell, scalar in held.values():
                value = replace_subexpr(value, cell, scalar)
                target = scalar if target == cell else target
            changed[stmt.name] = stmt.replace(target=target, value=value)
        statements = [changed.get(x.name, x) for x in statements]
        for init in reversed(cells):  # each store goes right after the loop: in order
            tree = _store_after(init, held[init.name][1], loop, statements, tree, taken)
        notes.append(f"{' and '.join(_text(c) for c, _ in held.values())}: the selection "
                     f"over {loop.var} is kept in the local scalars "
                     f"{' and '.join(s.name for _, s in held.values())}, stored once")
    if not found:
        return scop, ()
    return scop.replace(statements=tuple(statements), arrays=tuple(arrays), tree=tree), \
        tuple(notes)


def _held_scalar(scop: Scop, init: Statement, suffix: str, taken: set[str],
                 arrays: list[Array]) -> Scalar:
    """A new local scalar (named after the array, ``suffix`` after it) that holds the cell
    ``init`` sets, its declaration appended to ``arrays``."""
    array = init.target.array
    name = fresh_name(f"{array}{suffix}", taken)
    dtype = scop.array(array).dtype
    arrays.append(Array(name, dtype, (), "local", init.iters))
    return Scalar(dtype, name)


def _store_after(init: Statement, value: Scalar, loop: Loop, statements: list[Statement],
                 tree: tuple[Node, ...], taken: set[str]) -> tuple[Node, ...]:
    """``init``'s cell set to ``value`` just after ``loop``: the statement inserted into
    ``statements`` after the loop's last one; returns the tree with it after the loop."""
    name = fresh_name(f"{init.name}_h", taken)
    under = set(statements_under(loop.body))
    last = max(k for k, x in enumerate(statements) if x.name in under)
    statements.insert(last + 1, init.replace(name=name, op="=", value=value,
                                             domain=init.domain.set_tuple_name(name)))
    return _insert_after(tree, under, StmtRef(name))


def _find_selections(scop: Scop, body: tuple[Node, ...],
                     out: list[tuple[Statement, Statement, Loop]]) -> None:
    for pos, node in enumerate(body):
        if isinstance(node, Loop):
            _find_selections(scop, node.body, out)
            if pos >= 2 and isinstance(body[pos - 2], StmtRef) and \
                    isinstance(body[pos - 1], StmtRef):
                first, second = (scop.statement(body[pos - k].name) for k in (2, 1))
                if _selection_in_cells(scop, first, second, node):
                    out.append((first, second, node))
        elif isinstance(node, Guard):
            _find_selections(scop, node.then, out)
            _find_selections(scop, node.orelse, out)


def _selection_in_cells(scop: Scop, first: Statement, second: Statement, loop: Loop) -> bool:
    """Whether ``first`` and ``second`` set two cells that ``loop`` only selects into: a
    statement ``K = e if cond else K`` and an update ``V = max(V, x)`` (``min``), in that
    order, their values reading the cells' arrays at the cells only (``K`` in its own
    statement only), the inits not at all."""
    if len(loop.body) != 2 or not all(isinstance(n, StmtRef) for n in loop.body):
        return False
    pick, update = (scop.statement(n.name) for n in loop.body)
    cells = [first.target, second.target]
    if not all(isinstance(c, Load) and scop.array(c.array).kind in ("out", "inout", "temp")
               for c in cells) or cells[0].array == cells[1].array or \
            {pick.target, update.target} != set(cells) or \
            any(loop.var in aff.vars() for c in cells for aff in c.index) or \
            any(init.op != "=" or reads_array(init.value, c.array)
                for init in (first, second) for c in cells):
        return False
    index, value = pick.target, update.target
    v = pick.value
    if pick.op != "=" or not isinstance(v, Select) or v.b != index or \
            reads_array(v.a, index.array) or reads_array(v.cond, index.array) or \
            not _only_cell(v.cond, value) or reads_array(v.a, value.array):
        return False
    u = update.value
    return _is_update(update, value) and isinstance(u, Bin) and u.op in ("max", "min") and \
        not reads_array(u, index.array)


def repacked_rows(scop: Scop, rows: int, any_row: bool = False) -> str | None:
    """isl text of the parameter condition under which every product of ``scop`` whose
    read-only operand runs along the target's last subscript in another subscript
    (``W[o, k]`` for ``Y[n, o]``: a register tile reads it from a repacked copy) has at least
    ``rows`` rows: the loop of the target's next-to-last subscript (``n``) runs that many
    times, or with ``any_row`` the loop of one of its subscripts but the last (the rows
    where the policy exchanges two row loops, ``regions._rows_exchange``). None where there
    is no such product or a row loop's extent is not a function of the sizes alone."""
    only = read_only(scop)
    conds: list[str] = []
    for stmt, path in statement_paths(scop.tree):
        loops = [x for x in path if isinstance(x, Loop)]
        statement = scop.statement(stmt)
        cell = statement.target
        if not reads_across(statement, only) or len(cell.index) < 2:
            continue
        either = []
        for sub in cell.index[:-1] if any_row else cell.index[-2:-1]:
            loop = next((x for x in loops if {x.var} == sub.vars()), None)
            if loop is None or loop.step != 1 or \
                    not (loop.lo.vars() | loop.hi.vars()) <= set(scop.syms):
                if not any_row:
                    return None
                continue
            either.append(f"{loop.hi.to_isl()} - ({loop.lo.to_isl()}) >= {rows}")
        if not either:
            return None
        conds.append(either[0] if len(either) == 1 else f"({' or '.join(either)})")
    if not conds:
        return None
    return f"[{', '.join(scop.syms)}] -> {{ : {' and '.join(sorted(set(conds)))} }}"


def _find(scop: Scop, body: tuple[Node, ...],
          out: list[tuple[Statement, Loop, Statement | None]], repacked: frozenset[str]
          ) -> None:
    for pos, node in enumerate(body):
        if isinstance(node, Loop):
            _find(scop, node.body, out, repacked)
        elif isinstance(node, Guard):
            _find(scop, node.then, out, repacked)
            _find(scop, node.orelse, out, repacked)
        elif pos + 1 < len(body) and isinstance(body[pos + 1], Loop):
            found = _match(scop, body, pos, repacked)
            if found is not None:
                out.append(found)


def _match(scop: Scop, body: tuple[Node, ...], pos: int, repacked: frozenset[str]
           ) -> tuple[Statement, Loop, Statement | None] | None:
    init = scop.statement(body[pos].name)
    cell, loop = init.target, body[pos + 1]
    if not (isinstance(cell, Load) and init.op == "=" and
            scop.array(cell.array).kind in ("out", "inout", "temp") and
            not reads_array(init.value, cell.array) and
            all(aff.vars() <= set(init.iters) | set(scop.syms) for aff in cell.index)):
        return None
    inner = _nest(loop)[-1]
    if not inner.body or not all(isinstance(n, StmtRef) and _is_update(
            scop.statement(n.name), cell) for n in inner.body):
        return None
    store = None
    if pos + 2 < len(body) and isinstance(body[pos + 2], StmtRef):
        after = scop.statement(body[pos + 2].name)
        if after.target == cell and after.op == "=" and _only_cell(after.value, cell):
            store = after
    updates = [scop.statement(n.name) for n in inner.body]
    reads = [e for u in updates for e in u.value.walk() if isinstance(e, Load) and
             e.array != cell.array]
    if not _along_reduction(reads, inner.var) or along_cells(cell, init.iters, reads, repacked):
        return None
    return init, loop, store


def _nest(loop: Loop) -> list[Loop]:
    """The loops of the perfect nest ``loop`` starts, outermost first (``loop`` alone without
    one): a sum over several loops (``y[0] += X[i, j] ** 2`` over i and j) is held the same
    way as over one."""
    nest = [loop]
    while len(nest[-1].body) == 1 and isinstance(nest[-1].body[0], Loop):
        nest.append(nest[-1].body[0])
    return nest


def _is_update(stmt: Statement, cell: Load) -> bool:
    """``cell op= e`` (+, -, *) or ``cell = cell op e`` / ``e op cell`` (+, *, max, min), ``e``
    not reading the cell's array."""
    if stmt.target != cell:
        return False
    if stmt.op in ("+=", "-=", "*="):
        return not reads_array(stmt.value, cell.array)
    value = stmt.value
    if stmt.op != "=" or not isinstance(value, Bin) or value.op not in ("+", "*", "max", "min"):
        return False
    mine = [x == cell for x in (value.a, value.b)]
    other = value.b if mine[0] else value.a
    return mine.count(True) == 1 and not reads_array(other, cell.array)


def _along_reduction(reads: list[Load], var: str) -> bool:
    """Every read runs along ``var`` with stride 1 in its last subscript only, or not at all,
    and some read runs along it (a dot product over contiguous rows)."""
    moving = False
    for load in reads:
        if any(var in aff.vars() for aff in load.index[:-1]):
            return False
        if load.index and var in load.index[-1].vars():
            lin = load.index[-1].linear()
            if lin is None or lin[0].get(var) != 1:
                return False
            moving = True
    return moving


def _only_cell(e: Expr, cell: Load) -> bool:
    """Every read of the cell's array in ``e`` is of the cell itself."""
    return all(x == cell for x in e.walk() if isinstance(x, Load) and x.array == cell.array)


def _insert_after(nodes: tuple[Node, ...], body: set[str], new: StmtRef) -> tuple[Node, ...]:
    """The loop tree with ``new`` after the loop whose body holds the statements ``body``."""
    return rewrite_tree(nodes, lambda n: (n, new) if isinstance(n, Loop) and
                        set(statements_under(n.body)) == body else None)


def _text(cell: Load) -> str:
    return f"{cell.array}[{', '.join(str(i) for i in cell.index)}]"
