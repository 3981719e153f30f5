"""Double buffering: a time loop whose body computes a temporary from an array and copies it
back (``B = f(A); A = B``, PolyBench's jacobi-2d-imper) becomes a loop whose steps take the
two buffers in turn, as PolyBench 4's jacobi-2d is written by hand:

    B[cells outside W] = A[...]              (once, when two or more steps run)
    for t in range(lo, hi):
        if (t - lo) % 2 == 0:  B[W] = f(A)   (P, the even steps: as written)
        else:                  A[W] = f(B)   (P's odd steps: the buffers swapped)
        if t == hi - 1 and (t - lo) % 2 == 0:
            A[W] = B[W]                      (C, the copy, only after an odd step count)

W is the set of cells P writes each step, the same set the copy writes back. Every step
reads the array's values of the step before: at an even step those are in A, at an odd step
in B, whose cells outside W (read by P, written by nobody) hold A's from the first copy.
Each step then loads and stores one array where it loaded two and stored two: jacobi-2d's
copy took a fifth of its time in cache and half its memory traffic beyond.

The rewrite applies to a loop at the top of the program with step 1 whose body is two
subtrees, each with one statement: P writes the temporary (``=``, no read of it), C copies
it into the other array at the same subscripts. P's and C's loops, guards and subscripts of
the two arrays do not depend on the time loop; P writes each cell of W once per step; the
two arrays have one shape and one dtype; no other statement touches the temporary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import islpy as isl

from .affine import Aff, Cond
from .domains import conds_text, loop_constraints, make_domain
from .exprs import Expr, Load, Scalar, map_children
from .ir import Guard, Loop, Node, Scop, Statement, StmtRef, rename_statements, statement_accesses
from .printer import format_expr


@dataclass(frozen=True)
class _Pattern:
    loop: Loop
    produce: Statement  # P: temp = f(array)
    copy: Statement  # C: array = temp
    array: str
    temp: str


def double_buffer(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every time loop of that form double-buffered, and a sentence for each
    (``scop`` itself and none when there is no such loop)."""
    notes: list[str] = []
    pos = 0
    while pos < len(scop.tree):
        node = scop.tree[pos]
        pattern = _match(scop, node) if isinstance(node, Loop) else None
        if pattern is not None:
            scop = _rewrite(scop, pos, pattern)
            notes.append(
                f"loop {node.var}: {pattern.temp} and {pattern.array} alternate as double "
                f"buffers; the copy {_text(pattern.copy)} ({pattern.copy.name}) is gone")
            pos += 1  # past the first copy inserted before the loop
        pos += 1
    return scop, tuple(notes)


def _text(stmt: Statement) -> str:
    return f"{format_expr(stmt.target)} = {format_expr(stmt.value)}"


# --- matching ---------------------------------------------------------------------------------


def _match(scop: Scop, loop: Loop) -> _Pattern | None:
    if loop.step != 1 or len(loop.body) != 2:
        return None
    names = [_only_statement(sub) for sub in loop.body]
    if None in names:
        return None
    produce, copy = (scop.statement(n) for n in names)
    if not (isinstance(copy.target, Load) and isinstance(copy.value, Load) and
            copy.op == "=" and copy.value.index == copy.target.index and
            isinstance(produce.target, Load) and produce.op == "="):
        return None
    array, temp = copy.target.array, copy.value.array
    a, b = scop.array(array), scop.array(temp)
    if produce.target.array != temp or array == temp or b.kind != "temp" or \
            a.kind not in ("out", "inout", "temp") or a.shape != b.shape or a.dtype != b.dtype:
        return None
    loads = [e for e in produce.value.walk() if isinstance(e, Load)]
    if any(e.array == temp for e in loads) or any(
            isinstance(e, Scalar) and scop.array(e.name).kind == "local"
            for e in produce.value.walk()):
        return None
    others = [s for s in scop.statements if s.name not in (produce.name, copy.name)]
    if any(s.touches(temp) for s in others):
        return None
    subscripts = [produce.target.index, copy.target.index] + \
        [e.index for e in loads if e.array == array]
    if any(loop.var in aff.vars() for index in subscripts for aff in index) or \
            any(loop.var in _tree_vars(sub) for sub in loop.body):
        return None
    if not _same_cells_once(scop, produce, copy, loop.var):
        return None
    return _Pattern(loop, produce, copy, array, temp)


def _only_statement(node: Node) -> str | None:
    """The one statement under ``node``, or None."""
    if isinstance(node, StmtRef):
        return node.name
    children = node.body if isinstance(node, Loop) else node.then + node.orelse
    if len(children) != 1:
        return None
    return _only_statement(children[0])


def _tree_vars(node: Node) -> set[str]:
    """The variables of every loop bound and guard under ``node``."""
    if isinstance(node, StmtRef):
        return set()
    if isinstance(node, Loop):
        out = node.lo.vars() | node.hi.vars()
        children = node.body
    else:
        out = node.cond.vars()
        children = node.then + node.orelse
    for c in children:
        out |= _tree_vars(c)
    return out



def _same_cells_once(scop: Scop, produce: Statement, copy: Statement, time: str) -> bool:
    """P writes, at each step, every cell the copy writes back and no other, each once."""
    written = statement_accesses(scop, produce, "write")
    copied = statement_accesses(scop, copy, "write")
    if written.n_map() != 1 or copied.n_map() != 1:
        return False
    written = isl.Map.from_union_map(written)
    cells = written.range()
    back = isl.Map.from_union_map(copied).range().set_tuple_name(cells.get_tuple_name())
    if not cells.is_equal(back):
        return False
    steps = isl.Map(f"{scop.param_space_text()} -> {{ {produce.name}"
                    f"[{', '.join(produce.iters)}] -> [{time}] }}")
    # { P[t, ...] -> [[t] -> B[...]] }: one instance per step and cell
    return steps.intersect_domain(produce.domain).range_product(written).is_injective()


