"""Accumulators forwarded into their cells: a reduction kept in a local scalar and then stored

    s = init;  for k ...: s op= e;  T[f(i)] = g(s)

becomes the same reduction kept in the cell it is stored into

    T[f(i)] = init;  for k ...: T[f(i)] op= e;  T[f(i)] = g(T[f(i)])   (the last only when
                                                                      g is not the identity)

so that it reaches the schedule of the same operator written with the cell (tiles, register
tiles, threads): the scalar, private to one iteration, keeps its reduction loop innermost.

A sum whose store adds it to the cell's old value, ``T[f(i)] = a + c * s`` with ``a`` reading
the cell (gemm's ``C[i, j] += s`` or ``C = alpha * s + beta * C``), starts the cell from
``a`` (the init dropped when that is the cell itself) and adds ``c * e`` in place of each
``e``: the sum reassociated, as BLAS's reference gemm computes it.

A scalar is forwarded when every statement that names it is part of such patterns: the
init (``s = init``, not reading s) and the store (``T[f(i)] = g(s)``, ``g`` not reading T,
or linear in ``s`` as above)
are statements of one body, in that order; between them every statement that names s is an
update (``s += e``, ``-=``, ``*=``, ``s = s + e``, ``s = s * e``, ``s = max(s, e)``, ``min``,
with ``e`` not reading s) and no statement reads or writes T (so no other access sees the
partial values; e reads no T either). T is an output, inout or temporary of s's dtype. The
statements keep their names, places and source lines; only their targets and values change.

It is done where it pays today: where the register tiles can take their vector along the
cell's last subscript ``v`` (a loop variable, stride 1), which every array read between the
init and the store either does not depend on or runs along with stride 1 (matmul's
``B[k, j]``), or 2 beside a read that does not depend on it (a convolution with stride 2
and its weights). Elsewhere (``X[n, k] * W[o, k]``, a row's max) the scalar's own loop, whose
reduction is vectorized, is the faster code until cells updated in place get the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .exprs import (
    Bin,
    Const,
    Expr,
    Index,
    Load,
    Scalar,
    Un,
    binary,
    reads_array,
    reads_scalar,
    substitute_scalar,
)
from .ir import Loop, Node, Scop, Statement, StmtRef, rewrite_tree, statements_under
from .printer import format_expr

_WORDS = {"+": "sum", "-": "sum", "*": "product", "max": "max", "min": "min"}


@dataclass(frozen=True)
class _Pattern:
    scalar: str
    init: Statement
    updates: tuple[tuple[Statement, Statement], ...]  # (as written, into the cell)
    store: Statement
    cell: Load  # T[f(i)]: the store's target
    between: tuple[str, ...]  # the statements between the init and the store
    # a store adding the sum to the cell, ``T = a + c * s`` (``_linear``): (a, c, negated)
    linear: tuple[Expr, Expr | None, bool] | None = None

    def names(self) -> set[str]:
        return {self.init.name, self.store.name, *(old.name for old, _ in self.updates)}


def forward_accumulators(scop: Scop, *, everywhere: bool = False, repack: bool = False
                         ) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every local scalar of that form kept in its cell, and a sentence for
    each (``scop`` itself and none when there is no such scalar). ``everywhere``: also the
    scalars whose reads do not run along the cell's last subscript; ``repack``: also those
    whose read-only operands do, in another subscript (``along_cells``), and a sum from zero
    stored plus a term starts from the term (``_folded_init``: reassociated, so not exact)."""
    repacked = read_only(scop) if repack else frozenset()
    patterns = [p for p in _patterns(scop, scop.tree) if everywhere or along_cells(
        p.cell, p.store.iters, [e for name in p.between
                                for e in scop.statement(name).value.walk()
                                if isinstance(e, Load)] + _scale_loads(p), repacked)]
    users: dict[str, set[str]] = {}
    for s in scop.statements:
        for name in _scalars_named(s):
            users.setdefault(name, set()).add(s.name)
    covered: dict[str, set[str]] = {}
    for p in patterns:
        covered.setdefault(p.scalar, set()).update(p.names())
    chosen = [p for p in patterns if covered[p.scalar] == users[p.scalar]]
    if not chosen:
        return scop, ()
    notes = tuple(_note(p, repack) for p in chosen)
    return _rewrite(scop, chosen, repack), notes


