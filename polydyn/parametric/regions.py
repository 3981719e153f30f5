"""Regions: isl sets over the syms; the partition policy and the coverage proof."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import islpy as isl

from ..errors import CompileError
from ..schedule.auto import channels_region, lone_band, narrow_tiers, tiling_plan
from ..schedule.bands import BandTiling, at_least, member_extents, member_starts
from ..schedule.point_bands import packed_members, register_rows
from ..schedule.recipe import Schedule
from ..schedule.transforms import outermost_bands, reorder_band
from ..schedule.transposes import transpose_pair
from ..schedule.tree import node_at
from ..schedule.wavefront import WaveTiling, wavefront_region
from ..scop.ir import Scop
from ..scop.names import rename_assume
from ..target import AVX512, CpuTarget
from .plans import AutoRecipe, VariantPlan


def parse_region(scop: Scop, region: str | isl.Set) -> isl.Set:
    """A user region: isl constraint text over the syms as the user names them (``"N >= 256
    and N mod 32 = 0"``), or an isl set over the syms (a variant's ``region``)."""
    if isinstance(region, isl.Set):
        if sorted(region.get_var_names(isl.dim_type.param)) != sorted(scop.syms) or \
                region.dim(isl.dim_type.set) != 0:
            raise CompileError(f"region {region} is not a set over the syms of {scop.name} "
                               f"({', '.join(scop.syms)})")
        return region.align_params(scop.context.get_space()).intersect(scop.context).coalesce()
    text = rename_assume(region, {user: here for here, user in scop.user_names})
    try:
        parsed = isl.Set(f"{scop.param_space_text()} -> {{ : {text} }}")
    except isl.Error:
        raise CompileError(f"cannot parse region {region!r} as isl constraints over the syms "
                           f"({', '.join(scop.user_name(s) for s in scop.syms)})") from None
    return parsed.intersect(scop.context).coalesce()


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


def _nonempty(region: isl.Set) -> bool:
    return not region.is_empty()


def degenerate_regions(scop: Scop, base: isl.Schedule) -> list[VariantPlan]:
    """``S = 1`` for each sym that makes a parallel outermost loop a single iteration (matmul
    with N = 1 is a row vector times a matrix): such sizes get code without that loop."""
    plans = []
    for sym in scop.syms:
        region = scop.context.intersect(
            isl.Set(f"{scop.param_space_text()} -> {{ : {sym} = 1 }}"))
        if not _nonempty(region) or region.is_equal(scop.context):
            continue
        if _collapses_parallel_loop(base, region):
            plans.append(VariantPlan(f"{scop.user_name(sym)}=1", region.coalesce(),
                                     AutoRecipe()))
    return plans


def _collapses_parallel_loop(base: isl.Schedule, region: isl.Set) -> bool:
    for node in outermost_bands(base):
        if not node.band_member_get_coincident(0):
            continue
        band = node.band_get_partial_schedule_union_map().intersect_domain(node.get_domain())
        if band.range().is_empty():  # no statement of this band ever runs
            continue
        image = isl.Set.from_union_set(band.range()).intersect_params(region)
        if image.is_empty():
            continue
        width = image.dim_max(0).sub(image.dim_min(0))
        if width.intersect_params(region).is_cst() or \
                width.zero_set().intersect(region).is_equal(region):
            return True
    return False


def partition(scop: Scop, base: isl.Schedule, max_tile: int | None = None,
              cpu: bool = True, wave: WaveTiling | None = None, target: CpuTarget = AVX512
              ) -> list[VariantPlan]:
    """The automatic partition of the context for ``target``, most specific first:

    - ``channels`` (with ``cpu``): for a deep band (conv) whose rows' member (output
      channels) fills a register vector and whose reduction (input channels) is at least
      ``CHANNELS_MIN_REDUCTION`` long: untiled code with transposed register tiles
      (``CpuTarget.channels``);
    - ``vectorW`` (with ``cpu``): of the rest, for a deep band, where its vector
      loop is too short for the widest register tile but long enough for a narrower one of
      W bytes (``CpuTarget.narrow``): untiled code with register tiles of that
      shape (small images: their working set fits the caches);
    - ``wavefront`` (with ``cpu`` and a time-iterated stencil's ``wave``): where the time
      loop holds enough time tiles for two threads, isl's fused band tiled in wavefronts
      (``schedule.wavefront``);
    - ``S=1``: degenerate sizes that remove a parallel loop (no tiling), but for a batch
      around a packed band not those whose columns or reduction pass
      ``BATCH_ONE_UNTILED_MAX`` (the tiled variants serve them);
    - ``skinny`` (with ``cpu``): of the sizes ``tiled`` covers, those where a packed
      band has one row tile and two column tiles or more: tiled, B not packed
      (``SKINNY_ROW_TILES``);
    - ``full``: every tiled loop at least one tile long and a multiple of its tile size,
      starting at 0: no partial tiles, so no min/max in any bound;
    - ``tiled``: every tiled loop at least one tile long (full tiles isolated), or as long
      as its ``min_extents`` (a packed band's vector loop: three register vectors); with
      ``cpu``, not a product of a few row tiles over short operands (``_untiled_pays``);
    - ``vectorW`` (with ``cpu``): of the sizes ``small`` covers, those where a packed
      band's (matmul's) vector loop is shorter than the widest register tile: untiled, with
      narrower register tiles (``CpuTarget.narrow_rows``);
    - ``small``: some tiled loop shorter than that: plain loops, or for a deep band (conv,
      with ``cpu``) the untiled band's register tiles, each over the whole reduction
      (conv with fewer than 64 input channels or 112 output channels; docs/design.md,
      point 5);
    - ``generic``: the whole context, tiled (closes the cover; also what a forced-generic
      benchmark runs). Where the plans before it cover the context (matmul, conv on CPUs),
      the dispatcher never picks it: its partial tiles then stay in the loops, behind
      guards, rather than full tiles being isolated (a smaller, faster-built unit).

    With ``cpu``, a product with two row members gets these (but ``generic``) twice, each
    where its rows' member is the longer one (``_rows_exchange``).
    """
    plan = tuple(tiling_plan(base, scop, max_tile, target))
    plans = _plans(scop, base, plan, max_tile, cpu, wave, target)
    exchange = _rows_exchange(scop, base, plan, max_tile, target) if cpu else None
    if exchange is not None:  # the longer of two row members gives the rows
        orders, other, other_plan, longer, rows = exchange
        mine = [replace(p, region=p.region.subtract(longer).coalesce()) for p in plans]
        taken = {p.name for p in mine}  # (an S=1 name keeps its sym unless mine has it)
        theirs = [VariantPlan(p.name if "=" in p.name and p.name not in taken else
                              f"{p.name}:{rows}", p.region.intersect(longer).coalesce(),
                              replace(p.recipe, orders=orders))
                  for p in _plans(scop, other, other_plan, max_tile, cpu, None, target)]
        plans = [p for p in theirs + mine if _nonempty(p.region)]
    plans = _live(plans)
    # the fallback the live plans already cover runs only when forced (run_variant, the
    # benchmarks' baseline): tiled with guards, no full tiles isolated, which halves its AST
    # build and cuts its C to a quarter (a cold compile's largest unit; bench/RESULTS.md)
    ctx = scop.context
    covered = cpu and bool(plans) and not _nonempty(ctx.subtract(_union(plans)))
    plans.append(VariantPlan("generic", ctx, AutoRecipe(plan, isolate=not covered)))
    return plans


def _plans(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...], max_tile: int | None,
           cpu: bool, wave: WaveTiling | None, target: CpuTarget) -> list[VariantPlan]:
    """``partition``'s variants for ``base`` tiled by ``plan``, but the generic one."""
    ctx = scop.context
    plans: list[VariantPlan] = []
    rest = ctx  # what the variants so far leave
    main = lone_band(base, scop, plan)
    channels = channels_region(base, scop, main, target) if cpu and main is not None else None
    if channels is not None and _nonempty(channels.intersect(ctx)):
        plans.append(VariantPlan("channels", channels.intersect(ctx).coalesce(),
                                 AutoRecipe(registers=target.channels)))
        rest = ctx.subtract(channels).coalesce()
    if cpu:
        plans += _narrow_plans(scop, base, plan, target, deep=True, within=rest)
    if cpu and wave is not None:
        region = wavefront_region(scop, wave).coalesce()
        if _nonempty(region):
            plans.append(VariantPlan("wavefront", region, AutoRecipe(wave=wave)))
    big, divisible = _tiled_extents(base, plan, ctx)
    plans += _degenerate_plans(scop, base, plan, big, cpu)
    # (on CPUs, not under the tests' small tiles; whole tiles alone, ``full``, still win)
    big = big.subtract(_untiled_pays(scop, base, plan, big, cpu and max_tile is None)
                       .subtract(divisible)).coalesce()
    if plan:
        full = big.intersect(divisible).coalesce()
        small = ctx.subtract(big).coalesce()
        skinny = _skinny(scop, base, plan, big) if cpu else None
        if skinny is not None and _nonempty(skinny):
            plans.append(VariantPlan("skinny", skinny, AutoRecipe(plan, pack=False)))
            big = big.subtract(skinny).coalesce()
            full = full.subtract(skinny).coalesce()
        if _nonempty(full) and not full.is_equal(big):
            plans.append(VariantPlan("full", full, AutoRecipe(plan, isolate=False)))
        if _nonempty(big):
            plans.append(VariantPlan("tiled", big, AutoRecipe(plan)))
        deep = any(t.deep for t in plan)
        if _nonempty(small) and (cpu or not deep):
            if cpu and not deep:
                plans += _narrow_plans(scop, base, plan, target, deep=False, within=small)
            plans.append(VariantPlan("small", small, AutoRecipe()))
    return plans


