"""Stage 4: variant -> isl AST, built with the variant's region as the context, so conditions
the region implies vanish from the code."""

from __future__ import annotations

import islpy as isl


def build_ast(schedule: isl.Schedule, region: isl.Set) -> isl.AstNode:
    build = isl.AstBuild.from_context(region)
    return build.node_from_schedule(schedule)


def condition_expr(region: isl.Set) -> isl.AstExpr:
    """An AST expression testing that the syms lie in ``region`` (mod conditions included)."""
    universe = isl.Set.universe(region.get_space())
    build = isl.AstBuild.from_context(universe)
    return build.expr_from_set(region)
