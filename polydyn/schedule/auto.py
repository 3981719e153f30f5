"""The automatic CPU schedule: isl's scheduler once per operator, then per region a choice of
tiling (with full tiles isolated) and of the point-loop order.

Policy (documented in ARCHITECTURE.md):
- the base schedule is isl's, under the operator's context (validity = all dependences,
  proximity = flow, coincidence = expanded dependences), with a band's last member sunk
  below the bands under it where it runs along their accesses' rows (``sink_row_members``);
- an outermost permutable band is tiled when it has reuse to exploit: three or more members
  (matmul, conv, time-iterated stencils) or a transposed access (transpose);
- tile sizes: the innermost member (the vector loop) gets a long tile, the others short ones,
  shrunk until the tile's footprint (distinct elements touched, counted with isl) fits in L2;
  a deep band (conv) tiles its register-row, vector and reduction members, short tiles;
- in the point band, a parallel member along which accesses are stride-1 becomes innermost
  (vectorizable), reductions move out of the innermost position;
- register tiles (rows x vector accumulators) where a reduction allows them, and packing of
  the vector operand (matmul's B) once per tile, for all the row tiles below it; in a deep
  band the window loops run outside the channels' (a reassociated sum, when legal);
- a deep or packed band whose vector loop is too short for a register tile of two vector
  registers (conv on small images, matmul with M < 32 on AVX-512) gets narrower ones
  (``CpuTarget.narrow``, ``CpuTarget.narrow_rows``, in regions of their own);
- a deep band with many output and input channels (conv from 64 input channels) gets
  transposed register tiles instead, the vector along the output channels
  (``CpuTarget.channels``, in a region of its own, before the narrow ones);
- a deep band without full cache tiles (conv with few input or output channels) runs
  untiled, its register tiles over the whole reduction, the rows' tiles outside the
  vector's (output rows written in streams);
- a register tile that holds each of its cells' whole reduction runs the statement that
  initializes those cells (conv's ``Y = 0``) itself, from its accumulators
  (``schedule.inits``, applied to every automatic variant);
- register tiles and cache tiles are sized for the target CPU (``target.CpuTarget``:
  its vector registers and its L2);
- a time-iterated stencil, whose isl band has no parallel member, keeps the program's loops
  here; its time tiling is ``schedule.wavefront``'s (a region of its own).
"""

from __future__ import annotations

from collections.abc import Callable

import islpy as isl

from ..scop.deps import Deps
from ..scop.epilogue import element_wise, is_epilogue
from ..scop.expand import rows_along
from ..scop.exprs import Load
from ..scop.forward import read_only, reads_across
from ..scop.ir import Loop, Scop, StmtRef
from ..target import AVX512, CpuTarget
from .bands import (
    BandTiling,
    at_least,
    constant_members,
    elem_bytes,
    footprint_elems,
    has_reuse,
    has_transposed_access,
    member_dependence,
    member_extents,
    stride_one,
    subscript_vars,
    targets_move,
)
from .legality import is_legal
from .point_bands import packed_band_members, packed_members, register_plan, tiled_members
from .registers import RegisterShape
from .transforms import all_bands, outermost_bands
from .transposes import transpose_sizes, transposing_copies
from .tree import (
    band_above,
    is_band,
    node_at,
    node_path,
    statement_names,
)


