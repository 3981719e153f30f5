"""Time tiling of iterated stencils (jacobi-2d): isl's fused schedule for them is one
permutable band whose members all carry dependences (``[t, t + i, t + j]`` once
``scop.buffers`` has made jacobi's temporary a double buffer, ``[t, 2t + i, 2t + j]`` with
the copy: skewed, no parallel loop), so the base schedule falls back to the program's own
loops. Here that band is tiled on its two outer members (time and the outer space member:
parallelogram tiles), the tiles run in wavefronts (every tile with the same ``T + I`` is
independent of the others, since all dependence distances in a permutable band are
non-negative: the wavefront's tiles are shared out among the threads), and the inner
members stay untiled below the point loops, with the statements distributed there when
that is legal: each statement's innermost loop then carries nothing and is a stride-1
vector loop. Other outermost bands (the double buffer's first copy) keep isl's schedule.

A tile touches ``I + skew * T + reach`` rows of each array in turn, so the rows a stencil
sweep would bring in from memory for every time step stay in the L2 for ``T`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..scop.deps import Deps
from ..scop.ir import Scop
from .bands import BandTiling, at_least, member_extents
from .legality import is_legal
from .transforms import multi_val, outermost_bands
from .tree import node_at, node_path, statement_names

# Tile sizes (time steps, rows of the skewed outer space member; the sizes measured are in
# bench/HISTORY.md, point 5c). A tile of 5 x 32 touches 32 + 5 + 2 rows of A and of B: 0.6
# MiB at 2000 f32 columns, within the 1 MiB L2. Five steps give four time tiles at T = 20,
# two per thread in each full wavefront; ten give two, one wavefront of two tiles.
WAVE_SIZES = (5, 32)
# Time tiles a wavefront needs before it pays: with fewer than two, the wavefronts hold
# one tile each and run on one thread (the program's loops then run instead). A wavefront
# holds at most T / 5 tiles whatever the thread count: sized for the two cores here; with
# many more threads than that the program's loops may be the faster code.
WAVE_MIN_TIME_TILES = 2


@dataclass(frozen=True)
class WaveTiling:
    """Tile the band at ``path`` of ``schedule`` (isl's fused schedule over the whole
    context) by ``sizes`` on its two outer members and run the tiles in wavefronts."""

    schedule: isl.Schedule = field(compare=False)
    path: tuple[int, ...]
    sizes: tuple[int, int]

    def describe(self) -> str:
        return f"wavefront tiles {self.sizes[0]} x {self.sizes[1]} (time-tiled)"


def wavefront_plan(scop: Scop, schedule: isl.Schedule | None, max_tile: int | None = None
                   ) -> WaveTiling | None:
    """The plan for an operator whose isl schedule (``schedule``, over the context) has one
    outermost permutable band of three or more members, none parallel, over the whole loop
    nest of its statements (a time-iterated stencil); other outermost bands (a double
    buffer's first copy) stay as they are. None for any other. ``max_tile`` caps the tile
    sizes."""
    if schedule is None:
        return None
    stencils = [band for band in outermost_bands(schedule) if _time_iterated(scop, band)]
    if len(stencils) != 1:
        return None
    time, rows = WAVE_SIZES
    sizes = (min(time, max_tile), min(rows, max_tile)) if max_tile else WAVE_SIZES
    return WaveTiling(schedule, node_path(stencils[0]), sizes)


def _time_iterated(scop: Scop, band: isl.ScheduleNode) -> bool:
    n = band.band_n_member()
    return n >= 3 and bool(band.band_get_permutable()) and \
        not any(band.band_member_get_coincident(k) for k in range(n)) and \
        band.child(0).get_type() == isl.schedule_node_type.leaf and \
        all(len(scop.statement(s).iters) == n for s in statement_names(band.get_domain()))


def wavefront_region(scop: Scop, wave: WaveTiling) -> isl.Set:
    """Where the wavefronts have work for two threads: at least ``WAVE_MIN_TIME_TILES``
    time tiles."""
    time = member_extents(wave.schedule, BandTiling(wave.path, wave.sizes))[0]
    return scop.context.intersect(at_least(time, WAVE_MIN_TIME_TILES * wave.sizes[0]))


def wavefront_tile(scop: Scop, deps: Deps, wave: WaveTiling, region: isl.Set
                   ) -> isl.Schedule | None:
    """The wavefront-tiled schedule under ``region`` (None if it came out illegal, which
    the construction rules out; checked all the same)."""
    schedule = wave.schedule.intersect_domain(scop.domain().intersect_params(region))
    node = node_at(schedule, wave.path).band_split(2)  # [time, outer] over the inner members
    node = node.band_tile(multi_val(node.band_get_space(), wave.sizes))
    # the tile band: [T, I] (tile indices) -> [T + I, I], the second member parallel
    tiles = node.band_get_partial_schedule()
    ctx = tiles.get_ctx()
    t, i = (tiles.get_union_pw_aff(k).scale_down_val(isl.Val.int_from_si(ctx, size))
            for k, size in enumerate(wave.sizes))
    members = isl.UnionPwAffList.alloc(ctx, 2).add(t.add(i)).add(i)
    node = node.delete().insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_pw_aff_list(tiles.get_space(), members))
    node = node.band_member_set_coincident(1, 1)
    inner = node.child(0).child(0)  # below the point band [t, i]: the untiled members
    mine = statement_names(inner.get_domain())
    if len(mine) > 1:
        filters = isl.UnionSetList.alloc(ctx, len(mine))
        for stmt in (s for s in scop.statements if s.name in mine):  # program order
            filters = filters.add(isl.UnionSet(
                f"{scop.param_space_text()} -> {{ {stmt.name}[{', '.join(stmt.iters)}] }}"))
        distributed = inner.insert_sequence(filters)
        if is_legal(distributed.get_schedule(), deps):
            inner = distributed
    schedule = inner.get_schedule()
    return schedule if is_legal(schedule, deps) else None
