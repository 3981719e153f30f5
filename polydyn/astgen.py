"""Stage 4: variant -> isl AST, built with the variant's region as the context, so conditions
the region implies vanish from the code."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import islpy as isl

from .errors import InternalError
from .lowering.tree import Node, from_isl
from .schedule.reductions import SEQUENTIAL_CARRY, loop_kind
from .schedule.tree import PROMOTE, LoopMark, PackMark, mark_of
from .scop.checks import array_bounds
from .scop.deps import Deps, local_flow
from .scop.ir import Scop

# isl AST operators as C (the prelude defines pd_min, pd_max and pd_floord).
_T = isl.ast_expr_op_type
AST_OPS = {
    _T.and_: "({} && {})", _T.and_then: "({} && {})", _T.or_: "({} || {})",
    _T.or_else: "({} || {})", _T.max: "pd_max({}, {})", _T.min: "pd_min({}, {})",
    _T.minus: "(-{})", _T.add: "({} + {})", _T.sub: "({} - {})", _T.mul: "({} * {})",
    _T.div: "({} / {})", _T.fdiv_q: "pd_floord({}, {})", _T.pdiv_q: "({} / {})",
    _T.pdiv_r: "({} % {})", _T.zdiv_r: "({} % {})", _T.cond: "({} ? {} : {})",
    _T.select: "({} ? {} : {})", _T.eq: "({} == {})", _T.le: "({} <= {})",
    _T.lt: "({} < {})", _T.ge: "({} >= {})", _T.gt: "({} > {})",
}


_VARIADIC = (_T.min, _T.max, _T.and_, _T.and_then, _T.or_, _T.or_else)


def ast_expr_text(e: isl.AstExpr, ops: dict[Any, str],
                  names: Mapping[str, str] | None = None) -> str:
    """An isl AST expression printed with an operator table (C here, Python for the OpenCL
    host side); min/max/and/or of more than two arguments fold left. ``names`` prints some
    identifiers as other text (an iterator at a value)."""
    t = e.get_type()
    if t == isl.ast_expr_type.id:
        name = e.get_id().get_name()
        return names.get(name, name) if names else name
    if t == isl.ast_expr_type.int:
        return str(e.get_val().to_python())
    op = e.get_op_type()
    fmt = ops.get(op)
    if fmt is None:
        raise InternalError(f"unexpected isl AST operator {op}")
    args = [ast_expr_text(e.get_op_arg(i), ops, names) for i in range(e.get_op_n_arg())]
    if op in _VARIADIC and len(args) > 2:
        out = args[0]
        for a in args[1:]:
            out = fmt.format(out, a)
        return out
    return fmt.format(*args)


def ast_expr_c(e: isl.AstExpr, names: Mapping[str, str] | None = None) -> str:
    """An isl AST expression as C."""
    return ast_expr_text(e, AST_OPS, names)


def iterator_depth(name: str) -> int | None:
    """The schedule depth of an AST loop iterator's name (``pd_c3`` -> 3), else None."""
    tail = name[len(ITERATOR):]
    return int(tail) if name.startswith(ITERATOR) and tail.isdigit() else None


# AST loop iterators are named pd_c0, pd_c1, ... (by schedule depth): the pd_ prefix is
# reserved, so they never shadow a user's name (isl's default c0, c1 could).
ITERATOR = "pd_c"
MAX_DEPTH = 64


def new_build(region: isl.Set) -> isl.AstBuild:
    """An AST build over ``region`` whose loop iterators are ``pd_c0``, ``pd_c1``... (by
    schedule depth), for the C variants and the OpenCL kernels alike."""
    iterators = isl.IdList.alloc(region.get_ctx(), MAX_DEPTH)
    for k in range(MAX_DEPTH):
        iterators = iterators.add(isl.Id(f"{ITERATOR}{k}"))
    return isl.AstBuild.from_context(region).set_iterators(iterators)


