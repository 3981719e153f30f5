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

    def before_each_for(build: isl.AstBuild) -> isl.Id:
        nested = build.get_schedule()  # { S[i] -> [[[outer] -> [...]] -> [this loop]] }
        sched = isl.UnionMap.empty(nested.get_space())
        maps: list[isl.Map] = []
        nested.foreach_map(maps.append)
        for m in maps:
            sched = sched.union(isl.UnionMap.from_map(m.flatten_range()))
        return isl.Id(loop_kind(scop, deps.all, sched))

    result = build.set_before_each_for(before_each_for)
    build = result[0] if isinstance(result, tuple) else result
    ast = build.node_from_schedule(schedule)
    del before_each_for  # the callback lives until the AST is built
    return ast


def condition_expr(region: isl.Set) -> isl.AstExpr:
    """An AST expression testing that the syms lie in ``region`` (mod conditions included)."""
    universe = isl.Set.universe(region.get_space())
    build = isl.AstBuild.from_context(universe)
    return build.expr_from_set(region)
