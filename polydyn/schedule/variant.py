"""One variant's schedule: the automatic schedule or a recipe, then loop marks."""

from __future__ import annotations

from ..parametric.regions import VariantPlan
from ..parametric.variants import Variant
from ..scop.deps import Deps
from ..scop.ir import Scop
from .auto import isl_schedule
from .tree import band_members, mark_loops


def summarize(schedule) -> str:
    bands = band_members(schedule)
    if not bands:
        return "no loops"
    parts = []
    for _depth, flags, _perm in bands:
        parts.append("".join("p" if f else "s" for f in flags))
    return "isl schedule; bands (p parallel, s sequential): " + " ".join(parts)


def schedule_variant(scop: Scop, deps: Deps, plan: VariantPlan) -> Variant:
    schedule = isl_schedule(scop, deps, plan.region)
    summary = summarize(schedule)
    return Variant(plan.name, plan.region, mark_loops(schedule), (), summary)