def build_ast(schedule: isl.Schedule, region: isl.Set, scop: Scop | None = None,
              deps: Deps | None = None) -> Node:
    """The AST of ``schedule`` under ``region``. With the Scop and its dependences, every
    for node is annotated (as PPCG does) with what its loop carries, given the loops around
    it: ``parallel`` (nothing), ``reduce(op:scalar ...)`` (only reductions into local
    scalars) or ``sequential``."""
    build = new_build(region)
    schedule = atomic_where_strides_differ(schedule)
    if scop is None or deps is None:
        return from_isl(build.node_from_schedule(schedule))

    reads: list[isl.UnionMap] = []  # the Scop's reads, computed at the first pack mark

    def after_each_mark(node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
        # every promote and pack mark is annotated, its box None or () where none is
        # bounded: reading a missing annotation raises inside islpy, which a
        # sanitizer-preloaded process cannot unwind
        mark = mark_of(node)
        if not isinstance(mark, PackMark):
            if not isinstance(mark, LoopMark) or mark.role != PROMOTE:
                return node
            try:
                cells = _instance_cells(build)
            except isl.Error:  # an exception must not leave the callback (isl aborts)
                cells = None
            box = None if cells is None else LazyBox(cells, region, scop)
            return node.set_annotation(isl.Id(PROMOTE, user=box))
        arrays = mark.arrays
        if not arrays:
            return node
        if not reads:
            reads.append(scop.accesses("read"))
        boxes = tuple(box for name in arrays
                      if (box := _footprint_box(reads[0], name, build,
                                                array_bounds(scop, name))) is not None)
        return node.set_annotation(isl.Id("pack", user=boxes))

    result = build.set_after_each_mark(after_each_mark)
    build = result[0] if isinstance(result, tuple) else result
    ast = annotated_ast(build, schedule, scop, deps, marks=True)
    del after_each_mark  # the callback lives until the AST is built
    return ast


def loop_annotator(scop: Scop, deps: Deps) -> Any:
    """The ``before_each_for`` callback that annotates each for node with what its loop
    carries: ``parallel``, ``reduce(op:scalar ...)`` or ``sequential``."""
    flow_through_locals = local_flow(scop)

    def before_each_for(build: isl.AstBuild) -> isl.Id:
        sched = _flat_schedule(build)
        carry = loop_kind(scop, deps.all, sched)
        if carry.parallel and _crosses(flow_through_locals, sched):
            carry = SEQUENTIAL_CARRY
        return isl.Id(str(carry), user=carry)

    return before_each_for


def annotated_ast(build: isl.AstBuild, schedule: isl.Schedule, scop: Scop,
                  deps: Deps, marks: bool = False) -> Node:
    """``build``'s AST of ``schedule`` with every for node annotated (``loop_annotator``)
    and every statement instance with its iterator map (``at_each_domain``), as a typed
    loop tree; ``marks``: ``build`` annotates promote and pack marks too."""
    before_each_for = loop_annotator(scop, deps)
    result = build.set_before_each_for(before_each_for)
    build = result[0] if isinstance(result, tuple) else result
    result = build.set_at_each_domain(at_each_domain)
    build = result[0] if isinstance(result, tuple) else result
    ast = build.node_from_schedule(schedule)
    del before_each_for  # the callback lives until the AST is built
    return from_isl(ast, loops=True, marks=marks)


def at_each_domain(node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
    """Annotates a statement instance with its iterator map, as PPCG does: ``{ [loops] ->
    S[i] }``, the loops named as the AST names their iterators (None where isl cannot give
    it as a function of them)."""
    try:
        iterators = _iterator_map(build)
    except isl.Error:  # an exception must not leave the callback (isl aborts)
        iterators = None
    return node.set_annotation(isl.Id("instance", user=iterators))


def _iterator_map(build: isl.AstBuild) -> isl.PwMultiAff | None:
    inst = _loops_to_instances(build)
    return None if inst is None else isl.PwMultiAff.from_map(inst)


def _loops_to_instances(build: isl.AstBuild) -> isl.Map | None:
    """``{ [loops] -> S[i] }``: the one statement's instances at ``build``'s position, the
    loops around named as the build prints them (None for several statements)."""
    maps: list[isl.Map] = []
    build.get_schedule().reverse().foreach_map(maps.append)
    space = build.get_schedule_space()
    outer = space.dim(isl.dim_type.set)
    if len(maps) != 1:
        return None
    inst = maps[0].flatten_domain()
    if inst.dim(isl.dim_type.in_) != outer:
        return None
    for d in range(outer):
        inst = inst.set_dim_id(isl.dim_type.in_, d, space.get_dim_id(isl.dim_type.set, d))
    return inst


def _flat_schedule(build: isl.AstBuild) -> isl.UnionMap:
    """``{ S[i] -> [c0, ..., cd] }``: the loops around the build's position, outer first."""
    nested = build.get_schedule()
    sched = isl.UnionMap.empty(nested.get_space())
    maps: list[isl.Map] = []
    nested.foreach_map(maps.append)
    for m in maps:
        sched = sched.union(isl.UnionMap.from_map(m.flatten_range()))
    return sched


@dataclass(frozen=True)
class PackBox:
    """A pack mark's annotation, one per packed array: the largest size the footprint's box
    takes in each dimension, and its sizes and offsets as isl AST expressions of the
    enclosing loop iterators and syms (a partial tile's box is smaller than a full one's)."""

    array: str
    bounds: tuple[int, ...]
    sizes: tuple[isl.AstExpr, ...]
    offsets: tuple[isl.AstExpr, ...]


def _footprint_box(reads: isl.UnionMap, array: str, build: isl.AstBuild,
                   inside: isl.Set) -> PackBox | None:
    """The box ``array`` is read in (``reads``: the Scop's read accesses) by one execution
    of the code at ``build``'s position, given the enclosing loops (their values as the
    build prints them), when its sizes are bounded. Only elements ``inside`` the array
    count: a load under `a if c else b` stands for elements outside it too (the condition
    guards it: matmul's ``B[k - 1, j] if k >= 1``), and an empty input is a null pointer;
    where the box holds no element inside, its sizes are 0."""
    sched = build.get_schedule()  # { S[i] -> the build's schedule space (nested) }
    maps: list[isl.Map] = []
    reads.intersect_domain(sched.domain()).foreach_map(maps.append)
    acc = isl.UnionMap.empty(sched.get_space())
    for m in maps:
        if m.get_tuple_name(isl.dim_type.out) == array:
            acc = acc.union(isl.UnionMap.from_map(m))
    footprints: list[isl.Map] = []
    sched.reverse().apply_range(acc).foreach_map(footprints.append)
    if len(footprints) != 1:
        return None
    fp = footprints[0]  # { [outer loops] -> array[...] }
    clipped = not fp.range().is_subset(inside.align_params(fp.get_space()))
    if clipped:  # (else as it is: unguarded loads are in bounds, scop/checks.py)
        fp = fp.intersect_range(inside.align_params(fp.get_space()))
        if fp.is_empty():
            return None
    # { [outer loops] -> 0 }: the sizes and offsets where a clipped box is empty
    zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(fp.domain().get_space()))
    bounds, sizes, offsets = [], [], []
    for d in range(fp.dim(isl.dim_type.out)):
        lo, hi = fp.dim_min(d), fp.dim_max(d)
        size = hi.sub(lo).add_constant_val(isl.Val.one(lo.get_ctx()))
        top = size.max_val()
        if not top.is_int():  # unbounded
            return None
        if clipped:
            lo, size = lo.union_add(zero), size.union_add(zero)
        bounds.append(top.to_python())
        sizes.append(build.expr_from_pw_aff(size))
        offsets.append(build.expr_from_pw_aff(lo))
    return PackBox(array, tuple(bounds), tuple(sizes), tuple(offsets))


@dataclass(frozen=True)
class InstanceBox:
    """A register tile's annotation (its promote mark): the box of the one statement's
    instances under the mark, when those instances form exactly that box. Per statement
    iterator: its smallest value and its extent (isl AST expressions of the enclosing loops
    and syms) and its largest extent (None if unbounded); ``where`` holds where the box is
    not empty. For the vector iterator (the target's last subscript, ``vector``), ``room``
    is how far down it can move (``_room_below``, asked of ``below`` on first use: only a
    partial vector needs it), if it can. The expressions hold wherever
    the code at the mark runs: they are printed knowing only the region, not the build's
    domain, whose gist they would otherwise get (isl's guards around the mark may be weaker
    than that domain, leaving it to empty inner loops to run nothing)."""

    where: isl.AstExpr
    lo: tuple[isl.AstExpr, ...]
    size: tuple[isl.AstExpr, ...]
    top: tuple[int | None, ...]
    vector: int | None = None
    below: Callable[[], isl.AstExpr | None] | None = field(default=None, compare=False,
                                                            repr=False)

    @cached_property
    def room(self) -> isl.AstExpr | None:
        if self.below is None:
            return None
        try:
            return self.below()
        except isl.Error:
            return None


class LazyBox:
    """A promote mark's annotation: the instances under the mark (``cells``, the loops around
    as parameters), and their ``InstanceBox`` computed on first use: only partial register
    tiles ask for it, and most tiles of a tiled variant are full."""

    def __init__(self, cells: isl.Set, region: isl.Set, scop: Scop):
        self.cells, self.region, self.scop = cells, region, scop
        self._box: InstanceBox | None = None
        self._done = False

    @property
    def value(self) -> InstanceBox | None:
        if not self._done:
            try:
                self._box = _instance_box(self.cells, self.region, self.scop)
            except isl.Error:
                self._box = None
            self._done = True
        return self._box


def _instance_cells(build: isl.AstBuild) -> isl.Set | None:
    """``{ S[i] }``: the one statement's instances at ``build``'s position, the loops around
    as parameters named as the build prints them (None for several statements)."""
    inst = _loops_to_instances(build)
    if inst is None:
        return None
    outer = inst.dim(isl.dim_type.in_)
    names = [inst.get_dim_name(isl.dim_type.in_, d) for d in range(outer)]
    first = inst.dim(isl.dim_type.param)
    inst = inst.move_dims(isl.dim_type.param, first, isl.dim_type.in_, 0, outer)
    for d, name in enumerate(names):
        inst = inst.set_dim_name(isl.dim_type.param, first + d, name)
    return inst.range()


def _instance_box(cells: isl.Set, region: isl.Set, scop: Scop) -> InstanceBox | None:
    printer = isl.AstBuild.from_context(region.align_params(cells.get_space()))
    one = isl.Val.one(cells.get_ctx())
    dims = cells.dim(isl.dim_type.set)
    box = isl.Set.universe(cells.get_space())
    los, sizes, tops = [], [], []
    bounds: list[tuple[isl.Set, isl.Set]] = []
    for d in range(dims):
        lo, hi = cells.dim_min(d), cells.dim_max(d)
        size = hi.sub(lo).add_constant_val(one)
        top = size.max_val()  # unbounded (a reduction over a sym): "" below
        var = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(cells.get_space()),
                                      isl.dim_type.set, d)
        lo_on, hi_on = (x.add_dims(isl.dim_type.in_, dims)
                        .set_tuple_id(isl.dim_type.in_, cells.get_tuple_id())
                        for x in (lo, hi))
        bounds.append((lo_on.le_set(var), var.le_set(hi_on)))
        box = box.intersect(bounds[-1][0]).intersect(bounds[-1][1])
        los.append(printer.expr_from_pw_aff(lo))
        sizes.append(printer.expr_from_pw_aff(size))
        tops.append(top.to_python() if top.is_int() else None)
    if not box.is_subset(cells):
        return None
    vec = _vector_iterator(scop, cells.get_tuple_name())
    below = None if vec is None else \
        (lambda: _room_below(scop, cells, bounds, vec, region, printer))
    return InstanceBox(printer.expr_from_set(cells.params()), tuple(los), tuple(sizes),
                       tuple(tops), vec, below)