def schedule_constraints(scop: Scop, deps: Deps, region: isl.Set) -> isl.ScheduleConstraints:
    """Validity = every dependence (plus local scalar live ranges); proximity = flow;
    coincidence = every dependence between expanded accesses (for parallel loops)."""
    domain = scop.domain().intersect_params(region)

    def within(relation: isl.UnionMap) -> isl.UnionMap:
        # { S[i] -> T[j] } between instances of the region: a statement with no instance
        # there is gone from the domain, and isl's scheduler crashes on a constraint that
        # names it
        return relation.intersect_domain(domain).intersect_range(domain)

    proximity = deps.flow.union(deps.locals_order)
    for name in transposing_copies(scop):  # no reuse to gain from fusing with the readers
        proximity = proximity.subtract_domain(isl.UnionSet.from_set(scop.statement(name).domain))
    # kept out of the product's band: epilogues split off (scop/epilogue.py), and element-wise
    # nests that read a product's cells (C = relu(T) after T += A * B)
    for name in epilogues(scop) + product_readers(scop):
        proximity = proximity.subtract_range(isl.UnionSet.from_set(scop.statement(name).domain))
    for name in repacked_products(scop):  # their own bands: register tiles over a repacked copy
        own = isl.UnionSet.from_set(scop.statement(name).domain)
        proximity = proximity.subtract_domain(own).subtract_range(own)
    return (isl.ScheduleConstraints.on_domain(domain)
            .set_context(region)
            .set_validity(within(deps.validity))
            .set_proximity(within(proximity))
            .set_coincidence(within(deps.all)))


def repacked_products(scop: Scop) -> list[str]:
    """The products that get bands of their own: those that accumulate into a cell while
    reading a read-only operand along the cell's last subscript in another subscript
    (attention's ``S[i, j] += Q[i, d] * Kt[j, d]``, kept in its cell by ``scop.hold``'s
    ``repack``), and products of two arrays, one a temporary (attention's ``Out[i, d] +=
    S[i, j] * V[j, d]``). Proximity to the statements that write or use their operands' or
    targets' cells (the softmax over the rows of S) would fuse them into those row loops,
    where register tiles cannot form."""
    only = read_only(scop)
    temps = {a.name for a in scop.arrays if a.kind == "temp"}
    out = []
    for s in scop.statements:
        cell = s.target
        if s.op == "=" or not isinstance(cell, Load) or not cell.index or \
                len(cell.index[-1].vars()) != 1:
            continue
        reads = [e for e in s.value.walk() if isinstance(e, Load)]
        reduced = set(s.iters) - subscript_vars(cell)
        if reads_across(s, only) or (len(cell.index) >= 2 and reduced and len(reads) == 2 and
                                     any(e.array in temps for e in reads)):
            out.append(s.name)
    return out


def epilogues(scop: Scop) -> list[str]:
    """The element-wise epilogues that ``scop/epilogue.py`` moved out of their product's
    loops: proximity to the product would fuse them back into its band."""
    return [s.name for s in scop.statements if len(s.iters) and is_epilogue(scop, s.name)
            and any(s.name in n for n in _lone_nests(scop))]


def product_readers(scop: Scop) -> list[str]:
    """The element-wise statements of a nest of their own (``epilogue.element_wise``) that
    read the cells a product sums into (``C[i, j] = max(T[i, j], 0)`` after ``T[i, j] +=
    A[i, k] * B[k, j]``): fused into the product's band they keep it from carrying register
    tiles (its statements no longer all accumulate), and they gain nothing there."""
    sums = {s.target.array for s in scop.statements
            if s.op != "=" and isinstance(s.target, Load) and
            set(s.iters) - subscript_vars(s.target)}
    lone = set().union(*_lone_nests(scop))
    return [s.name for s in scop.statements if s.name in lone and element_wise(s) and
            any(isinstance(e, Load) and e.array in sums for e in s.value.walk())]


def _lone_nests(scop: Scop) -> list[set[str]]:
    """The statements of each top-level nest that holds one statement."""
    out = []
    for node in scop.tree:
        while isinstance(node, Loop) and len(node.body) == 1:
            node = node.body[0]
        if isinstance(node, StmtRef):
            out.append({node.name})
    return out


def scheduler_schedule(scop: Scop, deps: Deps, region: isl.Set) -> isl.Schedule | None:
    """isl's own schedule for the region; None if the scheduler gives up."""
    try:
        return schedule_constraints(scop, deps, region).compute_schedule()
    except isl.Error:
        return None


