"""Guarded reads of a sum taken from a zero-padded copy: a "same" convolution written with
the image's edges as a condition,

    for b, f, y, x:  Y[b, f, y, x] = bias[f]
        for c, ky, kx:  if 0 <= y + ky - 1 < H and 0 <= x + kx - 1 < W:
                            Y[b, f, y, x] += X[b, c, y + ky - 1, x + kx - 1] * Wt[f, c, ky, kx]

reads ``X`` from a copy with a border of zeros and drops the condition:

    for b, c, h, w in (B, C, H + 2, W + 2):
        Xp[b, c, h, w] = X[b, c, h - 1, w - 1] if 1 <= h <= H and 1 <= w <= W else 0
    for b, f, y, x:  Y[b, f, y, x] = bias[f]
        for c, ky, kx:  Y[b, f, y, x] += Xp[b, c, y + ky, x + kx] * Wt[f, c, ky, kx]

With the condition each output's window is cut at the image's edges, so no tile of outputs
has a rectangular reduction and no register tile forms; without it the sum is the valid
convolution the CPU policy tiles. The copy costs one pass over the padded ``X``; it is made
only where the sum reads each element of ``X`` many times (a loop of the statement, ``f``
here, is absent from the subscripts of ``X``). A term written as a conditional expression,
``(X[...] if <X's bounds> else 0) * Wt[...]``, reads the copy the same way; so do taps whose
loops stop at the edges (``for ky in range(max(0, 1 - y), min(3, H + 1 - y))``), which then
run their whole range.

The instances the condition removed read zeros: each adds ``0 * Wt[...]`` to its cell, which
leaves the cell as it was for finite values of the other factors (as a convolution library's
zero padding does; an infinite or NaN weight at a tap that only reaches the border gives NaN
where the condition skipped it; the conditional expression's form is exact). The rewrite is
made only where the condition is the bounds of ``X``'s subscripts and others that stay (isl:
the loops' domain, less the conditions the bounds imply, cut by those bounds is the domain as
written), the term is a product with ``X``'s element as a factor, ``X`` is read once by the
statement and written by none, the other accesses stay in bounds, and no cell gets written
that no statement wrote before. The loop tree loses the condition where nothing else was in
it, and the taps' loops their edges where they hold the statement alone (the reference
interpreter then runs the added instances too).
"""

from __future__ import annotations

import islpy as isl

from .affine import Aff
from .checks import array_bounds
from .domains import loop_constraints, make_domain
from .exprs import Bin, Const, Expr, Index, Load, Select, Un, binary, is_float, map_children
from .ir import (
    Array,
    Guard,
    Loop,
    Node,
    Scop,
    Statement,
    StmtRef,
    rewrite_tree,
    statement_accesses,
    statements_under,
)
from .names import fresh_name
from .printer import format_expr