def _rows_exchange(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...],
                   max_tile: int | None, target: CpuTarget
                   ) -> tuple[tuple[tuple[tuple[int, ...], tuple[int, ...]], ...],
                              isl.Schedule, tuple[BandTiling, ...], isl.Set, str] | None:
    """For a planned band with register tiles around which an untiled batch member could
    give the rows in place of the rows' member (two row loops, as in ``Y[n, b, :] = X[n, b,
    :] @ W``, W packed or repacked): the two members' exchange (``AutoRecipe.orders``), the
    schedule and plan with them exchanged, the sizes where the batch member is the longer of
    the two, and its extent's name (the sym, as the user names it, that the extent is). The
    policy tiles the longer one: 8 batches of 128 rows then run 128-row tiles, not one 8-row
    tile."""
    for tiling in plan:
        node = node_at(base, tiling.path)
        row = register_rows(node, scop)
        if row is None:
            continue
        extents = member_extents(base, tiling)
        for b in reversed(range(len(tiling.sizes))):
            if b == row or tiling.sizes[b] != 1 or not node.band_member_get_coincident(b):
                continue
            longer = at_least(extents[b].sub(extents[row]), 1).intersect(scop.context)
            if not _nonempty(longer):
                continue
            order = list(range(len(tiling.sizes)))
            order[b], order[row] = row, b
            exchanged = reorder_band(node, order)
            if register_rows(exchanged, scop) != row:
                continue  # the batch moves what the rows' vectors read (batched matmul's B)
            other = exchanged.get_schedule()
            other_plan = tuple(tiling_plan(other, scop, max_tile, target))
            if any(t.path == tiling.path for t in other_plan):
                return ((tiling.path, tuple(order)),), other, other_plan, longer.coalesce(), \
                    _extent_name(scop, extents[b], f"member{b}")
    return None