def isl_schedule(scop: Scop, deps: Deps, region: isl.Set,
                 computed: isl.Schedule | None = None, cpu: bool = True) -> isl.Schedule:
    """The base schedule: isl's (``computed``, when the caller has it already), the
    original order if the scheduler gives up; on the CPU (``cpu``) with its row members
    sunk (``sink_row_members``)."""
    schedule = computed if computed is not None else scheduler_schedule(scop, deps, region)
    if schedule is None:
        return original_order(scop, region)
    stuck = _stuck_statements(schedule)
    if stuck and scop.tree:
        # isl fused statements into loops that all carry dependences (a time-iterated
        # stencil, skewed): the program's own loops may still have parallel ones inside
        from .directives import original_loops

        mine = original_loops(scop, deps, region)
        theirs = _parallel_statements(schedule.get_root())
        ours = _parallel_statements(mine.get_root())
        if stuck & ours and theirs <= ours:
            return mine
    schedule = distribute_low_dims(schedule, scop, deps)
    return sink_row_members(schedule, scop, deps) if cpu else schedule


def sink_row_members(schedule: isl.Schedule, scop: Scop, deps: Deps) -> isl.Schedule:
    """An outermost band's last member, coincident, that every access in the bands below it
    takes as its last subscript (stride 1) while they move the accesses in other subscripts
    (``b, d`` around the loops over ``s`` of a softmax over the middle axis, reading ``X[b,
    s, d]``, once scop/expand.py holds its scalars in temporaries), sunk below those bands
    (isl's band sink) when that is legal: it then runs along the rows, innermost, where it
    vectorizes."""
    def sunk(node: isl.ScheduleNode) -> isl.Schedule | None:
        k = node.band_n_member() - 1
        if not node.band_member_get_coincident(k) or \
                not _rows_below(scop, member_dependence(node, scop), k):
            return None
        if k:
            node = node.band_split(k).child(0)
        return node.band_sink().get_schedule()

    return _each_outermost_band(schedule, deps, sunk)


def _each_outermost_band(schedule: isl.Schedule, deps: Deps,
                         change: Callable[[isl.ScheduleNode], isl.Schedule | None]
                         ) -> isl.Schedule:
    """``schedule`` with ``change(band)`` (a schedule, or None for no change) taken for each
    outermost band in turn where it keeps every dependence; a band an earlier change moved
    is left alone."""
    for node in outermost_bands(schedule):
        try:
            node = node_at(schedule, node_path(node))
        except isl.Error:  # an earlier change moved this band
            continue
        if not is_band(node):
            continue
        candidate = change(node)
        if candidate is not None and is_legal(candidate, deps):
            schedule = candidate
    return schedule


def _rows_below(scop: Scop, deps_of: dict[str, list[set[str]]], k: int) -> bool:
    """The statements with loops below the band run along member ``k``'s iterator in their
    arrays' rows (``scop.expand.rows_along``)."""
    verdicts = []
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        below = set(stmt.iters) - set().union(*members)
        if not below:
            continue
        if len(members[k]) != 1:
            return False
        verdicts.append(rows_along(scop, stmt, next(iter(members[k])), below))
    return bool(verdicts) and None not in verdicts and any(verdicts)


def _stuck_statements(schedule: isl.Schedule) -> set[str]:
    """The statements of outermost bands with no parallel loop in or below them (isl's
    skewed band of a time-iterated stencil)."""
    out: set[str] = set()
    for band in outermost_bands(schedule):
        if not _parallel_statements(band):
            out |= statement_names(band.get_domain())
    return out


def _parallel_statements(node: isl.ScheduleNode) -> set[str]:
    """The statements with a parallel (coincident) loop in or below ``node``."""
    if is_band(node) and any(node.band_member_get_coincident(k)
                             for k in range(node.band_n_member())):
        return statement_names(node.get_domain())
    out: set[str] = set()
    for k in range(node.n_children()):
        out |= _parallel_statements(node.child(k))
    return out


