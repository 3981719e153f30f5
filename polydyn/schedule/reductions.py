"""Reductions. Loops carried only by reductions into local scalars (``s += x``,
``m = max(m, x)``): the emitter vectorizes them with an OpenMP ``simd reduction`` clause
(reassociating the reduction, as every vectorizing BLAS and NumPy's own sums do). Array
reductions (``Y[b, f, y, x] += X[..] * W[..]``): ``reassociable_validity`` lets a schedule
reorder the updates of one cell among themselves (conv's reduction loops interchanged)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

import islpy as isl

from ..scop.deps import Deps, _anti, _flow, _maps, _memory_based, _output, operations_quota
from ..scop.exprs import Bin, Cast, Expr, Index, Load, Scalar, Select
from ..scop.ir import Scop, Statement
from .tree import statement_names


def reduction_of(scop: Scop, stmt: Statement) -> tuple[str, str] | None:
    """``(scalar, op)`` when ``stmt`` is ``s += e`` or ``s = max(s, e)``/``min`` with ``e``
    not reading ``s`` and ``s`` a local scalar; else None."""
    t = stmt.target
    if not isinstance(t, Scalar) or scop.array(t.name).kind != "local":
        return None

    def mine(x: object) -> bool:
        return isinstance(x, Scalar) and x.name == t.name

    op = _reduction_op(stmt, mine, mine)
    return None if op is None else (t.name, op)


def array_reduction_of(stmt: Statement) -> str | None:
    """The target array of ``T[x] += e`` or ``T[x] = max(T[x], e)`` (``min``) with ``e`` not
    reading ``T``; else None."""
    found = cell_reduction_of(stmt)
    return None if found is None else found[0]


def cell_reduction_of(stmt: Statement) -> tuple[str, str] | None:
    """``(array, op)`` for ``T[x] += e`` (``+``) or ``T[x] = max(T[x], e)`` (``max``,
    ``min``) with ``e`` not reading ``T``; else None."""
    t = stmt.target
    if not isinstance(t, Load):
        return None
    index = [str(i) for i in t.index]

    def of_array(x: object) -> TypeGuard[Load]:
        return isinstance(x, Load) and x.array == t.array

    def cell(x: object) -> bool:
        return of_array(x) and [str(i) for i in x.index] == index

    op = _reduction_op(stmt, cell, of_array)
    return None if op is None else (t.array, op)


def sum_targets(scop: Scop, names: set[str]) -> set[str] | None:
    """The arrays the named statements sum into when every one of them is ``T[x] += e``,
    and none reads an array another of them sums into; else None. Such statements may run
    their updates in any grouping: split among threads, each into a private copy of the
    targets, the copies added at the end (reassociated sums, as in ``reassociable_validity``)."""
    stmts = [scop.statement(n) for n in sorted(names)]
    targets: set[str] = set()
    for s in stmts:
        arr = array_reduction_of(s)
        if arr is None or s.op != "+=":
            return None
        targets.add(arr)
    for s in stmts:
        if any(isinstance(x, Load) and x.array in targets for x in s.value.walk()):
            return None
    return targets or None


def _reduction_op(stmt: Statement, is_target: Callable[[object], bool],
                  touches: Callable[[object], bool]) -> str | None:
    """``+`` for ``target += e``, ``max``/``min`` for ``target = max(target, e)``, where
    ``e`` has no node that ``touches`` the target's variable; else None."""

    def reads(e: Expr) -> bool:
        return any(touches(x) for x in e.walk())

    if stmt.op == "+=" and not reads(stmt.value):
        return "+"
    v = stmt.value
    if stmt.op == "=" and isinstance(v, Bin) and v.op in ("max", "min"):
        for me, other in ((v.a, v.b), (v.b, v.a)):
            if is_target(me) and not reads(other):
                return v.op
    return None