def _extent_name(scop: Scop, extent: isl.PwAff, default: str) -> str:
    """The sym (as the user names it) that ``extent`` equals over the context, else
    ``default``."""
    ctx = scop.context
    for k, sym in enumerate(scop.syms):
        param = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(ctx.get_space()),
                                        isl.dim_type.param, k)
        if extent.eq_set(param).intersect(ctx).is_equal(ctx):
            return scop.user_name(sym)
    return default


def _degenerate_plans(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...],
                      big: isl.Set, cpu: bool) -> list[VariantPlan]:
    """``degenerate_regions``; on CPUs less the sizes that ``_tiled_at_one_batch`` leaves
    to the tiled variants (``big``: theirs)."""
    out = []
    for p in degenerate_regions(scop, base):
        if cpu:
            p = replace(p, region=p.region.subtract(
                _tiled_at_one_batch(scop, base, plan, p.region, big)).coalesce())
        if _nonempty(p.region):
            out.append(p)
    return out


def _tiled_extents(base: isl.Schedule, plan: tuple[BandTiling, ...], ctx: isl.Set
                   ) -> tuple[isl.Set, isl.Set]:
    """The sizes where every tiled loop is at least one tile long (or as long as its
    ``min_extents``), and those where each is a multiple of its tile starting at 0."""
    big, divisible = ctx, ctx
    for tiling in plan:
        extents = member_extents(base, tiling)
        starts = member_starts(base, tiling)
        least = tiling.min_extents or tiling.sizes
        for ext, start, size, low in zip(extents, starts, tiling.sizes, least, strict=True):
            big = big.intersect(at_least(ext, low))
            divisible = divisible.intersect(ext.mod_val(
                isl.Val.int_from_si(ext.get_ctx(), size)).zero_set())
            divisible = divisible.intersect(start.zero_set())
    return big.coalesce(), divisible


