"""Stage 4: variant -> isl AST, built with the variant's region as the context, so conditions
the region implies vanish from the code."""

from __future__ import annotations

import islpy as isl

from .schedule.reductions import loop_kind
from .schedule.tree import packed_arrays
from .scop.deps import Deps
from .scop.ir import Scop

# AST loop iterators are named pd_c0, pd_c1, ... (by schedule depth): the pd_ prefix is
# reserved, so they never shadow a user's name (isl's default c0, c1 could).
ITERATOR = "pd_c"
MAX_DEPTH = 64


def new_build(region: isl.Set) -> isl.AstBuild:
    iterators = isl.IdList.alloc(region.get_ctx(), MAX_DEPTH)
    for k in range(MAX_DEPTH):
        iterators = iterators.add(isl.Id(f"{ITERATOR}{k}"))
    return isl.AstBuild.from_context(region).set_iterators(iterators)


def build_ast(schedule: isl.Schedule, region: isl.Set, scop: Scop | None = None,
              deps: Deps | None = None) -> isl.AstNode:
    """The AST of ``schedule`` under ``region``. With the Scop and its dependences, every
    for node is annotated (as PPCG does) with what its loop carries, given the loops around
    it: ``parallel`` (nothing), ``reduce(op:scalar ...)`` (only reductions into local
    scalars) or ``sequential``."""
    build = new_build(region)
    if scop is None or deps is None:
        return build.node_from_schedule(schedule)

    local_flow = _local_flow(scop)

    def before_each_for(build: isl.AstBuild) -> isl.Id:
        sched = _flat_schedule(build)
        kind = loop_kind(scop, deps.all, sched)
        if kind == "parallel" and _crosses(local_flow, sched):
            kind = "sequential"
        return isl.Id(kind)

    def after_each_mark(node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
        arrays = packed_arrays(node.mark_get_id().get_name())
        if not arrays:
            return node
        boxes = [box for name in arrays
                 if (box := _footprint_box(scop, name, _flat_schedule(build))) is not None]
        # always annotated ("" when some box is not constant): reading a missing annotation
        # raises inside islpy, which a sanitizer-preloaded process cannot unwind
        return node.set_annotation(isl.Id(PACK_SEP.join(boxes)))

    result = build.set_before_each_for(before_each_for)
    build = result[0] if isinstance(result, tuple) else result
    result = build.set_after_each_mark(after_each_mark)
    build = result[0] if isinstance(result, tuple) else result
    ast = build.node_from_schedule(schedule)
    del before_each_for, after_each_mark  # the callbacks live until the AST is built
    return ast


def _flat_schedule(build: isl.AstBuild) -> isl.UnionMap:
    """``{ S[i] -> [c0, ..., cd] }``: the loops around the build's position, outer first."""
    nested = build.get_schedule()
    sched = isl.UnionMap.empty(nested.get_space())
    maps: list[isl.Map] = []
    nested.foreach_map(maps.append)
    for m in maps:
        sched = sched.union(isl.UnionMap.from_map(m.flatten_range()))
    return sched


# A pack mark's annotation: one "array|size,size|lo;lo" per packed array (the footprint's
# box: constant sizes, offsets as C expressions of the enclosing loop iterators and syms).
PACK_SEP = "#"


def _footprint_box(scop: Scop, array: str, sched: isl.UnionMap) -> str | None:
    """The box ``array`` is read in by one execution of the code under ``sched``'s position
    (given the enclosing loops), when its sizes are constants and its offsets affine."""
    reads: list[isl.Map] = []
    scop.accesses("read").intersect_domain(sched.domain()).foreach_map(reads.append)
    acc = isl.UnionMap.empty(sched.get_space())
    for m in reads:
        if m.get_tuple_name(isl.dim_type.out) == array:
            acc = acc.union(isl.UnionMap.from_map(m))
    maps: list[isl.Map] = []
    sched.reverse().apply_range(acc).foreach_map(maps.append)
    if len(maps) != 1:
        return None
    fp = maps[0]
    n_in = fp.dim(isl.dim_type.in_)
    for d in range(n_in):
        fp = fp.set_dim_name(isl.dim_type.in_, d, f"{ITERATOR}{d}")
    box = fp.move_dims(isl.dim_type.param, fp.dim(isl.dim_type.param), isl.dim_type.in_, 0,
                       n_in).range()
    sizes, offsets = [], []
    for d in range(box.dim(isl.dim_type.set)):
        lo, hi = box.dim_min(d), box.dim_max(d)
        size = _constant(hi.sub(lo))
        lo_c = _affine_c(lo.gist(lo.domain()))  # (c) mod 256 = 0 there: c - c mod 256 = c
        if size is None or lo_c is None:
            return None
        sizes.append(str(size + 1))
        offsets.append(lo_c)
    return f"{array}|{','.join(sizes)}|{';'.join(offsets)}"


def _pieces(pa: isl.PwAff) -> list[isl.Aff]:
    out: list[isl.Aff] = []
    pa.foreach_piece(lambda _set, aff: out.append(aff))
    return out


def _constant(pa: isl.PwAff) -> int | None:
    values = {aff.get_constant_val().to_python() for aff in _pieces(pa) if aff.is_cst()}
    if len(values) != 1 or len(_pieces(pa)) != sum(aff.is_cst() for aff in _pieces(pa)):
        return None
    (value,) = values
    return value if isinstance(value, int) else None


def _affine_c(pa: isl.PwAff) -> str | None:
    """A single-piece affine function of the parameters as C (None otherwise)."""
    pieces = _pieces(pa)
    if len(pieces) != 1 or pieces[0].dim(isl.dim_type.div):
        return None
    aff = pieces[0]
    terms = []
    for k in range(aff.dim(isl.dim_type.param)):
        c = aff.get_coefficient_val(isl.dim_type.param, k).to_python()
        if not isinstance(c, int):
            return None
        if c:
            name = aff.get_dim_name(isl.dim_type.param, k)
            terms.append(name if c == 1 else f"{c} * {name}")
    c0 = aff.get_constant_val().to_python()
    if not isinstance(c0, int):
        return None
    return " + ".join([*terms, str(c0)] if c0 or not terms else terms)


def _local_flow(scop: Scop) -> isl.UnionMap:
    """``{ S[i] -> T[j] }``: values passed through local scalars (expanded over their scope)."""
    from .scop.deps import _flow

    names = {a.name for a in scop.arrays if a.kind == "local"}
    if not names:
        return isl.UnionMap.empty(scop.context.get_space())

    def only_locals(umap: isl.UnionMap) -> isl.UnionMap:
        out = isl.UnionMap.empty(umap.get_space())
        maps: list[isl.Map] = []
        umap.foreach_map(maps.append)
        for m in maps:
            if m.get_tuple_name(isl.dim_type.out) in names:
                out = out.union(isl.UnionMap.from_map(m))
        return out

    flow, _ = _flow(only_locals(scop.accesses("read")), only_locals(scop.accesses("write")),
                    scop.original_schedule())
    return flow


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
