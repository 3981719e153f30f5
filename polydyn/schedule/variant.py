"""One variant's schedule: the base schedule restricted to the region, transformed by its
recipe (the automatic policy's choice, or a user Schedule), then marked for the emitters."""

from __future__ import annotations

from dataclasses import replace

import islpy as isl

from ..errors import ScheduleError
from ..parametric.plans import AutoRecipe, VariantPlan
from ..parametric.variants import Variant
from ..scop.deps import Deps
from ..scop.ir import Scop
from ..target import AVX512, CpuTarget
from .inits import fuse_inits
from .legality import describe_violation, member_carries, violated
from .point_bands import apply_tiling, order_for_vectors
from .transforms import drop_parallel, reorder_band
from .tree import is_band, mark_loops, node_at
from .wavefront import wavefront_tile


def code_region(region: isl.Set) -> isl.Set:
    """What a variant's code may assume: its region, or the region's convex hull when the
    region is a union (the dispatcher runs it only inside the region, so anything the hull
    implies holds; isl would otherwise test the union's disjuncts inside the loops)."""
    if region.n_basic_set() <= 1:
        return region
    return isl.Set.from_basic_set(region.simple_hull())


def order_bands(schedule: isl.Schedule, orders: tuple[tuple[tuple[int, ...], tuple[int, ...]],
                                                      ...], deps: Deps) -> isl.Schedule:
    """``schedule`` with the members of the band at each path in the given order (a recipe's
    ``order_band``); a ScheduleError where there is no such band or the order breaks a
    dependence. A permutable band's members keep their parallel flags; in another band,
    each member is parallel where it carries no dependence in its new place."""
    for path, order in orders:
        try:
            node = node_at(schedule, path)
        except isl.Error:
            node = None
        if node is None or not is_band(node) or node.band_n_member() != len(order):
            raise ScheduleError(f"order_band{(path, order)}: no band of {len(order)} members "
                                f"at {path} in isl's schedule")
        node = reorder_band(node, list(order))
        if not node.band_get_permutable():
            bad = violated(node.get_schedule(), deps)
            if not bad.is_empty():
                raise ScheduleError(f"order_band{(path, order)} breaks the dependence "
                                    f"{describe_violation(bad)}")
            for k in range(len(order)):
                node = node.band_member_set_coincident(
                    k, int(not member_carries(node, k, deps)))
        schedule = node.get_schedule()
    return schedule


def schedule_variant(scop: Scop, deps: Deps, base: isl.Schedule, plan: VariantPlan,
                     target: CpuTarget = AVX512, buffered: bool = False,
                     repacked: bool = False) -> Variant:
    """The variant of ``plan``; its ``recipe`` is the Schedule that replays it (the policy's
    choice as a policy recipe; ``buffered``: the operator was double-buffered; ``repacked``:
    rewritten for repacked register tiles, ``pipeline._sides``)."""
    schedule = base.intersect_domain(scop.domain().intersect_params(code_region(plan.region)))
    recipe = plan.recipe if plan.recipe is not None else AutoRecipe()
    if isinstance(recipe, AutoRecipe):
        schedule = order_bands(schedule, recipe.orders, deps)
        if recipe.wave is not None and recipe.tile:
            raise ScheduleError("wavefront and tile_band both tile the band: give one")
        waved = None if recipe.wave is None else \
            wavefront_tile(scop, deps, recipe.wave, code_region(plan.region))
        if recipe.wave is not None and waved is None:  # (ruled out) the untiled code then
            recipe = replace(recipe, wave=None)
        if waved is not None:
            schedule = waved
        elif recipe.tile:
            schedule = apply_tiling(schedule, list(recipe.tile), scop, isolate=recipe.isolate,
                                    deps=deps, pack_tiles=recipe.pack, target=target)
        else:
            schedule = order_for_vectors(schedule, scop, deps, recipe.registers, target)
        fused: list[str] = []
        if waved is None and recipe.fuse_inits:
            schedule, fused = fuse_inits(schedule, scop, deps)
        if not recipe.parallel:
            schedule = drop_parallel(schedule)
        summary = recipe.describe()
        data = recipe.to_schedule(plan.name, buffered, repacked)
        if fused:
            summary += "; " + ", ".join(fused)
    else:
        from .directives import apply_recipe

        marked = apply_recipe(scop, deps, plan.region, recipe)
        return Variant(plan.name, plan.region, marked, recipe, recipe.describe())
    return Variant(plan.name, plan.region, mark_loops(schedule), data, summary)