def pad_guarded_reads(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every guarded read of that form taken from a zero-padded copy, and a
    sentence for each (``scop`` itself and none when there is none)."""
    notes: list[str] = []
    copies: dict[tuple[str, tuple[str, ...]], str] = {}  # (array, padded box) -> copy
    for stmt in scop.statements:
        found = _padding(scop, stmt)
        if found is None:
            continue
        read, load, domain, lows, highs = found
        key = (load.array, tuple(f"{lo}:{hi}" for lo, hi in zip(lows, highs, strict=True)))
        if key not in copies:
            scop, copies[key] = _add_copy(scop, load.array, lows, highs, stmt)
        copy = copies[key]
        moved = Load(load.dtype, copy, tuple(_shifted(i, lo) for i, lo in
                                             zip(load.index, lows, strict=True)))
        stmt = scop.statement(stmt.name)
        scop = _replace_statement(scop, stmt.replace(
            value=_swap(stmt.value, read, moved), domain=domain))
        loops = _loop_domain(scop, stmt)
        if read is not load:
            how = "reads it without a conditional expression"
        elif domain.is_equal(loops):  # the guard said nothing else
            scop = scop.replace(tree=_unguarded(scop.tree, stmt.name))
            how = "runs without its condition"
        elif domain.is_subset(loops):
            how = f"keeps only the part of its condition that is not {load.array}'s bounds"
        else:
            scop = _widened(scop, stmt.name, domain)
            how = "runs its loops over their whole ranges"
        notes.append(f"{format_expr(load)}: read from {copy}, a copy of {load.array} with "
                     f"a border of zeros, so {stmt.name} {how}")
    return scop, tuple(notes)


def _padding(scop: Scop, stmt: Statement
             ) -> tuple[Expr, Load, isl.Set, list[Aff], list[Aff]] | None:
    """The guarded read (a load, or ``A[...] if <A's bounds> else 0``) and its load, the
    statement's domain without its guard, and the padded box of the load's array (lowest
    and highest subscript per dimension); None where no read of the statement has that
    form."""
    for read in _summed_factors(scop, stmt):
        load = read if isinstance(read, Load) else read.a
        found = _padded_box(scop, stmt, read, load)
        if found is not None:
            return (read, load, *found)
    return None


def _padded_box(scop: Scop, stmt: Statement, read: Expr, load: Load
                ) -> tuple[isl.Set, list[Aff], list[Aff]] | None:
    """For one candidate read: the statement's domain without the guard and the padded box,
    where the rewrite applies and pays; None otherwise."""
    array = scop.array(load.array)
    # the bounds of the subscripts that are not a loop variable alone: what a guard states
    coupled = [d for d, i in enumerate(load.index)
               if len(i.vars()) != 1 or i.linear() != ({next(iter(i.vars())): 1}, 0)]
    if not coupled:
        return None
    domain = _domain_without_guard(scop, stmt, read, load, coupled)
    if domain is None or not _in_bounds(scop, stmt, load, domain) or \
            not _reads_often(scop, stmt, load, domain):
        return None
    lows, highs = [], []
    for d in range(array.rank):
        if d in coupled:
            lo, hi = _extremes(scop, stmt, domain, load.index[d], array.shape[d])
            if lo is None or hi is None:
                return None
        else:
            lo, hi = Aff.const(0), array.shape[d] - 1
        lows.append(lo)
        highs.append(hi)
    # an extent from one piece of isl's answer must hold on the whole context
    negative = " or ".join(f"{hi.to_isl()} < {lo.to_isl()} - 1" for lo, hi in
                           zip(lows, highs, strict=True))
    if not isl.Set(f"{scop.param_space_text()} -> {{ : {negative} }}").intersect(
            scop.context).is_empty():
        return None
    return domain, lows, highs


# Taps of a window (a reduction's constant extents along the read's subscripts) from which a
# sum reads each element often enough for a copy of the array to pay without other reuse:
# a depthwise 3 x 3 convolution's 9, not a 3-tap 1-D stencil's.
MIN_WINDOW = 8


def _reads_often(scop: Scop, stmt: Statement, load: Load, domain: isl.Set) -> bool:
    """Whether the sum reads each element of the array many times: a loop of the statement is
    absent from the load's subscripts (conv's output channels), or its reduction loops that
    the subscripts use (the window's taps) run ``MIN_WINDOW`` times or more."""
    used = set().union(*(i.vars() for i in load.index))
    if not set(stmt.iters) <= used:
        return True
    target = stmt.target  # the cell's loops: its subscripts', or a local scalar's scope
    kept = set().union(*(i.vars() for i in target.index)) if isinstance(target, Load) else \
        set(scop.array(target.name).scope)
    taps = 1
    for pos, v in enumerate(stmt.iters):
        if v in kept:
            continue
        extent = domain.dim_max(pos).sub(domain.dim_min(pos))
        pieces = extent.get_pieces()
        if len(pieces) != 1 or not pieces[0][1].is_cst():
            return False
        taps *= int(pieces[0][1].get_constant_val().to_python()) + 1
    return taps >= MIN_WINDOW


def _domain_without_guard(scop: Scop, stmt: Statement, read: Expr, load: Load,
                          coupled: list[int]) -> isl.Set | None:
    """The statement's domain once ``read`` reads the padded copy: its own for a select
    whose condition is the load's bounds; for a load under a guard, the loops' domain with
    the guard's other conditions (isl's gist drops those the bounds imply), where the bounds
    cut it back to the domain as written and no cell gets written that was not before."""
    array = scop.array(load.array)
    head = f"{scop.param_space_text()} -> {{ {stmt.name}[{', '.join(stmt.iters)}]"
    access = isl.Map(f"{head} -> {array.name}[{', '.join(i.to_isl() for i in load.index)}] }}")
    inside = access.intersect_range(array_bounds(scop, array.name)).domain()
    if isinstance(read, Select):
        cond = _condition(read.cond)
        if cond is None or not stmt.domain.intersect(isl.Set(f"{head} : {cond} }}")).is_equal(
                stmt.domain.intersect(inside)):
            return None
        return stmt.domain
    ranges = _loop_domain(scop, stmt)
    if ranges is None:
        return None
    guard = isl.Set(f"{head} : " + " and ".join(
        f"0 <= {load.index[d].to_isl()} < {array.shape[d].to_isl()}" for d in coupled) + " }")
    domain = stmt.domain.gist(guard.intersect(ranges)).intersect(ranges).coalesce()
    if domain.is_equal(stmt.domain):  # the bounds are the loops' (``range(max(0, 1 - y),
        # min(3, H + 1 - y))``): what the domain says beyond them
        domain = stmt.domain.gist(guard.intersect_params(scop.context)) \
            .intersect_params(scop.context).coalesce()
    if domain.is_equal(stmt.domain) or not domain.is_bounded() or \
            not domain.intersect(inside).is_equal(stmt.domain) or \
            not _writes_nothing_new(scop, stmt, domain):
        return None
    return domain


def _loop_domain(scop: Scop, stmt: Statement) -> isl.Set | None:
    """The domain of the loops around ``stmt`` alone, without its guards."""
    loops = _loops_around(scop.tree, stmt.name, ())
    if loops is None or tuple(lp.var for lp in loops) != stmt.iters:
        return None
    return make_domain(scop.param_space_text(), stmt.name, stmt.iters,
                       [loop_constraints(lp) for lp in loops], scop.context)


def _widened(scop: Scop, name: str, domain: isl.Set) -> Scop:
    """``scop`` with the loops that hold statement ``name`` alone running over ``domain``'s
    range of their variable, where that range is a constant one and the loops then give the
    domain exactly (``range(max(0, 1 - y), min(3, H + 1 - y))`` becomes ``range(0, 3)``);
    ``scop`` itself otherwise (the loop tree then still says which instances do work)."""
    loops = _loops_around(scop.tree, name, ())
    stmt = scop.statement(name)
    wide: dict[str, tuple[Aff, Aff]] = {}
    for lp in loops or ():
        if statements_under(lp.body) != [name]:
            continue
        pos = stmt.iters.index(lp.var)
        lo, hi = _single_aff(domain.dim_min(pos)), _single_aff(domain.dim_max(pos))
        if lo is not None and hi is not None and lp.step == 1:
            wide[lp.var] = (lo, _shifted(hi, Aff.const(-1)))
    if not wide:
        return scop
    after = scop.replace(tree=_with_bounds(scop.tree, name, wide))
    return after if domain.is_equal(_loop_domain(after, stmt)) else scop


def _with_bounds(nodes: tuple[Node, ...], name: str, wide: dict[str, tuple[Aff, Aff]]
                 ) -> tuple[Node, ...]:
    """The loop tree with the loops that hold statement ``name`` alone given the bounds in
    ``wide``, by variable."""
    def widened(n: Node) -> tuple[Node, ...] | None:
        if not (isinstance(n, Loop) and n.var in wide and statements_under(n.body) == [name]):
            return None
        lo, hi = wide[n.var]
        return (Loop(n.var, lo, hi, n.step, rewrite_tree(n.body, widened)),)

    return rewrite_tree(nodes, widened)


def _unguarded(nodes: tuple[Node, ...], name: str) -> tuple[Node, ...]:
    """The loop tree with the guards that hold statement ``name`` alone taken away."""
    def opened(n: Node) -> tuple[Node, ...] | None:
        return rewrite_tree(n.then, opened) if isinstance(n, Guard) and not n.orelse and \
            statements_under(n.then) == [name] else None

    return rewrite_tree(nodes, opened)


def _loops_around(nodes: tuple[Node, ...], name: str, outer: tuple[Loop, ...]
                  ) -> tuple[Loop, ...] | None:
    """The loops around statement ``name`` in the loop tree, outermost first."""
    for n in nodes:
        if isinstance(n, StmtRef) and n.name == name:
            return outer
        if isinstance(n, Loop | Guard):
            inner = (n.body,) if isinstance(n, Loop) else (n.then, n.orelse)
            for body in inner:
                found = _loops_around(body, name, (*outer, n) if isinstance(n, Loop) else outer)
                if found is not None:
                    return found
    return None


def _summed_factors(scop: Scop, stmt: Statement) -> list[Expr]:
    """In ``cell (+|-)= ... * r * ...``, the factors ``r`` that read an array once in the
    statement, an array no statement writes, where a zero there makes the term zero: its
    loads and its selects ``A[...] if <affine condition> else 0``."""
    rhs = stmt.rhs()
    if not (isinstance(rhs, Bin) and rhs.op in ("+", "-")):
        return []
    target = stmt.target
    if rhs.a == target:
        term = rhs.b
    elif rhs.b == target and rhs.op == "+":
        term = rhs.a
    else:
        return []
    written = {s.target.array for s in scop.statements if isinstance(s.target, Load)}
    out: list[Expr] = []
    for read in _factors(term):
        if isinstance(read, Select) and isinstance(read.a, Load) and \
                isinstance(read.b, Const) and read.b.value == 0:
            load = read.a
        elif isinstance(read, Load):
            load = read
        else:
            continue
        if load.array in written or scop.array(load.array).kind not in ("in", "inout"):
            continue
        if sum(isinstance(e, Load) and e.array == load.array
               for e in (target, *stmt.value.walk())) == 1:
            out.append(read)
    return out


def _factors(e: Expr) -> list[Expr]:
    """The factors of a product (``neg`` looked through), ``e`` itself if it is none."""
    if isinstance(e, Bin) and e.op == "*":
        return _factors(e.a) + _factors(e.b)
    if isinstance(e, Un) and e.op == "neg":
        return _factors(e.a)
    return [e]


def _condition(e: Expr) -> str | None:
    """An affine condition of loop variables and syms as isl text; None for any other."""
    if isinstance(e, Bin) and e.op in ("and", "or"):
        a, b = _condition(e.a), _condition(e.b)
        return None if a is None or b is None else f"(({a}) {e.op} ({b}))"
    if isinstance(e, Un) and e.op == "not":
        a = _condition(e.a)
        return None if a is None else f"(not ({a}))"
    if isinstance(e, Bin) and e.op in ("<", "<=", ">", ">=", "==", "!="):
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        if e.op == "!=":
            return f"(not (({a}) = ({b})))"
        return f"({a}) {'=' if e.op == '==' else e.op} ({b})"
    return None


def _affine(e: Expr) -> str | None:
    if isinstance(e, Index):
        return e.aff.to_isl()
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return str(e.value)
    return None


def _extremes(scop: Scop, stmt: Statement, domain: isl.Set, index: Aff, size: Aff
              ) -> tuple[Aff | None, Aff | None]:
    """The lowest and highest value of subscript ``index`` on ``domain``: affine expressions
    of the syms where isl's are, or else a constant distance below 0 and past ``size - 1``
    (the largest over every size: a stride leaves the last row unread for some sizes)."""
    head = f"{scop.param_space_text()} -> {{ {stmt.name}[{', '.join(stmt.iters)}]"
    access = isl.Map(f"{head} -> [{index.to_isl()}] }}").intersect_domain(domain)
    image = access.range()
    lo = _single_aff(image.dim_min(0))
    if lo is None:
        low = domain.min_val(isl.Aff(f"{head} -> [{index.to_isl()}] }}"))
        lo = Aff.const(int(low.to_python())) if low.is_int() else None
    hi = _single_aff(image.dim_max(0))
    if hi is None:
        past = domain.max_val(isl.Aff(f"{head} -> [({index.to_isl()}) - ({size.to_isl()})] }}"))
        hi = _shifted(size, Aff.const(-int(past.to_python()))) if past.is_int() else None
    return lo, hi


def _in_bounds(scop: Scop, stmt: Statement, load: Load, domain: isl.Set) -> bool:
    """Whether every other access of ``stmt`` stays inside its array on ``domain``."""
    params = scop.param_space_text()
    head = f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}]"
    for ref in (stmt.target, *stmt.value.walk()):
        if not isinstance(ref, Load) or ref == load:
            continue
        access = isl.Map(f"{head} -> {ref.array}[{', '.join(i.to_isl() for i in ref.index)}] }}")
        if not access.intersect_domain(domain).range().is_subset(
                array_bounds(scop, ref.array).intersect_params(scop.context)):
            return False
    return True