def _note(p: _Pattern, fold: bool) -> str:
    ops = {_update_op(new) for _, new in p.updates}
    word = _WORDS[ops.pop()] if len(ops) == 1 else "value"
    cell = format_expr(p.cell)
    note = f"{p.scalar}: the {word} is kept in {cell}"
    if p.linear is not None:
        start, scale = _start(p), p.linear[1]
        note += ", added to its value" if start == p.cell else f", from {format_expr(start)}"
        return note + (f", each term times {format_expr(scale)}" if scale is not None else "")
    term = _folded_init(p) if fold else None
    if term is not None:
        note += f", from {format_expr(term)}"
    elif not _is_plain(p):
        note += f", then {cell} = {format_expr(_forwarded(p.store.value, p))}"
    return note


def _update_op(stmt: Statement) -> str:
    if stmt.op != "=":
        return stmt.op[:-1]
    assert isinstance(stmt.value, Bin)
    return stmt.value.op


# --- matching ---------------------------------------------------------------------------------


def _patterns(scop: Scop, body: tuple[Node, ...]) -> Iterator[_Pattern]:
    """Every pattern whose init and store are statements of ``body`` or of a body below."""
    for pos, node in enumerate(body):
        if isinstance(node, StmtRef):
            pattern = _match(scop, body, pos)
            if pattern is not None:
                yield pattern
        elif isinstance(node, Loop):
            yield from _patterns(scop, node.body)
        else:
            yield from _patterns(scop, node.then)
            yield from _patterns(scop, node.orelse)


def _match(scop: Scop, body: tuple[Node, ...], pos: int) -> _Pattern | None:
    init = scop.statement(body[pos].name)
    target = init.target
    if not (isinstance(target, Scalar) and scop.array(target.name).kind == "local" and
            init.op == "=" and not reads_scalar(init.value, target.name)):
        return None
    s = target.name
    for end in range(pos + 1, len(body)):
        node = body[end]
        if isinstance(node, StmtRef):
            stmt = scop.statement(node.name)
            if reads_scalar(stmt.value, s) and stmt.target != target:
                return _match_store(scop, init, body[pos + 1:end], stmt)
    return None


def _match_store(scop: Scop, init: Statement, between: tuple[Node, ...],
                 store: Statement) -> _Pattern | None:
    s = init.target.name
    cell = store.target
    if not (isinstance(cell, Load) and store.op in ("=", "+=", "-=") and
            scop.array(cell.array).kind in ("out", "inout", "temp") and
            scop.array(cell.array).dtype == scop.array(s).dtype and
            all(aff.vars() <= set(store.iters) | set(scop.syms) for aff in cell.index)):
        return None
    linear = None
    if store.op != "=" or reads_array(store.value, cell.array):
        linear = _linear(store.rhs(), s)
        if linear is None or not _adds_to_cell(scop, linear, cell):
            return None
    updates = []
    names = statements_under(between)
    written = set()
    for name in names:
        stmt = scop.statement(name)
        if stmt.touches(cell.array):
            return None  # another access would see the partial values (or change them)
        written.add(stmt.target.array if isinstance(stmt.target, Load) else stmt.target.name)
        if s in _scalars_named(stmt):
            forwarded = _forward_update(stmt, s, cell)
            if forwarded is None:
                return None
            updates.append((stmt, forwarded))
    if linear is not None and (
            any(_update_op(new) not in ("+", "-") for _, new in updates) or
            any(reads_array(x, name) or reads_scalar(x, name)
                for x in (linear[0], linear[1]) if x is not None for name in written)):
        return None  # a product or max, or ``a``/``c`` would read values changed between
    return _Pattern(s, init, tuple(updates), store, cell, tuple(names), linear)