def original_order(scop: Scop, region: isl.Set) -> isl.Schedule:
    """The program order as a schedule tree (always legal, no parallel loops marked)."""
    domain = scop.domain().intersect_params(region)
    sched = scop.original_schedule().intersect_domain(domain)
    return isl.Schedule.from_domain(domain).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(sched))


# --------------------------------------------------------------------------------------------
# Tiling plans and regions' extents (band analysis: schedule/bands.py; the plans are applied
# by schedule/point_bands.py)


def choose_sizes(node: isl.ScheduleNode, scop: Scop, constant: list[bool],
                 target: CpuTarget = AVX512) -> tuple[int, ...]:
    """Tile sizes for a band: long innermost (vector) tiles, short outer ones, shrunk until
    the footprint of one tile fits in half of the target's L2; constant members get 1. Outer
    tiles are a multiple of the register tile's rows, so full cache tiles hold full register
    tiles.

    A deep band (conv: more than three live members, reduction loops below it whose extents
    are sizes the footprint cannot bound) gets one register tile of vector width, 48 rows
    and 64 reduction steps, so that full tiles exist at the sizes such nests have."""
    elem = elem_bytes(scop)
    live, deep = tiled_members(node, scop, constant)
    sizes = [1] * len(constant)
    for k in live:  # members beyond three (a batch, conv's output rows) stay untiled
        sizes[k] = 8 * target.registers.rows
    if deep:
        row, vec, red = live
        sizes[row] = 8 * target.deep.rows
        sizes[vec], sizes[red] = target.deep.width(elem), 64
        return tuple(sizes)
    sizes[live[-1]] = 256 if len(live) >= 2 else 1024
    if len(live) >= 3:
        sizes[live[-2]] = 256
        sizes[live[-1]] = 256
    while footprint_elems(node, scop, sizes) * elem > target.l2_bytes // 2 and max(sizes) > 8:
        k = sizes.index(max(sizes))
        sizes[k] //= 2  # stays a multiple of the register tile when it was one
    return tuple(sizes)


def tiling_plan(schedule: isl.Schedule, scop: Scop, max_tile: int | None = None,
                target: CpuTarget = AVX512) -> list[BandTiling]:
    """Which outermost bands to tile, and by how much (members that are constant for every
    statement, like the ``0`` of a distributed ``C[i, j] = 0``, get size 1)."""
    plan = []
    for node in outermost_bands(schedule):
        if not node.band_get_permutable():
            continue
        n = node.band_n_member()
        deps_of = member_dependence(node, scop)
        constant = constant_members(deps_of, n)
        live = [k for k in range(n) if not constant[k]]
        reuse = len(live) >= 3 and has_reuse(scop, deps_of, live)
        if len(live) < 2 or not (reuse or has_transposed_access(scop, deps_of)):
            continue
        serial = [k for k in live if not node.band_member_get_coincident(k)]
        if not reuse and len(serial) == len(live) - 1 and \
                not targets_move(scop, deps_of, serial):
            # one parallel member, the others reductions (no target moves along them), each
            # element read once (a vector times a matrix, ``y[j] += x[k] * A[k, j]``; column
            # sums): tiles reuse nothing, and the untiled order streams the rows in strips
            # (``strip_mine_vector``)
            continue
        sizes = (None if reuse else transpose_sizes(node, scop)) or \
            choose_sizes(node, scop, constant, target)
        if max_tile:
            sizes = tuple(min(s, max_tile) for s in sizes)
        plan.append(BandTiling(node_path(node), sizes, tiled_members(node, scop, constant)[1],
                               _min_extents(node, scop, sizes, target)))
    return plan


