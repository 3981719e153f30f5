"""Regions: isl sets over the syms; the partition policy and the coverage proof."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..errors import CompileError
from ..scop.deps import Deps
from ..scop.ir import Scop


@dataclass(frozen=True)
class VariantPlan:
    """What to build for one region: a name, the region, and the schedule recipe (or None for
    the automatic schedule)."""

    name: str
    region: Any  # isl.Set over the syms
    recipe: Any = None


def parse_region(scop: Scop, text: str) -> isl.Set:
    """A user region as isl constraint text over the syms (``"N >= 256 and N mod 32 = 0"``)."""
    try:
        region = isl.Set(f"{scop.param_space_text()} -> {{ : {text} }}")
    except isl.Error:
        raise CompileError(f"cannot parse region {text!r} as isl constraints over the syms "
                           f"({', '.join(scop.syms)})") from None
    return region.intersect(scop.context).coalesce()


def check_cover(scop: Scop, regions: list[isl.Set]) -> None:
    """The union of the regions must contain the context; else CompileError with a point."""
    union = isl.Set.empty(scop.context.get_space())
    for r in regions:
        union = union.union(r)
    hole = scop.context.subtract(union)
    if not hole.is_empty():
        point = hole.sample_point()
        coords = ", ".join(
            f"{s}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}"
            for k, s in enumerate(scop.syms))
        raise CompileError(f"the variants of {scop.name} do not cover its context: no region "
                           f"contains {coords} (uncovered: {hole.coalesce()})")


def plan_variants(scop: Scop, deps: Deps, variants: list[tuple[str, Any]] | None
                  ) -> list[VariantPlan]:
    """The ordered variant list; a generic variant over the whole context closes the cover."""
    plans: list[VariantPlan] = []
    for k, (text, recipe) in enumerate(variants or []):
        plans.append(VariantPlan(f"user{k}", parse_region(scop, text), recipe))
    if not plans:
        plans.append(VariantPlan("generic", scop.context, None))
    check_cover(scop, [p.region for p in plans])
    return plans