def _linear(e: Expr, s: str) -> tuple[Expr | None, Expr | None, bool] | None:
    """``e`` as ``a + c * s`` or ``a - c * s`` with ``a`` and ``c`` not reading ``s``: (a, c,
    whether s is subtracted), None standing for 0 (a) and 1 (c); None when ``e`` has no such
    form (``s`` under a product with a term, a division, a call)."""
    if isinstance(e, Scalar) and e.name == s:
        return None, None, False
    if not isinstance(e, Bin) or e.op not in ("+", "-", "*"):
        return None
    left, right = reads_scalar(e.a, s), reads_scalar(e.b, s)
    if left == right:
        return None
    got = _linear(e.a if left else e.b, s)
    if got is None:
        return None
    a, c, neg = got
    other = e.b if left else e.a

    def join(op: str, x: Expr | None, y: Expr) -> Expr:  # x op y, or y where x is absent
        return y if x is None else binary(op, x, y) if left else binary(op, y, x)

    if e.op == "*":  # (c s) * other: only a pure multiple of s stays linear in one term
        return None if a is not None else (None, join("*", c, other), neg)
    if e.op == "+":  # (a + c s) + other
        return join("+", a, other), c, neg
    if left:  # (a + c s) - other
        return (Un(other.dtype, "neg", other) if a is None else binary("-", a, other)), c, neg
    return (other if a is None else binary("-", other, a)), c, not neg  # other - (a + c s)


def _adds_to_cell(scop: Scop, linear: tuple[Expr | None, Expr | None, bool],
                  cell: Load) -> bool:
    """Whether ``a`` reads the cell (and its array nowhere else) and ``c`` does not read the
    cell's array, neither of them reading a local scalar (whose value could differ where the
    updates run)."""
    a, c, _ = linear
    if a is None or cell not in a.walk() or (c is not None and reads_array(c, cell.array)):
        return False
    loads = [e for e in a.walk() if isinstance(e, Load) and e.array == cell.array]
    return all(e == cell for e in loads) and not any(
        isinstance(e, Scalar) and scop.array(e.name).kind == "local"
        for x in (a, c) if x is not None for e in x.walk())


def _forward_update(stmt: Statement, s: str, cell: Load) -> Statement | None:
    """``stmt`` (an update of ``s``) as an update of ``cell``, or None when it is not one of
    ``s op= e``, ``s = s op e``, ``s = e op s`` (op + or *), ``s = s - e``, ``s = max(s, e)``
    or ``min`` with ``e`` not reading ``s``."""
    if not (isinstance(stmt.target, Scalar) and stmt.target.name == s):
        return None
    value = stmt.value
    if stmt.op in ("+=", "-=", "*="):
        if reads_scalar(value, s):
            return None
        return stmt.replace(target=cell)
    if stmt.op != "=" or not isinstance(value, Bin):
        return None
    mine = [isinstance(x, Scalar) and x.name == s for x in (value.a, value.b)]
    if mine.count(True) != 1:
        return None
    other = value.b if mine[0] else value.a
    if reads_scalar(other, s):
        return None
    if value.op in ("max", "min"):  # the operands' order as written (NaNs)
        return stmt.replace(target=cell, value=substitute_scalar(value, s, cell))
    if value.op in ("+", "*") or (value.op == "-" and mine[0]):
        return stmt.replace(target=cell, op=value.op + "=", value=other)
    return None