def _vector_iterator(scop: Scop, name: str) -> int | None:
    """The position of the iterator in a statement's last target subscript, if single."""
    stmt = scop.statement(name)
    index = getattr(stmt.target, "index", ())
    if not index or len(index[-1].vars()) != 1:
        return None
    (var,) = index[-1].vars()
    return stmt.iters.index(var) if var in stmt.iters else None


def _room_below(scop: Scop, cells: isl.Set, bounds: list[tuple[isl.Set, isl.Set]], d: int,
                region: isl.Set, printer: isl.AstBuild) -> isl.AstExpr | None:
    """How far the box's iterator ``d`` can move down inside the statement's domain, the
    other iterators staying in the box: the smallest value of ``d`` such that every point
    from it to the box's top is an instance (C), when that holds for a whole interval. A
    register tile whose vector is partial can then run as a full one ending at the box's
    top, over instances only (the emitter stores the box's cells alone)."""
    domains: list[isl.Set] = []
    scop.domain().foreach_set(domains.append)
    domain = next((x for x in domains if x.get_tuple_name() == cells.get_tuple_name()), None)
    if domain is None:
        return None
    domain = domain.intersect_params(region).align_params(cells.get_space())
    free = isl.Set.universe(cells.get_space()).intersect(bounds[d][1])
    for e, (low, high) in enumerate(bounds):
        if e != d:
            free = free.intersect(low).intersect(high)
    reach = domain.intersect(free)
    least = reach.dim_min(d)
    var = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(cells.get_space()),
                                  isl.dim_type.set, d)
    least_on = least.add_dims(isl.dim_type.in_, cells.dim(isl.dim_type.set)) \
        .set_tuple_id(isl.dim_type.in_, cells.get_tuple_id())
    if not free.intersect(least_on.le_set(var)).is_subset(domain):
        return None
    return printer.expr_from_pw_aff(least)