def _writes_nothing_new(scop: Scop, stmt: Statement, domain: isl.Set) -> bool:
    """Whether the statement on ``domain`` writes only cells that it or another statement
    writes anyway (a local scalar's cells are its scope's iterations)."""
    wider = statement_accesses(scop, stmt.replace(domain=domain), "write").range()
    written = scop.accesses("write").range()
    return wider.is_subset(written)


def _single_aff(pw: isl.PwAff) -> Aff | None:
    """``pw`` as an affine expression of the syms, where it is one (one expression on every
    piece, integer coefficients, no divisions); None otherwise."""
    pieces = pw.get_pieces()
    affs = {str(a) for _, a in pieces}
    if len(affs) != 1:
        return None
    aff = pieces[0][1]
    if aff.dim(isl.dim_type.div) or not aff.get_denominator_val().is_one():
        return None
    coeffs = {aff.get_dim_name(isl.dim_type.param, k):
              int(aff.get_coefficient_val(isl.dim_type.param, k).to_python())
              for k in range(aff.dim(isl.dim_type.param))}
    return _aff(coeffs, int(aff.get_constant_val().to_python()))


def _aff(coeffs: dict[str, int], const: int) -> Aff:
    """``sum(c * v) + const``: the terms added, then those subtracted, zeros left out."""
    out: Aff | None = None
    for sign in (1, -1):
        for v, c in coeffs.items():
            if c * sign <= 0:
                continue
            term = Aff.var(v) if abs(c) == 1 else abs(c) * Aff.var(v)
            if out is None:
                out = term if sign > 0 else -term
            else:
                out = out + term if sign > 0 else out - term
    if out is None:
        return Aff.const(const)
    return out + const if const >= 0 else out - (-const)