def reassociable_validity(scop: Scop, deps: Deps) -> isl.UnionMap:
    """``deps.validity`` with the updates of each cell by an array reduction statement free
    to run in any order among themselves (a reordered floating-point sum: the same terms,
    other roundings). Its dependences on itself are dropped (it writes only its target,
    read at the same cell); every other statement's access to a cell it updates is ordered
    against each of its updates (memory-based), so no other statement sees a partial sum
    or lands inside one."""
    reductions = {s.name: array_reduction_of(s) for s in scop.statements}
    reductions = {name: arr for name, arr in reductions.items() if arr is not None}
    if not reductions:
        return deps.validity
    kept = isl.UnionMap.empty(deps.validity.get_space())
    for m in _maps(deps.validity):
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        if not (src == dst and src in reductions):
            kept = kept.union(isl.UnionMap.from_map(m))
    order = scop.original_schedule()
    reads, writes = scop.accesses("read"), scop.accesses("write")
    for name, arr in reductions.items():
        mine = _statement_domain(scop, name)
        updates = _only_array(writes.intersect_domain(mine), arr)
        others = _only_array(reads.union(writes).subtract_domain(mine), arr)
        kept = kept.union(_memory_based(others, updates, order)).union(
            _memory_based(updates, others, order))
    return kept.coalesce()


def _statement_domain(scop: Scop, name: str) -> isl.UnionSet:
    sets: list[isl.Set] = []
    scop.domain().foreach_set(sets.append)
    return isl.UnionSet.from_set(next(s for s in sets if s.get_tuple_name() == name))


def _only_array(umap: isl.UnionMap, name: str) -> isl.UnionMap:
    return _drop_arrays(umap, {m.get_tuple_name(isl.dim_type.out) for m in _maps(umap)} - {name})


def _drop_arrays(umap: isl.UnionMap, names: set[str]) -> isl.UnionMap:
    kept = isl.UnionMap.empty(umap.get_space())
    maps: list[isl.Map] = []
    umap.foreach_map(maps.append)
    for m in maps:
        if m.get_tuple_name(isl.dim_type.out) not in names:
            kept = kept.union(isl.UnionMap.from_map(m))
    return kept


# The operations isl may spend on whether one loop carries a dependence (about a second;
# the bundled kernels and phrasings need far less). Past it the loop counts as carrying one,
# which is always safe: only schedules whose dependences in time run to thousands of pieces
# reach it (a recipe's tile of 5 over loops guarded `% 3` and `// 2`).
CARRY_MAX_OPERATIONS = 1_000_000


def _carried(deps: isl.UnionMap, sched: isl.UnionMap) -> bool:
    """Whether the last dimension of ``sched`` carries a dependence (outer dims equal), or
    isl could not tell within ``CARRY_MAX_OPERATIONS``."""
    try:
        with operations_quota(deps.get_ctx(), CARRY_MAX_OPERATIONS):
            return _carried_exactly(deps, sched)
    except isl.Error:  # the quota: the loop stays sequential
        return True


def _carried_exactly(deps: isl.UnionMap, sched: isl.UnionMap) -> bool:
    times = deps.apply_domain(sched).apply_range(sched)
    maps: list[isl.Map] = []
    times.foreach_map(maps.append)
    for m in maps:
        n = m.dim(isl.dim_type.in_)
        if n == 0:
            continue
        carried = _along_last(n, "!=")
        if not m.intersect(carried.align_params(m.get_space())).is_empty():
            return True
    return False


def _along_last(n: int, relation: str) -> isl.Map:
    """``{ [a] -> [b] }`` over ``n`` dimensions: the outer ones equal, the last ``b``'s in
    ``relation`` to ``a``'s (``!=``: another iteration of the loop; ``>``: a later one)."""
    xs, ys = [f"a{k}" for k in range(n)], [f"b{k}" for k in range(n)]
    cons = [f"{x} = {y}" for x, y in zip(xs[:-1], ys[:-1], strict=True)] + \
        [f"{ys[-1]} {relation} {xs[-1]}"]
    return isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(ys)}] : {' and '.join(cons)} }}")


