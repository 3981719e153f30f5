"""The automatic schedule of a region: isl's scheduler under the region as context."""

from __future__ import annotations

import islpy as isl

from ..scop.deps import Deps
from ..scop.ir import Scop


def schedule_constraints(scop: Scop, deps: Deps, region: isl.Set) -> isl.ScheduleConstraints:
    """Validity = every dependence (plus local scalar live ranges); proximity = flow;
    coincidence = every dependence between expanded accesses (for parallel loops)."""
    domain = scop.domain().intersect_params(region)
    return (isl.ScheduleConstraints.on_domain(domain)
            .set_context(region)
            .set_validity(deps.validity)
            .set_proximity(deps.flow.union(deps.locals_order))
            .set_coincidence(deps.all))


def isl_schedule(scop: Scop, deps: Deps, region: isl.Set) -> isl.Schedule:
    """isl's schedule for the region; the original order if the scheduler gives up."""
    try:
        return schedule_constraints(scop, deps, region).compute_schedule()
    except isl.Error:
        return original_order(scop, region)


def original_order(scop: Scop, region: isl.Set) -> isl.Schedule:
    """The program order as a schedule tree (always legal, no parallel loops marked)."""
    domain = scop.domain().intersect_params(region)
    sched = scop.original_schedule().intersect_domain(domain)
    return isl.Schedule.from_domain(domain).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(sched))
