"""A schedule respects every dependence, or we say which one it breaks."""

from __future__ import annotations

import islpy as isl

from ..scop.deps import Deps
from .reductions import _carried


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out


def violated(schedule: isl.Schedule, deps: Deps | isl.UnionMap) -> isl.UnionMap:
    """``{ S[i] -> T[j] }``: the dependences whose sink does not run after their source
    (of ``deps.validity``, or of the given relation)."""
    validity = deps if isinstance(deps, isl.UnionMap) else deps.validity
    sched = schedule.get_map()  # { S[i] -> [t] }, one time space for the whole tree
    times = validity.apply_domain(sched).apply_range(sched)  # { [t_src] -> [t_dst] }
    wrong = isl.UnionMap.empty(times.get_space())
    for tmap in _maps(times):
        lex_ge = isl.Map.lex_ge(tmap.get_space().domain())
        wrong = wrong.union(isl.UnionMap.from_map(tmap.intersect(
            lex_ge.align_params(tmap.get_space()))))
    if wrong.is_empty():
        return isl.UnionMap.empty(validity.get_space())
    # back to instances: { S[i] -> T[j] } whose times are in the wrong order
    return validity.intersect(sched.apply_range(wrong).apply_range(sched.reverse()))


def is_legal(schedule: isl.Schedule, deps: Deps | isl.UnionMap) -> bool:
    return violated(schedule, deps).is_empty()


def describe_violation(bad: isl.UnionMap) -> str:
    """``S1 -> S0`` pairs with an example, for ScheduleError messages."""
    parts = []
    for m in _maps(bad):
        src = m.get_tuple_name(isl.dim_type.in_)
        dst = m.get_tuple_name(isl.dim_type.out)
        parts.append(f"{src} -> {dst} ({m.coalesce()})")
    return "; ".join(parts)


def member_carries(node: isl.ScheduleNode, k: int, deps: Deps) -> bool:
    """Whether member ``k`` of the band ``node`` carries a dependence, given the loops
    around it (the members before it, the bands above)."""
    domain = node.get_domain()
    prefix = node.get_prefix_schedule_union_map().intersect_domain(domain)
    band = node.band_get_partial_schedule_union_map().intersect_domain(domain)
    member = isl.UnionMap.empty(band.get_space())
    maps: list[isl.Map] = []
    band.foreach_map(maps.append)
    for m in maps:
        n = m.dim(isl.dim_type.out)
        m = m.project_out(isl.dim_type.out, k + 1, n - k - 1)
        member = member.union(isl.UnionMap.from_map(m))
    sched = prefix.flat_range_product(member)
    inside = deps.all.intersect_domain(domain).intersect_range(domain)
    return _carried(inside, sched)