@dataclass(frozen=True)
class Selection:
    """``index = e if x > value else index`` just before ``value = max(value, x)`` in a
    loop's body (``<`` with ``min``), ``e`` growing with the loop: ``index`` ends at ``e``'s
    value where the running ``value`` first took its last value (an argmax, an argmin)."""

    index: str
    value: str
    op: str  # "max" or "min"


@dataclass(frozen=True)
class LoopCarry:
    """What a loop carries, given the loops around it (astgen annotates every for node with
    one, as PPCG does): ``parallel`` (nothing), ``reduce`` (only reductions into local
    scalars: ``reductions``, (op, scalar) pairs), ``select`` (only ``selections`` and the
    reductions of their values) or ``sequential``. Printed as ``reduce(+:s max:m)`` or
    ``select(max:b@k)`` in the AST dumps."""

    kind: str
    reductions: tuple[tuple[str, str], ...] = ()
    selections: tuple[Selection, ...] = ()

    @property
    def parallel(self) -> bool:
        return self.kind == PARALLEL_LOOP

    def __str__(self) -> str:
        if self.kind == SELECT_LOOP:
            return "select(" + " ".join(f"{s.op}:{s.value}@{s.index}"
                                        for s in self.selections) + ")"
        if self.kind != REDUCE_LOOP:
            return self.kind
        return "reduce(" + " ".join(f"{op}:{name}" for op, name in self.reductions) + ")"


PARALLEL_LOOP, REDUCE_LOOP, SEQUENTIAL_LOOP = "parallel", "reduce", "sequential"
SELECT_LOOP = "select"
PARALLEL_CARRY, SEQUENTIAL_CARRY = LoopCarry(PARALLEL_LOOP), LoopCarry(SEQUENTIAL_LOOP)


def loop_kind(scop: Scop, all_deps: isl.UnionMap, sched: isl.UnionMap) -> LoopCarry:
    """What the loop whose schedule, outer loops first, is ``sched`` (``{ S[i] -> [outer...,
    this] }``, flat) carries."""
    domain = sched.domain()
    deps = all_deps.intersect_domain(domain).intersect_range(domain)
    if not _carried(deps, sched):
        return PARALLEL_CARRY
    stmts = [scop.statement(n) for n in statement_names(domain)]
    found: dict[str, str] = {}
    for s in stmts:
        red = reduction_of(scop, s)
        if red is not None:
            if found.get(red[0], red[1]) != red[1]:
                return SEQUENTIAL_CARRY
            found[red[0]] = red[1]
    if not found:
        return SEQUENTIAL_CARRY
    selections = _selections(scop, stmts, found, sched)
    if selections and set(found) != {sel.value for sel in selections.values()}:
        return SEQUENTIAL_CARRY  # (other reductions beside a selection: not split in lanes)
    mine = set(found) | {sel.index for sel in selections.values()}
    if _sees_partial(scop, [s for s in stmts if s.name not in selections], mine):
        return SEQUENTIAL_CARRY
    reads = _drop_arrays(scop.accesses("read").intersect_domain(domain), mine)
    writes = _drop_arrays(scop.accesses("write").intersect_domain(domain), mine)
    order = scop.original_schedule().intersect_domain(domain)
    flow, _ = _flow(reads, writes, order)
    rest = flow.union(_anti(reads, writes, order)).union(_output(writes, order))
    if _carried(rest, sched):
        return SEQUENTIAL_CARRY
    reductions = tuple((op, name) for name, op in sorted(found.items()))
    if selections:
        return LoopCarry(SELECT_LOOP, reductions,
                         tuple(sorted(selections.values(), key=lambda sel: sel.index)))
    return LoopCarry(REDUCE_LOOP, reductions)