def narrow_tiers(schedule: isl.Schedule, scop: Scop, tiling: BandTiling,
                 target: CpuTarget = AVX512) -> list[tuple[isl.Set, RegisterShape]]:
    """For a deep band's tiling (``target.narrow``) or a packed one's
    (``target.narrow_rows``), each narrow shape with the sizes (a set over the syms)
    where the band's vector member is too short for the wider shapes and long enough for
    this one."""
    if tiling.deep:
        _row, vec, _red = _deep_members(schedule, scop, tiling)
        tiers = target.narrow
    else:
        members = packed_members(schedule, scop, tiling)
        if members is None:
            return []
        _row, vec = members
        tiers = target.narrow_rows
    elem = elem_bytes(scop)
    extent = member_extents(schedule, tiling)[vec]
    wider = [target.reg_vector_bytes] + [least for least, _ in tiers]
    return [(at_least(extent, least // elem).subtract(at_least(extent, wide // elem)), shape)
            for wide, (least, shape) in zip(wider, tiers, strict=False)]


# The reduction member's (conv's input channels') smallest extent for transposed register
# tiles (``CpuTarget.channels``): their accumulators are copied in and out across the
# vector, element by element, once per tile.
CHANNELS_MIN_REDUCTION = 64


def _deep_members(schedule: isl.Schedule, scop: Scop, tiling: BandTiling
                  ) -> list[int]:
    """A deep band's register-row, vector and reduction members (``tiled_members``)."""
    node = node_at(schedule, tiling.path)
    constant = constant_members(member_dependence(node, scop), node.band_n_member())
    return tiled_members(node, scop, constant)[0]


def lone_band(schedule: isl.Schedule, scop: Scop, plan: list[BandTiling] | tuple[BandTiling, ...]
              ) -> BandTiling | None:
    """The band of an operator with one (its only band, or the only one whose statements
    are not all element-wise: a conv or a product after a padded copy of its input, or
    before an epilogue's nest); None for operators with several."""
    if len(plan) == 1:
        return plan[0]
    found = [t for t in plan if not all(
        element_wise(scop.statement(n))
        for n in statement_names(node_at(schedule, t.path).get_domain()))]
    return found[0] if len(found) == 1 else None


def channels_region(schedule: isl.Schedule, scop: Scop, tiling: BandTiling,
                    target: CpuTarget = AVX512) -> isl.Set | None:
    """For a deep band's tiling: the sizes where its rows' member (conv's output channels)
    fills at least one register vector and its reduction member is at least
    ``CHANNELS_MIN_REDUCTION`` long, for ``target.channels``; None for other bands."""
    if not tiling.deep:
        return None
    row, _vec, red = _deep_members(schedule, scop, tiling)
    extents = member_extents(schedule, tiling)
    return at_least(extents[row], target.channels.width(elem_bytes(scop))).intersect(
        at_least(extents[red], CHANNELS_MIN_REDUCTION))


# The vector member's smallest extent, in register vectors, for a packed band's tiled code:
# with partial register tiles running as full ones, the tiled matmul beats the untiled one
# at any number of rows and any depth from about three vectors of columns on; below that the
# untiled code wins (bench/HISTORY.md, point 6).
MIN_TILED_VECTORS = 3


def _min_extents(node: isl.ScheduleNode, scop: Scop, sizes: tuple[int, ...],
                 target: CpuTarget) -> tuple[int, ...] | None:
    """``BandTiling.min_extents`` of a band: for one whose vector operand gets packed, 1 for
    every member but the vector one (``MIN_TILED_VECTORS`` vectors); for one whose register
    tiles read a repacked copy (``_repacked_reduction``), the tile sizes with the reduction
    past what keeps a vector tile's panel of the copy in half the L2; else None."""
    repacked = _repacked_reduction(node, scop)
    if repacked is not None:
        out = list(sizes)
        vector_bytes = target.registers.width(elem_bytes(scop)) * elem_bytes(scop)
        out[repacked] = max(sizes[repacked], target.l2_bytes // 2 // vector_bytes + 1)
        return tuple(out)
    members = packed_band_members(node, scop, sizes)
    if members is None:
        return None
    _row, vec = members
    out = [1] * len(sizes)
    out[vec] = min(sizes[vec], MIN_TILED_VECTORS * target.registers.width(elem_bytes(scop)))
    return tuple(out)


def _repacked_reduction(node: isl.ScheduleNode, scop: Scop) -> int | None:
    """For a band without a parallel stride-1 member whose register tiles take their vector
    along a member through repacked copies (``register_plan``: nn.Linear's ``W[o, i]``
    along ``o``), its one reduction member; else None. The untiled code's register tiles
    then run over a whole vector tile's panel of the copy (K x 32 floats), which stays in the
    L2 while the rows pass: the copy is the packed operand that cache tiles would make, up
    to K = 4096 (a 1 MiB panel past it; bench/HISTORY.md, point 5)."""
    n = node.band_n_member()
    if n < 3 or not node.band_get_permutable():
        return None
    deps_of = member_dependence(node, scop)
    constant = constant_members(deps_of, n)
    if any(node.band_member_get_coincident(k) and not constant[k] and
           stride_one(scop, deps_of, k) for k in range(n)):
        return None
    plan = register_plan(node, scop)
    if plan is None:
        return None
    order, _row, vec = plan
    reductions = order[vec + 1:]
    return reductions[0] if len(reductions) == 1 else None


def distribute_low_dims(schedule: isl.Schedule, scop: Scop, deps: Deps) -> isl.Schedule:
    """Take statements with fewer loops than their band (matmul's ``C[i, j] = 0`` inside the
    ``i, j, k`` band; ``mean = 0`` inside the band below a row loop that isl made of a row's
    passes one after another, ``d``, ``D + d``, ``2D + d``) out of it, in front, when that is
    legal: their guards then leave the inner loops, and a sum into a local scalar is a
    reduction loop of its own. A statement is such when it has fewer iterators than the
    outermost band has members, or when a member that moves other statements keeps it at one
    value (with sizes fixed, isl drops the members of loops of one iteration, ``b`` of a
    batch of 1, and the count alone no longer tells). Of an outermost band all go or none;
    below one, each that can go in front of the rest (the row's ``var = 0`` does, its
    ``mean = mean / D`` does not). The bands are visited last first, so a change leaves the
    paths of those still to visit as they were."""
    for path in reversed([node_path(n) for n in all_bands(schedule)]):
        node = node_at(schedule, path)
        deps_of = member_dependence(node, scop)
        depth = node.band_n_member()
        moves = [any(m[k] for m in deps_of.values()) for k in range(depth)]
        outermost = not band_above(node)
        low = [s.name for s in scop.statements if s.name in deps_of and (
            (outermost and len(s.iters) < depth) or
            any(moves[k] and not deps_of[s.name][k] for k in range(depth)))]
        if not low or len(low) == len(deps_of):
            continue
        reaching = node.get_domain()
        groups = [low] if outermost else [[name] for name in low]
        picked: list[str] = []
        best = schedule
        for group in groups:
            candidate = _ordered_before(node, reaching, scop, [*picked, *group])
            if candidate is not None and is_legal(candidate, deps):
                picked, best = [*picked, *group], candidate
        schedule = best
    return schedule


def _ordered_before(node: isl.ScheduleNode, reaching: isl.UnionSet, scop: Scop,
                    names: list[str]) -> isl.Schedule | None:
    """The schedule with the instances of statements ``names`` that reach the band ``node``
    run before the band's others; None when those are none or all of them."""
    text = "; ".join(f"{n}[{', '.join(scop.statement(n).iters)}]" for n in names)
    picked = reaching.intersect(isl.UnionSet(f"{scop.param_space_text()} -> {{ {text} }}"))
    if picked.is_empty() or picked.is_equal(reaching):
        return None
    return node.order_before(picked).get_schedule()
