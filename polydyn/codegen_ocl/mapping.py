"""Mapping a variant's schedule tree onto OpenCL, in the manner of PPCG.

Walking the marked schedule tree (single-member bands under ``parallel``/``sequential`` marks)
from the root:

- the first chain of nested ``parallel`` members (no other node between them) becomes one
  kernel: its innermost members (up to three or the recipe's ``gpu(members=k)``, skipping
  members with a single value in the region) are tiled with constant tile sizes (sizes.py:
  the recipe's ``gpu`` directive or the defaults), the tile index is the work-group id and
  the point index the local id;
  outer members of the chain and everything below run as loops in each work-item;
- a ``sequential`` member with parallelism below it becomes a host loop around the kernels
  of its body; a sequence (or set) becomes kernels launched in order;
- a part with no parallel member at all runs as a one work-item kernel;
- a kernel of one mapped member whose body is loops that are parallel or carried only by
  reductions into local scalars (softmax's and layernorm's rows) runs one work-group of lanes
  per value of the member instead (a row per group): each top-level loop of the body is dealt
  out to the lanes cyclically (coalesced loads), each reduction is combined over the lanes
  through local memory, and a barrier ends each loop. Every lane computes the local scalars
  outside the loops itself; lane 0 runs the other statements there. PPCG maps no reductions;
  this is what loopy and TVM do for row reductions. A variant that would run loops in a single
  work-item (a reduction with no parallel loop around it: the rows when ``N = 1``) runs whole
  as one such group when its body allows. Loops that sum into one cell per value (``C[i, j] +=
  ...`` under ``k``) are shared by lanes only where the one-value-per-work-item grid's groups
  would not fill the device (an alternative of that grid); where the kernel reads along the
  member with stride 1 (``x @ B``), a group takes several values with a few lanes each.

A kernel whose two innermost mapped members enclose a reduction accumulating into one cell
per point (matmul) gets register tiles instead (regtiles.py): each work-item computes TM x
TN points, a work-group a BM x BN block.

Each kernel's code is isl's AST for the whole schedule with the domain restricted to the
kernel's instances, where the host loop values, the group ids and the local ids are parameters
(``pd_h0``, ``pd_g0``, ``pd_l0``), as PPCG builds its kernel ASTs. The mapped member ``k`` is
equated to ``pd_o<k> + tile * pd_g<k> + pd_l<k>`` where the offset ``pd_o<k>`` is the member's
first value, computed on the host. The build context says what the host guarantees (the offset
is the minimum, every group has work, the region holds), so isl leaves out every guard these
facts imply: with ``N mod 16 = 0`` a 16-wide mapping needs no bound test.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import islpy as isl

from ..astgen import annotated_ast, atomic_where_strides_differ, new_build
from ..lowering.tree import Node, from_isl, has_loop
from ..parametric.variants import Variant
from ..schedule.gpu import GpuMapping
from ..schedule.tree import PARALLEL, SEQUENTIAL, is_band, loop_mark, statement_names
from ..scop.deps import Deps
from ..scop.ir import Scop
from .lanes import grids_within_serial_loops, lane_body, reads_along, uses_cells
from .order import gpu_schedule
from .plan import GROUP, HOST, LOCAL, OFFSET, Grid, HostLoop, KernelSpec, VariantMapping
from .promotion import promote
from .pyexpr import pw_aff_to_py, set_to_py
from .regtiles import choose_register_tiles, register_kernel, smaller_tiles
from .sizes import Sizes, power_of_two

MAX_MAPPED = 3
MAX_CONTEXT_PIECES = 8  # disjuncts of a kernel's AST build context (see _build_context)
_NT = isl.schedule_node_type

# --------------------------------------------------------------------------------------------
# Schedule choice


def is_automatic(variant: Variant) -> bool:
    """A variant of the automatic policy's (a policy recipe, ``pd.Schedule.isl()...``): the
    GPU mapping reschedules it; a loop recipe is mapped as the user gave it."""
    return variant.recipe.is_policy


def map_variant(scop: Scop, deps: Deps, variant: Variant, index: int,
                max_group: int = 256, local_memory: bool = True,
                computed: isl.Schedule | None = None, regtile: str = "") -> VariantMapping:
    """The launches of one variant. Automatic variants are rescheduled for the GPU (the CPU
    policy's tiling and thread choices do not apply): isl's default schedule, or the one with
    outer coincidence when fewer statements then run in loops of a single work-item
    (jacobi2d's time loop on the host, its two sweeps parallel; a sum then a parallel loop
    that isl would fuse into one sequential loop); user schedules are mapped as given.
    A recipe's ``gpu`` directive decides the choices (schedule/gpu.py); otherwise the mapping
    chooses, and the variant's recipe records every choice and size its kernels used
    (``Schedule.on_gpu``). ``computed``: isl's schedule under the operator's context, if the
    caller has it; ``regtile``: POLYDYN_OCL_REGTILE (regtiles.py) and ``local_memory``, where
    no directive says."""
    prefix = f"{scop.name}_v{index}"
    given = variant.recipe.gpu_mapping or \
        GpuMapping(None, regtile.strip().lower(), local_memory)
    given.fit(max_group)
    if not is_automatic(variant):
        mapper = _map(scop, deps, variant, variant.schedule, prefix, max_group, given)
        return _recorded(mapper, variant, False)
    best = None
    for choice in (False, True) if given.outer is None else (given.outer,):
        schedule = gpu_schedule(scop, deps, variant, choice, computed, given.product_order)
        mapper = _map(scop, deps, variant, schedule, prefix, max_group, given)
        score = (mapper.mapped.serial_statements, _count_launch_sites(mapper.mapped.host))
        if best is None or score < best[0]:
            best = (score, mapper, choice)
        if mapper.mapped.serial_statements == 0:
            break
    return _recorded(best[1], variant, best[2])


def _recorded(mapper: _Mapper, variant: Variant, outer: bool) -> VariantMapping:
    """The mapping with its variant's recipe stating the mapping's choices: the ones given,
    and the sizes the kernels used."""
    recipe = variant.recipe.on_gpu(mapper.sizes.recorded(outer))
    mapped = mapper.mapped
    return replace(mapped, variant=mapped.variant.replace(recipe=recipe))


def _map(scop: Scop, deps: Deps, variant: Variant, schedule: isl.Schedule, prefix: str,
         max_group: int, given: GpuMapping) -> _Mapper:
    """The mapper that mapped ``schedule`` (its result in ``mapped``)."""
    schedule = atomic_where_strides_differ(schedule)
    mapper = _Mapper(scop, deps, schedule, variant.region, prefix, max_group, given)
    host = tuple(mapper.items(schedule.get_root(), 0, variant.region))
    kernels = tuple(mapper.kernels)
    if any(k.grid is None and has_loop(k.ast) for k in kernels) and \
            grids_within_serial_loops(kernels, schedule.get_domain(), variant.region):
        whole = mapper.whole_lane_kernel()  # loops of one work-item: one group shares them
        if whole is not None:
            host = kernels = (whole,)
            mapper.sizes.only_lanes()
    mapped_variant = variant.replace(schedule=schedule, summary=_summary(list(kernels)))
    mapper.mapped = VariantMapping(mapped_variant, host, kernels)
    return mapper


def _summary(kernels: list[KernelSpec]) -> str:
    parts = []
    for k in kernels:
        if k.grid is None:
            parts.append(f"1 group of {k.lanes} lanes" if k.lanes else "1 work-item")
        else:
            parts.append(_grid_summary(k) + "".join(
                f" (else, to fill the device: {_grid_summary(alt)})" for alt in k.alternatives))
    return f"opencl: {len(kernels)} kernel(s): " + "; ".join(parts)


def _grid_summary(k: KernelSpec) -> str:
    if k.lanes:
        per = f"{k.columns} values" if k.columns else "value"
        return f"1-D grid, a group of {k.lanes} lanes per {per}"
    text = "x".join(str(t) for t in k.grid.tiles)
    return (f"{len(k.grid.tiles)}-D grid, groups {text}" +
            (f", {k.regtiles.describe()}" if k.regtiles else "") +
            (f", local {'+'.join(c.array for c in k.local)}" if k.local else ""))


def _count_launch_sites(items: tuple[Any, ...]) -> int:
    return sum(_count_launch_sites(i.body) + 1 if isinstance(i, HostLoop) else 1 for i in items)


# --------------------------------------------------------------------------------------------
# The walk


class _Mapper:
    def __init__(self, scop: Scop, deps: Deps, schedule: isl.Schedule, region: isl.Set,
                 prefix: str, max_group: int, given: GpuMapping):
        self.scop = scop
        self.regtile = given.regtile
        self.local_memory = given.local
        self.deps = deps
        self.schedule = schedule
        self.region = region
        self.prefix = prefix
        self.max_group = max_group
        self.kernels: list[KernelSpec] = []
        self.mapped: VariantMapping | None = None
        self.sizes = Sizes(given, max_group)
        self.members = given.members or MAX_MAPPED  # the chain's innermost ones

    def items(self, node: isl.ScheduleNode, depth: int, host_ctx: isl.Set) -> list[Any]:
        kind = node.get_type()
        if kind in (_NT.domain, _NT.filter, _NT.context):
            return self.items(node.child(0), depth, host_ctx)
        if kind in (_NT.sequence, _NT.set):
            return self.sequence_items(node, depth, host_ctx)
        if kind == _NT.mark and node.n_children() and is_band(node.child(0)):
            return self.band_items(node, depth, host_ctx)
        if kind == _NT.mark:
            return self.items(node.child(0), depth, host_ctx)
        return self.kernel(node, depth, host_ctx, [])

    def sequence_items(self, node: isl.ScheduleNode, depth: int, host_ctx: isl.Set
                       ) -> list[Any]:
        """Children in order; consecutive children without parallelism share one
        single work-item kernel (one launch instead of one per statement)."""
        out: list[Any] = []
        serial: list[isl.UnionSet] = []
        for k in range(node.n_children()):
            child = node.child(k)
            if _has_parallel(child):
                out.extend(self.serial_kernel(node, depth, host_ctx, serial))
                serial = []
                out.extend(self.items(child, depth, host_ctx))
            else:
                serial.append(child.child(0).get_domain() if child.n_children()
                              else child.get_domain())
        out.extend(self.serial_kernel(node, depth, host_ctx, serial))
        return out

    def serial_kernel(self, node: isl.ScheduleNode, depth: int, host_ctx: isl.Set,
                      domains: list[isl.UnionSet]) -> list[KernelSpec]:
        if not domains:
            return []
        domain = domains[0]
        for d in domains[1:]:
            domain = domain.union(d)
        return self.kernel(node, depth, host_ctx, [], domain)

    def band_items(self, mark: isl.ScheduleNode, depth: int, host_ctx: isl.Set) -> list[Any]:
        if mark.get_domain().is_empty():
            return []
        if mark_kind(mark) == PARALLEL:
            chain = _parallel_chain(mark)
            mapped = [b for b in chain if not self.single_valued(b)][-self.members:]
            if mapped:
                return self.kernel(mark, depth, host_ctx, mapped, chain=chain)
        band = mark.child(0)
        if not _has_parallel(band.child(0)):
            return self.kernel(mark, depth, host_ctx, [])
        return self.host_loop(band, depth, host_ctx)

    def single_valued(self, band: isl.ScheduleNode) -> bool:
        """The member takes one value for each value of the members above it (``i`` when
        the region says ``N = 1``): mapping it would leave all work-items but one idle."""
        pos = band.get_schedule_depth()
        prefix = band.child(0).get_prefix_schedule_union_map()
        image = isl.Set.from_union_set(prefix.intersect_domain(band.get_domain()).range())
        rel = isl.Map.from_range(image).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, pos)
        return bool(rel.is_single_valued())

    def host_loop(self, band: isl.ScheduleNode, depth: int, host_ctx: isl.Set) -> list[Any]:
        # image: [pd_h0..pd_h{depth-1}] -> { [value of this member] }
        image = _image(band.child(0).get_prefix_schedule_union_map(), band.get_domain(), depth)
        when = image.params()
        ctx = host_ctx.intersect(when)
        var = f"{HOST}{depth}"
        # The body learns nothing about the loop's value: not that every value has
        # instances (a guard or a skew leaves holes, and the loop runs from the least to
        # the greatest by the stride), and not the loop's bounds either (each launch tests
        # its own `when`, which implies them; a context with the loop's piecewise bounds
        # and lattice made isl's expression printing take minutes on fuzz operators).
        body = tuple(self.items(band.child(0), depth + 1, host_ctx))
        if not body:
            return []
        return [HostLoop(var, pw_aff_to_py(image.dim_min(0), ctx),
                         pw_aff_to_py(image.dim_max(0), ctx), set_to_py(when, host_ctx), body,
                         _stride(image))]

    def kernel(self, root: isl.ScheduleNode, depth: int, host_ctx: isl.Set,
               mapped: list[isl.ScheduleNode], domain: isl.UnionSet | None = None,
               chain: list[isl.ScheduleNode] | None = None) -> list[KernelSpec]:
        """The kernel running ``domain`` (default: every instance reaching ``root``)."""
        domain = root.get_domain() if domain is None else domain
        if domain.is_empty():
            return []
        at = mapped[-1].child(0) if mapped else root
        prefix = at.get_prefix_schedule_union_map().intersect_domain(domain)
        image = _image(prefix, domain, depth)
        when = image.params()
        ctx = host_ctx.intersect(when)
        positions = tuple(b.get_schedule_depth() for b in mapped)
        tiles = self.sizes.group(len(mapped)) if mapped else ()
        ranges = [_project_on(image, p - depth) for p in positions]
        grid = Grid(positions, tiles, tuple(pw_aff_to_py(r.dim_min(0), ctx) for r in ranges),
                    tuple(pw_aff_to_py(r.dim_max(0), ctx) for r in ranges)) if mapped else None
        n_dims = image.dim(isl.dim_type.set) + depth
        params = self.params(depth, len(mapped))
        mapping = _mapping_set(params, n_dims, depth, positions, tiles)
        kdomain = prefix.intersect_range(isl.UnionSet.from_set(mapping)).domain() if mapped \
            else _fix_host(root, domain, params, depth)
        # `when` (tested at launch) implies what the host loops guarantee
        kctx = _build_context(self.region.intersect(when).intersect(
            _grid_context(params, ranges, tiles)))
        name = f"{self.prefix}_k{len(self.kernels)}"
        placement = prefix.apply_range(isl.UnionMap.from_map(
            _keep_dims(n_dims, (*range(depth), *positions))))
        when_py, statements = set_to_py(when, host_ctx), tuple(sorted(statement_names(domain)))
        if len(mapped) == 1 and depth == 0 and self.whole_statements(domain):
            lane = self.lane_kernel(prefix, ranges, positions, n_dims, when, ctx)
            if lane is not None and not uses_cells(lane[1]):
                spec = self.lane_spec(KernelSpec(name, depth, lane[0], when_py, statements,
                                                 lane[1], placement=placement), lane[2])
                self.kernels.append(spec)
                return [spec]
        else:
            lane = None
        tiled = self.register_tiled(name, domain, depth, chain or mapped, mapped, ranges,
                                    (ctx, when, params, when_py), grid, placement) \
            if len(mapped) >= 2 and self.local_memory else []
        one = name if not tiled else f"{name}_1"
        promoted = promote(self.scop, self.schedule, domain, depth, chain or mapped, mapped,
                           tiles, params, kctx) if mapped and self.local_memory else None
        plain = None
        if promoted is None or any(c.dynamic for c in promoted.copies):
            plain = KernelSpec(one if promoted is None else f"{one}_plain", depth, grid,
                               when_py, statements, from_isl(new_build(kctx).node_from_schedule(
                                   self.schedule.intersect_domain(kdomain))),
                               placement=placement)
        if promoted is None:
            spec = plain
        else:  # with local memory sized at launch, the plain kernel is the fallback
            spec = KernelSpec(one, depth, grid, when_py, statements, promoted.ast,
                              promoted.copies, promoted.threads, fallback=plain,
                              placement=placement)
        if tiled:  # register tiles, and smaller work-groups' work where they fill the device
            spec = replace(tiled[0], alternatives=(*tiled[1:], spec))
        elif lane is not None:  # sums into cells: shared by lanes where the grid is too small
            lanes = self.lane_spec(KernelSpec(f"{name}_lanes", depth, lane[0], when_py,
                                              statements, lane[1], placement=placement), lane[2])
            spec = replace(spec, alternatives=(replace(lanes, alternatives=()),
                                               *lanes.alternatives))
        self.kernels.append(spec)
        return [spec]

    def register_tiled(self, name: str, domain: isl.UnionSet, depth: int,
                       chain: list[isl.ScheduleNode], mapped: list[isl.ScheduleNode],
                       ranges: list[isl.Set], where: tuple[Any, ...], grid: Grid,
                       placement: isl.UnionMap) -> list[KernelSpec]:
        """The kernels with register tiles on their work-items (regtiles.py), largest tiles
        first (``smaller_tiles``), or none. ``where``: the launch's context, its condition
        (isl, Python) and the parameters."""
        ctx, when, params, when_py = where
        items, bk, stages = self.sizes.register_items()
        tiles = choose_register_tiles(mapped, ranges, ctx, items, bk, self.regtile, stages)
        if tiles is not None:
            self.sizes.registers_used(items, bk, stages)
        out: list[KernelSpec] = []
        for k, t in enumerate(smaller_tiles(tiles, forced=bool(self.regtile.strip()))):
            blocks = t.blocks(len(mapped))
            kctx = _build_context(self.region.intersect(when).intersect(
                _grid_context(params, ranges, blocks)))
            code = register_kernel(self.scop, self.schedule, domain, depth, chain, mapped, t,
                                   params, kctx)
            if code is None:
                break
            out.append(KernelSpec(name if k == 0 else f"{name}_{t.tm}x{t.tn}", depth,
                                  replace(grid, tiles=blocks), when_py,
                                  tuple(sorted(statement_names(domain))), code.ast,
                                  code.copies, code.threads, placement=placement,
                                  regtiles=code.tiles,
                                  accumulators=code.accumulators, full=code.full,
                                  free=code.free, order=code.order))
        return out

    def whole_statements(self, domain: isl.UnionSet) -> bool:
        """Whether ``domain`` holds every instance of each of its statements (no other
        kernel runs any of them)."""
        names = statement_names(domain)
        sets: list[isl.Set] = []
        self.schedule.get_domain().foreach_set(sets.append)
        return all(isl.UnionSet.from_set(x).is_subset(domain) for x in sets
                   if x.get_tuple_name() in names)

    def whole_lane_kernel(self) -> KernelSpec | None:
        """The whole variant as one work-group of lanes (``lane_body``), for a variant that
        would otherwise run loops in a single work-item: a reduction with no parallel loop
        around it (a sum over the whole array; softmax's rows when ``N = 1``). It has the wide
        lane count: one group never fills a device."""
        domain = self.schedule.get_domain()
        narrow, wide = self.sizes.lanes
        if narrow < 2 or domain.is_empty():
            return None
        when = domain.params()
        ast = annotated_ast(new_build(self.region.intersect(when)), self.schedule, self.scop,
                            self.deps)
        if not lane_body(self.scop, ast, statement_names(domain)):
            return None
        return KernelSpec(f"{self.prefix}_k0", 0, None, set_to_py(when, self.region),
                          tuple(sorted(statement_names(domain))), ast,
                          placement=isl.UnionMap.from_domain(domain), lanes=wide)

    def lane_spec(self, spec: KernelSpec, last: isl.AstExpr | None) -> KernelSpec:
        """``spec`` (a lane kernel's grid and body) with its lanes, and a wider alternative
        for launches of few groups. ``last``: the member's last value where a group takes
        ``COLUMNS`` values (the kernel reads along the member with stride 1), else None."""
        if last is not None:
            columns, lanes = self.sizes.columns
            wide = power_of_two(self.max_group // columns)
            spec = replace(spec, grid=replace(spec.grid, tiles=(columns,)), lanes=lanes,
                           columns=columns, last=last)
            self.sizes.used("columns", (columns, lanes))
        else:
            lanes, wide = self.sizes.lanes
            spec = replace(spec, lanes=lanes)
            self.sizes.used("lanes", (lanes, wide))
        if wide > lanes:  # few groups: wider groups fill the device
            spec = replace(spec, alternatives=(replace(spec, name=f"{spec.name}_w",
                                                       lanes=wide),))
        return spec

    def lane_kernel(self, prefix: isl.UnionMap, ranges: list[isl.Set],
                    positions: tuple[int, ...], n_dims: int, when: isl.Set,
                    ctx: isl.Set) -> tuple[Grid, Node, isl.AstExpr | None] | None:
        """The grid and body of the one-member kernel (no host loop around it) as a lane
        kernel, a group per value of the member, and the member's last value where a group
        should take ``COLUMNS`` values instead (``reads_along``); None when its body does not
        allow it (``lane_body``)."""
        if self.sizes.lanes[0] < 2:
            return None
        params = self.params(0, 1)
        mapping = _mapping_set(params, n_dims, 0, positions, (1,))
        kdomain = prefix.intersect_range(isl.UnionSet.from_set(mapping)).domain()
        kctx = self.region.intersect(when).intersect(_grid_context(params, ranges, (1,)))
        ast = annotated_ast(new_build(kctx), self.schedule.intersect_domain(kdomain),
                            self.scop, self.deps)
        if not lane_body(self.scop, ast, statement_names(kdomain)):
            return None
        grid = Grid(positions, (1,), (pw_aff_to_py(ranges[0].dim_min(0), ctx),),
                    (pw_aff_to_py(ranges[0].dim_max(0), ctx),))
        last = None
        if self.max_group >= math.prod(self.sizes.columns) and \
                reads_along(self.scop, prefix, n_dims - 1):
            ctx = ctx.align_params(ranges[0].get_space())
            last = isl.AstBuild.from_context(ctx).expr_from_pw_aff(
                ranges[0].dim_max(0).align_params(ctx.get_space()).gist(ctx))
        return grid, ast, last

    def params(self, depth: int, n_mapped: int) -> list[str]:
        out = list(self.scop.syms) + [f"{HOST}{j}" for j in range(depth)]
        for k in range(n_mapped):
            out += [f"{OFFSET}{k}", f"{GROUP}{k}", f"{LOCAL}{k}"]
        return out


# --------------------------------------------------------------------------------------------
# isl helpers


def _image(prefix: isl.UnionMap, domain: isl.UnionSet, n_host: int) -> isl.Set:
    """The prefix schedule's values on ``domain``, the first ``n_host`` as parameters
    ``pd_h0``...: ``[syms, pd_h0, ...] -> { [inner values] }``."""
    image = isl.Set.from_union_set(prefix.intersect_domain(domain).range())
    return _to_params(image, [f"{HOST}{j}" for j in range(n_host)])


def _to_params(image: isl.Set, names: list[str]) -> isl.Set:
    """Move the first ``len(names)`` set dimensions to parameters with these names."""
    n_param = image.dim(isl.dim_type.param)
    image = image.move_dims(isl.dim_type.param, n_param, isl.dim_type.set, 0, len(names))
    for j, name in enumerate(names):
        image = image.set_dim_name(isl.dim_type.param, n_param + j, name)
    return image


def _stride(image: isl.Set) -> int:
    """The step of a host loop over the 1-D ``image``: its stride (1 for a single value)."""
    step = image.get_stride(0)
    return step.to_python() if step.is_int() and step.to_python() > 1 else 1


def _project_on(image: isl.Set, k: int) -> isl.Set:
    n = image.dim(isl.dim_type.set)
    return image.project_out(isl.dim_type.set, k + 1, n - k - 1).project_out(
        isl.dim_type.set, 0, k)


def _mapping_set(params: list[str], n_dims: int, depth: int, positions: tuple[int, ...],
                 tiles: tuple[int, ...]) -> isl.Set:
    """``{ [p0, ...] : p_j = pd_h<j> (host loops), p_pos = pd_o<k> + tile * pd_g<k> +
    pd_l<k> (mapped members) }`` over the prefix schedule's values."""
    dims = [f"p{j}" for j in range(n_dims)]
    cons = [f"p{j} = {HOST}{j}" for j in range(depth)]
    cons += [f"p{pos} = {OFFSET}{k} + {t} * {GROUP}{k} + {LOCAL}{k}"
             for k, (pos, t) in enumerate(zip(positions, tiles, strict=True))]
    body = " and ".join(cons) or "1 = 1"
    return isl.Set(f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] : {body} }}")


def _keep_dims(n_dims: int, kept: tuple[int, ...]) -> isl.Map:
    """``{ [p0, ..., p<n_dims - 1>] -> [p<k> for k in kept] }``."""
    dims = [f"p{j}" for j in range(n_dims)]
    return isl.Map(f"{{ [{', '.join(dims)}] -> [{', '.join(dims[k] for k in kept)}] }}")


def _fix_host(root: isl.ScheduleNode, domain: isl.UnionSet, params: list[str],
              depth: int) -> isl.UnionSet:
    """The instances of ``domain`` whose host loop values are ``pd_h0``..."""
    if depth == 0:
        return domain
    prefix = root.get_prefix_schedule_union_map().intersect_domain(domain)
    return prefix.intersect_range(isl.UnionSet.from_set(
        _mapping_set(params, depth, depth, (), ()))).domain()


def _grid_context(params: list[str], ranges: list[isl.Set], tiles: tuple[int, ...]) -> isl.Set:
    """What the host guarantees about the ids: ``0 <= pd_l<k> < tile``, ``pd_o<k>`` is the
    member's first value, and group ``pd_g<k>`` starts at or before its last value."""
    head = f"[{', '.join(params)}] -> "
    ctx = isl.Set(head + "{ : }")
    for k, (rng, t) in enumerate(zip(ranges, tiles, strict=True)):
        o, g, lid = f"{OFFSET}{k}", f"{GROUP}{k}", f"{LOCAL}{k}"
        ctx = ctx.intersect(isl.Set(head + f"{{ : 0 <= {lid} < {t} and {g} >= 0 }}"))
        starts = rng.intersect(isl.Set(head + f"{{ [s] : s >= {o} + {t} * {g} }}")).params()
        is_min = rng.intersect(isl.Set(head + f"{{ [s] : s = {o} }}")).params().subtract(
            rng.intersect(isl.Set(head + f"{{ [s] : s < {o} }}")).params())
        ctx = ctx.intersect(starts).intersect(is_min)
    return ctx.coalesce()


def _build_context(kctx: isl.Set) -> isl.Set:
    """The kernel's context for isl's AST build, or its simple hull when it has more than
    ``MAX_CONTEXT_PIECES`` disjuncts: a context only lets isl leave out guards, so a larger
    one is still correct (a fuzz operator's 114 disjuncts, from its host loops' strides and
    the groups' offsets, kept isl's AST build busy for minutes)."""
    if kctx.n_basic_set() <= MAX_CONTEXT_PIECES:
        return kctx  # as it is (the bundled kernels' code depends on its form)
    kctx = kctx.coalesce()
    if kctx.n_basic_set() <= MAX_CONTEXT_PIECES:
        return kctx
    return isl.Set.from_basic_set(kctx.simple_hull())


def mark_kind(node: isl.ScheduleNode) -> str:
    """``parallel`` or ``sequential`` for a loop mark (its role is the CPU's), "" for
    another mark."""
    mark = loop_mark(node)
    return "" if mark is None else PARALLEL if mark.parallel else SEQUENTIAL


def _parallel_chain(mark: isl.ScheduleNode) -> list[isl.ScheduleNode]:
    """The bands of consecutive ``parallel`` marks starting at ``mark``, outermost first."""
    bands = []
    node = mark
    while node.get_type() == _NT.mark and mark_kind(node) == PARALLEL \
            and node.n_children() and is_band(node.child(0)):
        bands.append(node.child(0))
        node = node.child(0).child(0)
    return bands


def _has_parallel(node: isl.ScheduleNode) -> bool:
    if node.get_type() == _NT.mark and mark_kind(node) == PARALLEL:
        return True
    return any(_has_parallel(node.child(k)) for k in range(node.n_children()))


__all__ = ["Grid", "HostLoop", "KernelSpec", "VariantMapping", "gpu_schedule", "map_variant"]