# The untiled code at one batch of a product around packed tiles wins while the columns and
# the reduction are short (the rows' panel stays in the L2 across the column vectors); past
# this extent of either, the tiled variants do (bench/HISTORY.md, point 6).
BATCH_ONE_UNTILED_MAX = 1024


def _tiled_at_one_batch(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...],
                        region: isl.Set, big: isl.Set) -> isl.Set:
    """The part of ``region`` (an ``S=1`` region) that the tiled variants serve: where it
    makes an untiled member of a packed band (a batch around matmul's tiles) a single
    iteration, the sizes of ``big`` whose columns or reduction pass
    ``BATCH_ONE_UNTILED_MAX``. There the tiled code's batch loop, a team region, shares
    out the row tiles, and its cache tiles keep the operands in the L2 where the untiled
    code reads the rows again for every column vector. Where it makes a batch around a
    transposing copy a single iteration, all of ``big``: the copy still transposes (its
    tiles, ``schedule/transposes.py``). Empty otherwise."""
    out = isl.Set.empty(region.get_space())
    for tiling in plan:
        pair = transpose_pair(node_at(base, tiling.path), scop)
        if pair is not None:
            extents = member_extents(base, tiling)
            if not all(_nonempty(region.intersect(at_least(extents[k], 2)))
                       for k in range(len(extents)) if k not in pair):
                out = out.union(region.intersect(big))
            continue
        roles = _product_roles(scop, base, tiling)
        if roles is None:
            continue
        _, batch, others = roles
        extents = member_extents(base, tiling)
        if all(_nonempty(region.intersect(at_least(extents[k], 2))) for k in batch):
            continue  # no batch member is a single iteration here
        for k in others:
            out = out.union(region.intersect(big).intersect(
                at_least(extents[k], BATCH_ONE_UNTILED_MAX + 1)))
    return out.coalesce()


def _product_roles(scop: Scop, base: isl.Schedule, tiling: BandTiling
                   ) -> tuple[int, list[int], list[int]] | None:
    """For a packed band (matmul's): its rows' member, its batch members (untiled and not
    packed) and its other tiled members (the columns' and the reduction's); None for a band
    that packs nothing."""
    members = packed_members(base, scop, tiling)
    if members is None:
        return None
    row = members[0]
    batch = [k for k, size in enumerate(tiling.sizes) if size == 1 and k not in members]
    others = [k for k, size in enumerate(tiling.sizes) if size > 1 and k != row]
    return row, batch, others


def _union(plans: list[VariantPlan]) -> isl.Set:
    union = plans[0].region
    for p in plans[1:]:
        union = union.union(p.region)
    return union


def _live(plans: list[VariantPlan]) -> list[VariantPlan]:
    """The plans that the dispatcher (first match runs) can pick: one whose region lies
    within those before it never runs, and is not compiled (conv's ``full`` and ``tiled``
    inside ``channels`` on CPUs)."""
    live: list[VariantPlan] = []
    covered = None  # the union of the live plans' regions
    for p in plans:
        if covered is None or _nonempty(p.region.subtract(covered)):
            live.append(p)
            covered = p.region if covered is None else covered.union(p.region)
    return live


# Row tiles of a packed band up to which it runs unpacked (``skinny``): with one row tile
# (48 rows), B's tile is read by so few register tiles that copying it costs more than the
# power-of-two strides it avoids, and one team region shares out its column tiles rather
# than forking per packed tile; from two row tiles packing wins (bench/HISTORY.md, point
# 5b).
SKINNY_ROW_TILES = 1


def _skinny(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...], big: isl.Set
            ) -> isl.Set:
    """Within ``big``: where a packed band has at most ``SKINNY_ROW_TILES`` row tiles and at
    least two column tiles (a tile for each thread of two)."""
    out = isl.Set.empty(big.get_space())
    for tiling in plan:
        members = packed_members(base, scop, tiling)
        if members is None:
            continue
        row, vec = members
        extents = member_extents(base, tiling)
        few_rows = big.subtract(at_least(extents[row], SKINNY_ROW_TILES * tiling.sizes[row] + 1))
        out = out.union(few_rows.intersect(at_least(extents[vec], tiling.sizes[vec] + 1)))
    return out.coalesce()


