"""Stage 4: variant -> isl AST, built with the variant's region as the context, so conditions
the region implies vanish from the code."""

from __future__ import annotations

import islpy as isl

from .schedule.reductions import loop_kind
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
        nested = build.get_schedule()  # { S[i] -> [[[outer] -> [...]] -> [this loop]] }
        sched = isl.UnionMap.empty(nested.get_space())
        maps: list[isl.Map] = []
        nested.foreach_map(maps.append)
        for m in maps:
            sched = sched.union(isl.UnionMap.from_map(m.flatten_range()))
        kind = loop_kind(scop, deps.all, sched)
        if kind == "parallel" and _crosses(local_flow, sched):
            kind = "sequential"
        return isl.Id(kind)

    result = build.set_before_each_for(before_each_for)
    build = result[0] if isinstance(result, tuple) else result
    ast = build.node_from_schedule(schedule)
    del before_each_for  # the callback lives until the AST is built
    return ast


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