def _shifted(a: Aff, by: Aff) -> Aff:
    """``a - by``, written as one sum where both are affine."""
    la, lb = a.linear(), by.linear()
    if la is None or lb is None:
        return a - by
    coeffs = dict(la[0])
    for v, c in lb[0].items():
        coeffs[v] = coeffs.get(v, 0) - c
    return _aff(coeffs, la[1] - lb[1])


def _add_copy(scop: Scop, name: str, lows: list[Aff], highs: list[Aff], user: Statement
              ) -> tuple[Scop, str]:
    """``scop`` with a temporary over the padded box and, first of all, the statement that
    fills it: ``name``'s cell where there is one, else zero; and the temporary's name."""
    array = scop.array(name)
    taken = {s.name for s in scop.statements} | {a.name for a in scop.arrays} | \
        set(scop.syms) | {v for s in scop.statements for v in s.iters}
    copy = fresh_name(f"{name}_pad", taken)
    stmt_name = fresh_name(f"{user.name}_pad", taken)
    iters = tuple(fresh_name(f"{name.lower()}{d}", taken) for d in range(array.rank))
    extents = tuple(_shifted(hi, _shifted(lo, Aff.const(1))) for lo, hi in
                    zip(lows, highs, strict=True))
    cell = tuple(_shifted(Aff.var(v), -lo) for v, lo in zip(iters, lows, strict=True))
    inside: Expr | None = None
    for d, (lo, hi, sub) in enumerate(zip(lows, highs, cell, strict=True)):
        if lo.linear() == ({}, 0) and _shifted(hi, Aff.const(-1)).linear() == \
                array.shape[d].linear():
            continue  # the whole dimension, no border
        index = Index("int", sub)
        for test in (binary("<=", Const("int", 0), index),
                     binary("<", index, Index("int", array.shape[d]))):
            inside = test if inside is None else binary("and", inside, test)
    zero = Const("float", 0.0) if is_float(array.dtype) else Const("int", 0)
    value: Expr = Load(array.dtype, name, cell)
    if inside is not None:
        value = Select(array.dtype, inside, value, zero)
    domain = make_domain(scop.param_space_text(), stmt_name, iters,
                         [f"0 <= {v} < {e.to_isl()}" for v, e in zip(iters, extents, strict=True)],
                         scop.context)
    new = Statement(stmt_name, iters, Load(array.dtype, copy, tuple(Aff.var(v) for v in iters)),
                    "=", value, domain, user.loc)
    node: Loop | StmtRef = StmtRef(stmt_name)
    for v, e in reversed(list(zip(iters, extents, strict=True))):
        node = Loop(v, Aff.const(0), e, 1, (node,))
    return scop.replace(arrays=(*scop.arrays, Array(copy, array.dtype, extents, "temp")),
                        statements=(new, *scop.statements), tree=(node, *scop.tree)), copy


def _swap(e: Expr, old: Load, new: Load) -> Expr:
    if e == old:
        return new
    return map_children(e, lambda x: _swap(x, old, new))


def _replace_statement(scop: Scop, stmt: Statement) -> Scop:
    return scop.replace(statements=tuple(stmt if s.name == stmt.name else s
                                         for s in scop.statements))