# A product (no batch around it) of a few row tiles whose columns and reduction are both
# shorter than 1024 runs faster untiled, its register tiles over the whole reduction: the
# vector operand stays in the caches across the row blocks, and the tiled code's copies and
# partial tiles cost more than they save (64 x 768 x 128: 1.6x, 128 x 1000^2: 1.15x). With
# more rows, 1024 columns (a 4 KiB row stride), a longer reduction, or sizes made of whole
# tiles (``full``), the tiled code wins (bench/HISTORY.md, point 6).
UNTILED_ROWS_MAX = 256
UNTILED_EXTENT_MAX = 1023


def _untiled_pays(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...],
                  big: isl.Set, applies: bool = True) -> isl.Set:
    """Within ``big``: for an operator of one packed band (matmul, not conv) with no batch
    member around it, the sizes of more than one row tile and at most ``UNTILED_ROWS_MAX``
    rows whose other tiled members (columns, reduction) are at most ``UNTILED_EXTENT_MAX``
    long. (Around a batch the tiled code's team region wins: 8 x 128 x 768^2 440 against
    400 GFLOP/s.) Empty unless ``applies``."""
    out = isl.Set.empty(big.get_space())
    if not applies or len(plan) != 1 or plan[0].deep:
        return out
    tiling = plan[0]
    roles = _product_roles(scop, base, tiling)
    if roles is None or roles[1]:  # none, or a batch around it
        return out
    row, _, others = roles
    extents = member_extents(base, tiling)
    out = big.intersect(at_least(extents[row], tiling.sizes[row] + 1)) \
        .subtract(at_least(extents[row], UNTILED_ROWS_MAX + 1))
    for k in others:
        out = out.subtract(at_least(extents[k], UNTILED_EXTENT_MAX + 1))
    return out.coalesce()


def _narrow_plans(scop: Scop, base: isl.Schedule, plan: tuple[BandTiling, ...],
                  target: CpuTarget, deep: bool, within: isl.Set | None = None
                  ) -> list[VariantPlan]:
    """The ``vectorW`` variants of ``partition``: an operator with one band
    (``auto.lone_band``), deep (conv) or packed (matmul) as ``deep`` says; within the given
    region (default: the context)."""
    main = lone_band(base, scop, plan)
    if main is None or main.deep != deep:
        return []
    plans = []
    for sizes, shape in narrow_tiers(base, scop, main, target):
        region = (within or scop.context).intersect(sizes).coalesce()
        if _nonempty(region):
            plans.append(VariantPlan(f"vector{shape.vector_bytes}", region,
                                     AutoRecipe(registers=shape)))
    return plans


def plan_variants(scop: Scop, base: isl.Schedule, variants: list[tuple[str, Any]] | None,
                  max_tile: int | None = None, cpu: bool = True,
                  wave: WaveTiling | None = None, target: CpuTarget = AVX512,
                  computed: isl.Schedule | None = None) -> list[VariantPlan]:
    """User variants in their order, else the automatic partition for ``target``; a generic
    variant over the whole context closes the cover (checked). A policy recipe
    (``pd.Schedule.isl()...``, what ``k.variants[i].recipe`` holds) replays as the policy's
    own choice; ``computed`` is isl's schedule that its ``wavefront`` tiles."""
    if variants:
        auto = AutoRecipe(tuple(tiling_plan(base, scop, max_tile, target)))
        plans = []
        for k, item in enumerate(variants):
            if not (isinstance(item, tuple | list) and len(item) == 2 and
                    isinstance(item[0], str | isl.Set)):
                raise CompileError(f"variants[{k}]: expected (region, Schedule), got "
                                   f"{item!r}")
            text, recipe = item
            name = getattr(recipe, "name", None) or f"user{k}"
            if recipe is None or getattr(recipe, "is_auto", False):
                recipe = auto
            elif not isinstance(recipe, Schedule):
                raise CompileError(f"variants[{k}]: the schedule must be a pd.Schedule, got "
                                   f"{recipe!r}")
            elif recipe.is_policy:
                recipe = AutoRecipe.from_schedule(recipe, computed)
            plans.append(VariantPlan(name, parse_region(scop, text), recipe))
        names = [p.name for p in plans]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise CompileError(f"two variants are labelled {dup!r}; give each its own label")
        if not any(p.region.is_equal(scop.context) for p in plans):
            check_cover(scop, [p.region for p in plans])
        return plans
    plans = partition(scop, base, max_tile, cpu, wave, target)
    check_cover(scop, [p.region for p in plans])
    return plans