def atomic_where_strides_differ(schedule: isl.Schedule) -> isl.Schedule:
    """Band members whose values step by different strides for different statements (a
    loop over even ``j`` beside a loop over every ``k``) are generated atomic: one loop with
    guards, not isl's default separation into pieces, under which isl's AST generation
    recursed until the stack overflowed on such a schedule (c_ast_stack_overflow.py).
    Bands with AST build options (isolated full tiles) keep them."""

    def strides(node: isl.ScheduleNode, member: int) -> set[int]:
        upa = node.band_get_partial_schedule().get_union_pw_aff(member)
        values = isl.UnionMap.from_union_pw_aff(upa).intersect_domain(node.get_domain())
        maps: list[isl.Map] = []
        values.foreach_map(maps.append)
        out = set()
        for m in maps:
            step = m.range().get_stride(0)
            if step.is_int() and step.to_python() != 0:  # 0: a single value
                out.add(step.to_python())
        return out

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if node.get_type() != isl.schedule_node_type.band or \
                not node.band_get_ast_build_options().is_empty():
            return node
        for member in range(node.band_n_member()):
            if len(strides(node, member)) > 1:
                node = node.band_member_set_ast_loop_type(member, isl.ast_loop_type.atomic)
        return node

    return schedule.get_root().map_descendant_bottom_up(visit).get_schedule()


def _crosses(local_flow: isl.UnionMap, sched: isl.UnionMap) -> bool:
    """Whether a value in a local scalar flows between two iterations, or two executions,
    of the loop whose flat schedule (outer loops first) is ``sched``. Such a loop keeps the
    scalar shared: a private copy (OpenMP's, or a vector lane's) starts uninitialized in
    each execution of the loop."""
    domain = sched.domain()
    flow = local_flow.intersect_domain(domain).intersect_range(domain)
    if flow.is_empty():
        return False
    times = flow.apply_domain(sched).apply_range(sched)
    maps: list[isl.Map] = []
    times.foreach_map(maps.append)
    for m in maps:
        same = isl.Map.identity(m.get_space().domain().map_from_set())
        if not m.subtract(same.align_params(m.get_space())).is_empty():
            return True
    return False


def condition_expr(region: isl.Set) -> isl.AstExpr:
    """An AST expression testing that the syms lie in ``region`` (mod conditions included)."""
    universe = isl.Set.universe(region.get_space())
    build = isl.AstBuild.from_context(universe)
    return build.expr_from_set(region)
