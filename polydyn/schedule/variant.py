"""One variant's schedule: the base schedule restricted to the region, transformed by its
recipe (the automatic policy's choice, or a user Schedule), then marked for the emitters."""

from __future__ import annotations

from dataclasses import replace

import islpy as isl

from ..errors import ScheduleError
from ..parametric.regions import AutoRecipe, VariantPlan
from ..parametric.variants import Variant
from ..scop.deps import Deps
from ..scop.ir import Scop
from ..target import AVX512, CpuTarget
from .inits import fuse_inits
from .point_bands import apply_tiling, order_for_vectors
from .transforms import drop_parallel
from .tree import mark_loops
from .wavefront import wavefront_tile


def code_region(region: isl.Set) -> isl.Set:
    """What a variant's code may assume: its region, or the region's convex hull when the
    region is a union (the dispatcher runs it only inside the region, so anything the hull
    implies holds; isl would otherwise test the union's disjuncts inside the loops)."""
    if region.n_basic_set() <= 1:
        return region
    return isl.Set.from_basic_set(region.simple_hull())


def schedule_variant(scop: Scop, deps: Deps, base: isl.Schedule, plan: VariantPlan,
                     target: CpuTarget = AVX512, buffered: bool = False,
                     repacked: bool = False) -> Variant:
    """The variant of ``plan``; its ``recipe`` is the Schedule that replays it (the policy's
    choice as a policy recipe; ``buffered``: the operator was double-buffered; ``repacked``:
    rewritten for repacked register tiles, ``pipeline._sides``)."""
    schedule = base.intersect_domain(scop.domain().intersect_params(code_region(plan.region)))
    recipe = plan.recipe if plan.recipe is not None else AutoRecipe()
    if isinstance(recipe, AutoRecipe):
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