# --- the rewrite ------------------------------------------------------------------------------


def _rewrite(scop: Scop, pos: int, p: _Pattern) -> Scop:
    loop, produce = p.loop, p.produce
    params = scop.param_space_text()
    t, hi = loop.var, loop.hi
    # the steps an even number of steps before the last one write the array
    to_array = Cond("==", ((hi - 1 - Aff.var(t)) % 2, Aff.const(0)))
    taken = {s.name for s in scop.statements} | {a.name for a in scop.arrays} | set(scop.syms)
    swap_name = _fresh(produce.name + "_swapped", taken)
    first_name = _fresh(p.temp + "_first", taken)

    def restricted(positive: bool) -> isl.Set:
        text = conds_text([(to_array, positive)])[0]
        return produce.domain.intersect(isl.Set(
            f"{params} -> {{ {produce.name}[{', '.join(produce.iters)}] : {text} }}"))

    swapped = produce.replace(
        name=swap_name, target=replace(produce.target, array=p.array),
        value=_swap_loads(produce.value, p.array, p.temp),
        domain=restricted(True).set_tuple_name(swap_name))
    as_written = produce.replace(domain=restricted(False))
    first, first_tree = _first_copy(scop, p, first_name)
    swapped_nest = rename_statements(loop.body[:1], {produce.name: swap_name})
    body = (Guard(to_array, swapped_nest, loop.body[:1]),)
    tree = (*scop.tree[:pos], first_tree, replace(loop, body=body), *scop.tree[pos + 1:])
    statements: list[Statement] = []
    for s in scop.statements:
        if s.name == produce.name:
            statements += [first, as_written, swapped]
        elif s.name != p.copy.name:
            statements.append(s)
    return scop.replace(statements=tuple(statements), tree=tree)


def _first_copy(scop: Scop, p: _Pattern, name: str) -> tuple[Statement, Node]:
    """The statement that copies the array into the temporary before the loop, and its loop
    nest over the array: every cell when the step count is odd (the first step reads the
    temporary), else the cells outside W when two or more steps run."""
    array = scop.array(p.array)
    taken = {s for st in scop.statements for s in st.iters} | set(scop.syms) | \
        {a.name for a in scop.arrays}
    own = [aff.args[0] for aff in p.copy.target.index if aff.op == "var"]
    if len(set(own)) == array.rank:  # the copy's own loop variables (i, j), else B_0, B_1
        iters = tuple(own)
    else:
        iters = tuple(_fresh(f"{p.temp}_{d}", taken) for d in range(array.rank))
    index = tuple(Aff.var(v) for v in iters)
    steps = p.loop.hi - p.loop.lo
    odd = Cond("==", (steps % 2, Aff.const(1)))
    outside = _outside(scop, p, iters)
    cells = odd if outside is None else Cond("or", (odd, outside))
    some = Cond(">=", (steps, Aff.const(1)))
    loops = [Loop(v, Aff.const(0), dim, 1, ()) for v, dim in zip(iters, array.shape, strict=True)]
    constraints = [loop_constraints(lp) for lp in loops] + \
        conds_text([(some, True), (cells, True)])
    domain = make_domain(scop.param_space_text(), name, iters, constraints, scop.context)
    stmt = Statement(name, iters, Load(array.dtype, p.temp, index), "=",
                     Load(array.dtype, p.array, index), domain, p.copy.loc)
    node: Node = Guard(cells, (StmtRef(name),))
    for lp in reversed(loops):
        node = replace(lp, body=(node,))
    return stmt, Guard(some, (node,))


def _outside(scop: Scop, p: _Pattern, iters: tuple[str, ...]) -> Cond | None:
    """``not (cell in W)`` over ``iters`` (for two or more steps); None (copy every cell)
    when W has divisions."""
    steps = scop.context.intersect(isl.Set(
        f"{scop.param_space_text()} -> {{ : {(p.loop.hi - p.loop.lo).to_isl()} >= 2 }}"))
    cells = isl.Map.from_union_map(statement_accesses(scop, p.copy, "write")).range()
    cells = cells.gist_params(steps).coalesce()
    pieces: list[Cond] = []
    for bset in cells.get_basic_sets():
        if bset.dim(isl.dim_type.div):
            return None
        terms = []
        for c in bset.get_constraints():
            aff = Aff.const(c.get_constant_val().to_python())
            for kind, names in ((isl.dim_type.set, iters), (isl.dim_type.param, None)):
                for k in range(bset.dim(kind)):
                    coef = c.get_coefficient_val(kind, k).to_python()
                    if coef:
                        var = Aff.var(names[k] if names else bset.get_dim_name(kind, k))
                        term = var if abs(coef) == 1 else var * abs(coef)
                        aff = aff + term if coef > 0 else aff - term
            terms.append(Cond("==" if c.is_equality() else ">=", (aff, Aff.const(0))))
        pieces.append(Cond("and", tuple(terms)) if terms else Cond("true", ()))
    inside = pieces[0] if len(pieces) == 1 else Cond("or", tuple(pieces))
    return Cond("not", (inside,))


def _swap_loads(e: Expr, a: str, b: str) -> Expr:
    """``e`` with loads of ``a`` and ``b`` exchanged."""
    if isinstance(e, Load):
        return replace(e, array={a: b, b: a}.get(e.array, e.array))
    return map_children(e, lambda x: _swap_loads(x, a, b))


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name