def along_cells(cell: Load, iters: tuple[str, ...], reads: list[Load],
                repacked: frozenset[str] = frozenset()) -> bool:
    """Whether the cell's last subscript is a loop variable ``v`` of ``iters`` (stride 1)
    and every read is independent of ``v`` or runs along it with stride 1 in its last
    subscript only (or stride 2, beside a read independent of ``v``: a convolution with
    stride 2 and its weights): the cell's loops can carry register tiles with their vector
    along v.
    A read of an array in ``repacked`` (read-only ones) may also run along ``v`` in another
    subscript when every subscript is a single iterator or a constant (``repackable``) and
    the cells reuse it (``reused_across``): the tiles read it from a copy with that dimension
    innermost (``codegen_c.repack``)."""
    last = cell.index[-1].linear() if cell.index else None
    if last is None or len(last[0]) != 1 or next(iter(last[0].values())) != 1:
        return False
    v = next(iter(last[0]))
    if v not in iters:
        return False
    strided = False
    for load in reads:
        if any(v in aff.vars() for aff in load.index[:-1]):
            if load.array in repacked and repackable(load) and reused_across(load, cell):
                continue
            return False
        inner = load.index[-1].linear() if load.index else ({}, 0)
        step = inner[0].get(v, 0) if inner is not None else None
        if (step is None and v in load.index[-1].vars()) or step not in (None, 0, 1, 2):
            return False
        strided |= step == 2
    # a read two elements apart per cell (a convolution with stride 2) pays in register
    # tiles only beside an operand every cell of a row shares (the weights)
    return not strided or any(not any(v in aff.vars() for aff in load.index) for load in reads)



def repackable(load: Load) -> bool:
    """Every subscript of ``load`` is one iterator (coefficient 1, no constant) or a constant,
    one at least an iterator: a repacked copy's cells (``codegen_c.repack``), of the slice
    the constants pick (a fused QKV projection's keys, ``QKV[b, j, 1, h, d]``)."""
    lins = [aff.linear() for aff in load.index]
    return any(lin is not None and lin[0] for lin in lins) and all(
        lin is not None and (not lin[0] or (lin[1] == 0 and len(lin[0]) == 1 and
                                            set(lin[0].values()) == {1})) for lin in lins)


def reused_across(load: Load, cell: Load) -> bool:
    """Some loop of ``cell``'s subscripts is absent from ``load``'s: the cells along it read
    the same elements (nn.Linear's ``W[o, k]`` for every row ``n`` of ``Y[n, o]``), so a
    copy made once serves them all. A global average pool's ``X[b, c, h, w]`` for ``Y[b, c]``
    is read once per cell: its sums run along X's rows instead."""
    used = {v for aff in load.index for v in aff.vars()}
    return not {v for aff in cell.index for v in aff.vars()} <= used


def read_only(scop: Scop) -> frozenset[str]:
    """The arrays no statement writes."""
    written = {s.target.array for s in scop.statements if isinstance(s.target, Load)}
    return frozenset(a.name for a in scop.arrays if a.is_tensor and a.name not in written)


def reads_across(stmt: Statement, only: frozenset[str]) -> bool:
    """``stmt`` writes a cell whose last subscript is one iterator ``v`` and reads an array
    of ``only`` (read-only ones, ``read_only``) that moves along ``v`` in another subscript,
    can be repacked and is reused across the cells (nn.Linear's ``W[o, k]`` for ``Y[n, o]``):
    register tiles over the cell's loops read that operand from a copy with ``v``'s
    dimension innermost."""
    cell = stmt.target
    if not isinstance(cell, Load) or not cell.index or len(cell.index[-1].vars()) != 1:
        return False
    (v,) = cell.index[-1].vars()
    return any(isinstance(e, Load) and e.array in only and repackable(e) and
               reused_across(e, cell) and any(v in aff.vars() for aff in e.index[:-1])
               for e in stmt.value.walk())


def _scalars_named(stmt: Statement) -> set[str]:
    return {e.name for e in (stmt.target, *stmt.value.walk()) if isinstance(e, Scalar)}




# --- the rewrite ------------------------------------------------------------------------------


def _is_plain(p: _Pattern) -> bool:
    """Whether the store is ``T[f(i)] = s`` (it goes: the cell already holds the value)."""
    return isinstance(p.store.value, Scalar)


def _folded_init(p: _Pattern) -> Expr | None:
    """For a sum from zero stored plus a term (``s = 0; s += ...; T[f(i)] = s + b[o]``): the
    term, which becomes the cell's init (``T[f(i)] = b[o]; T[f(i)] += ...``, the store gone,
    the sum reassociated as register tiles reassociate it); otherwise None."""
    value = p.store.value
    if not (isinstance(p.init.value, Const) and p.init.value.value == 0 and
            isinstance(value, Bin) and value.op == "+" and p.updates and
            p.init.iters == p.store.iters and
            all(new.op == "+=" for _, new in p.updates)):
        return None
    mine = [isinstance(x, Scalar) and x.name == p.scalar for x in (value.a, value.b)]
    if mine.count(True) != 1:
        return None
    term = value.b if mine[0] else value.a
    if reads_scalar(term, p.scalar) or reads_array(term, p.cell.array) or \
            any(isinstance(e, Scalar) for e in term.walk()):
        return None
    return term