def _sees_partial(scop: Scop, stmts: list[Statement], partial: set[str]) -> bool:
    """Whether a statement sees or sets a value of the ``partial`` scalars other than its
    own reduction's (``s2 += s1`` reads the partial s1 of each iteration)."""
    for s in stmts:
        red = reduction_of(scop, s)
        touched = {x.name for x in s.value.walk() if isinstance(x, Scalar)}
        if red is None and isinstance(s.target, Scalar):
            touched.add(s.target.name)
        if red is not None:
            touched.discard(red[0])
        if touched & partial:
            return True
    return False


def _selections(scop: Scop, stmts: list[Statement], found: dict[str, str],
                sched: isl.UnionMap) -> dict[str, Selection]:
    """The statements of a loop that are selections (``Selection``) of the reductions
    ``found`` (scalar -> op), by name: ``k = e if x > b else k`` (or ``b < x``; ``<`` for
    ``min``) with ``b = max(b, x)`` after it in the body, the same ``x``, ``e`` an affine
    function of the iterators that grows along the loop (``sched``), ``k`` a local scalar
    no other statement of the loop assigns, ``b`` the value of no other selection."""
    order = {s.name: n for n, s in enumerate(scop.statements)}
    updates = {red[0]: s for s in stmts if (red := reduction_of(scop, s)) is not None}
    out: dict[str, Selection] = {}
    for s in stmts:
        v, t = s.value, s.target
        if s.op != "=" or not isinstance(t, Scalar) or scop.array(t.name).kind != "local" or \
                not isinstance(v, Select) or v.b != Scalar(t.dtype, t.name) or \
                not isinstance(v.cond, Bin) or v.cond.op not in (">", "<"):
            continue
        e = v.a.a if isinstance(v.a, Cast) else v.a
        a, b = v.cond.a, v.cond.b
        if isinstance(a, Scalar) and not isinstance(b, Scalar):  # b < x: x > b
            a, b, op = b, a, {">": "<", "<": ">"}[v.cond.op]
        else:
            op = v.cond.op
        if not isinstance(b, Scalar) or found.get(b.name) != ("max" if op == ">" else "min"):
            continue
        update = updates[b.name]
        other = update.value.b if update.value.a == Scalar(b.dtype, b.name) else \
            update.value.a
        if other != a or order[s.name] > order[update.name] or \
                any(isinstance(x, Scalar) for x in a.walk()) or not isinstance(e, Index) or \
                any(x.target == t for x in stmts if x is not s) or \
                not _grows(scop, s, e, sched):
            continue
        out[s.name] = Selection(t.name, b.name, found[b.name])
    values = Counter(sel.value for sel in out.values())  # one index per value: lanes
    return {name: sel for name, sel in out.items() if values[sel.value] == 1}  # combine pairs


def _grows(scop: Scop, stmt: Statement, e: Index, sched: isl.UnionMap) -> bool:
    """Whether ``e`` (over ``stmt``'s iterators) grows strictly along the last dimension of
    the flat schedule ``sched`` while the outer ones stay: a later iteration's value is the
    larger one, so the earliest of equal candidates is the one with the smallest value."""
    maps: list[isl.Map] = []
    sched.intersect_domain(_statement_domain(scop, stmt.name)).foreach_map(maps.append)
    if len(maps) != 1:
        return False
    m = maps[0]
    later = _along_last(m.dim(isl.dim_type.out), ">")
    pairs = m.apply_range(later.align_params(m.get_space())).apply_range(m.reverse())
    params = f"[{', '.join(scop.syms)}] -> " if scop.syms else ""
    value = isl.Map(f"{params}{{ {stmt.name}[{', '.join(stmt.iters)}] -> "
                    f"[{e.aff.to_isl()}] }}").align_params(pairs.get_space())
    values = pairs.apply_domain(value).apply_range(value)
    smaller = isl.Map("{ [x] -> [y] : y <= x }").align_params(values.get_space())
    return values.intersect(smaller).is_empty()