def _forwarded(e: Expr, p: _Pattern) -> Expr:
    return substitute_scalar(e, p.scalar, p.cell)


def _start(p: _Pattern) -> Expr:
    """A linear store's cell init: ``a + c * init`` (``a`` where the init is zero)."""
    assert p.linear is not None
    a, c, neg = p.linear
    init = p.init.value
    if isinstance(init, Const) and init.value == 0:
        return a
    return binary("-" if neg else "+", a, init if c is None else binary("*", c, init))


def _scaled(p: _Pattern, update: Statement) -> Statement:
    """A forwarded update of a linear store: ``T op= c * e``, op flipped where the sum is
    subtracted. Where ``e`` is a product, ``c`` scales its factor that moves along the cell's
    last subscript (``A[i, k] * (alpha * B[k, j])``): register tiles multiply each vector of
    it once per term for all their rows, where a scaled row factor costs a multiply and a
    broadcast per row."""
    _, c, neg = p.linear
    op = {"+=": "-=", "-=": "+="}[update.op] if neg else update.op
    e = update.value
    if c is None:
        return update.replace(op=op)
    inner = p.cell.index[-1].vars() if p.cell.index else set()
    if isinstance(e, Bin) and e.op == "*":
        if _moves_with(e.b, inner):
            return update.replace(op=op, value=binary("*", e.a, binary("*", c, e.b)))
        if _moves_with(e.a, inner):
            return update.replace(op=op, value=binary("*", binary("*", c, e.a), e.b))
    return update.replace(op=op, value=binary("*", c, e))


def _moves_with(e: Expr, names: set[str]) -> bool:
    """Whether ``e`` reads a subscript or an index value that depends on ``names``."""
    return any((isinstance(x, Load) and any(aff.vars() & names for aff in x.index)) or
               (isinstance(x, Index) and x.aff.vars() & names) for x in e.walk())


def _scale_loads(p: _Pattern) -> list[Load]:
    scale = p.linear[1] if p.linear is not None else None
    return [] if scale is None else [e for e in scale.walk() if isinstance(e, Load)]


def _rewrite(scop: Scop, patterns: list[_Pattern], fold: bool) -> Scop:
    changed: dict[str, Statement | None] = {}  # None: the statement goes
    for p in patterns:
        if p.linear is not None:
            start = _start(p)
            changed[p.init.name] = None if start == p.cell else \
                p.init.replace(target=p.cell, value=start)
            changed.update((old.name, _scaled(p, new)) for old, new in p.updates)
            changed[p.store.name] = None
            continue
        term = _folded_init(p) if fold else None
        changed[p.init.name] = p.init.replace(target=p.cell) if term is None else \
            p.init.replace(target=p.cell, value=term)
        changed.update((old.name, new) for old, new in p.updates)
        changed[p.store.name] = None if _is_plain(p) or term is not None else \
            p.store.replace(value=_forwarded(p.store.value, p))
    statements = tuple(changed.get(s.name, s) for s in scop.statements)
    statements = tuple(s for s in statements if s is not None)
    gone = {name for name, s in changed.items() if s is None}
    scalars = {p.scalar for p in patterns}
    arrays = tuple(a for a in scop.arrays if a.name not in scalars)
    return scop.replace(statements=statements, arrays=arrays,
                        tree=_without(scop.tree, gone))


def _without(nodes: tuple[Node, ...], gone: set[str]) -> tuple[Node, ...]:
    """The loop tree less the statements named in ``gone``."""
    return rewrite_tree(nodes, lambda n: () if isinstance(n, StmtRef) and n.name in gone
                        else None)


