"""What the partition decides per region: a variant's plan (name, region, recipe) and the
automatic policy's choice for it (``AutoRecipe``), which reads and writes as a policy recipe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import islpy as isl

from ..errors import ScheduleError
from ..schedule.bands import BandTiling
from ..schedule.gpu import GpuMapping
from ..schedule.recipe import Schedule
from ..schedule.registers import MAX_REG_VECTOR_BYTES, RegisterShape
from ..schedule.wavefront import WaveTiling


@dataclass(frozen=True)
class VariantPlan:
    """What to build for one region: a name, the region, and the schedule recipe (or None for
    the automatic schedule)."""

    name: str
    region: Any  # isl.Set over the syms
    recipe: Any = None


@dataclass(frozen=True)
class AutoRecipe:
    """The automatic policy's choice for a region: tile the planned bands or not, isolate
    full tiles or not, and let loops run on threads or not. ``to_schedule`` writes it as a
    policy recipe (``pd.Schedule.isl()...``), ``from_schedule`` reads one back."""

    tile: tuple[BandTiling, ...] = ()
    isolate: bool = True
    # member orders of isl's bands (path, order), applied before anything else: the
    # batch and rows' members of a product exchanged (``_rows_exchange``)
    orders: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    parallel: bool = True
    # untiled: the register tiles' shape (None: the target's ``deep`` shape in deep bands,
    # its ``registers`` in others; target.CpuTarget)
    registers: RegisterShape | None = None
    # tiled: copy the vector operand's tiles into local buffers (matmul's B)
    pack: bool = True
    # time-tiled: isl's fused band in wavefronts of tiles (then ``tile`` is unused)
    wave: WaveTiling | None = None
    # statements that initialize register-tile cells run inside the tiles (schedule.inits)
    fuse_inits: bool = True
    # the OpenCL mapping's choices (``Schedule.gpu``), where the recipe gives them; the C
    # target ignores them
    gpu: GpuMapping | None = None

    def describe(self) -> str:
        if self.wave is not None:
            parts = [self.wave.describe()]
        elif not self.tile:
            parts = ["untiled"]
            if self.registers is not None:
                parts.append(f"{self.registers.rows}-row register tiles of "
                             f"{self.registers.vector_bytes} bytes" +
                             (", transposed" if self.registers.transposed else ""))
        else:
            sizes = "; ".join("x".join(str(s) for s in t.sizes) for t in self.tile)
            parts = [f"tiled {sizes}" + (" (full tiles isolated)" if self.isolate else "")]
            if not self.pack:
                parts.append("not packed")
        parts += [f"members of band {path} in order {order}" for path, order in self.orders]
        parts.append("threads when the work pays" if self.parallel else "single thread")
        return ", ".join(parts)

    def to_schedule(self, name: str | None = None, buffered: bool = False,
                    repacked: bool = False) -> Schedule:
        """This choice as a policy recipe: every decision a directive (``name``: the
        variant's label; ``buffered``: the operator was double-buffered; ``repacked``: the
        variant runs the rewrite for repacked register tiles)."""
        recipe = Schedule.isl()
        if buffered:
            recipe = recipe.double_buffer()
        if repacked:
            recipe = recipe.repack()
        for path, order in self.orders:
            recipe = recipe.order_band(path, order)
        if self.wave is not None:
            recipe = recipe.wavefront(self.wave.path, self.wave.sizes)
        recipe = self._tiles(recipe)
        if self.registers is not None:
            shape = self.registers
            recipe = recipe.registers(shape.rows, shape.vector_bytes, shape.transposed)
        if self.fuse_inits and self.wave is None:
            recipe = recipe.fuse_inits()
        if not self.parallel:
            recipe = recipe.single_thread()
        return self._named(recipe, name)

    def _tiles(self, recipe: Schedule) -> Schedule:
        """``recipe`` with the tiling's directives."""
        for tiling in self.tile:
            recipe = recipe.tile_band(tiling.path, tiling.sizes, deep=tiling.deep)
        if self.tile and not self.isolate:
            recipe = recipe.keep_partial_tiles()
        if self.tile and not self.pack:
            recipe = recipe.no_packing()
        return recipe

    def _named(self, recipe: Schedule, name: str | None) -> Schedule:
        """``recipe`` with the OpenCL mapping's choices given, and the label."""
        if self.gpu is not None:
            recipe = recipe.gpu(**dict(self.gpu.keywords()))
        return recipe.label(name) if name else recipe

    @staticmethod
    def from_schedule(recipe: Schedule, computed: isl.Schedule | None) -> AutoRecipe:
        """The choice a policy recipe states. ``computed``: isl's schedule of the operator
        over its context, the one a ``wavefront`` directive tiles."""
        wave = None
        for path, sizes in recipe.args("wavefront"):
            if computed is None:
                raise ScheduleError("wavefront: isl's scheduler found no schedule for this "
                                    "operator, so there is no fused band to tile")
            wave = WaveTiling(computed, tuple(path), tuple(sizes))
        shapes = [RegisterShape(a[0], a[1], bool(a[2:] and a[2]))
                  for a in recipe.args("registers")]
        if any(s.vector_bytes > MAX_REG_VECTOR_BYTES for s in shapes):
            raise ScheduleError(f"registers: at most {MAX_REG_VECTOR_BYTES} bytes of "
                                "accumulators per row")
        tiles = tuple(BandTiling(tuple(a[0]), tuple(a[1]), bool(a[2:] and a[2]))
                      for a in recipe.args("tile_band"))
        orders = tuple((tuple(a[0]), tuple(a[1])) for a in recipe.args("order_band"))
        return AutoRecipe(tile=tiles, isolate=not recipe.has("keep_partial_tiles"),
                          orders=orders,
                          parallel=not recipe.has("single_thread"),
                          registers=shapes[-1] if shapes else None,
                          pack=not recipe.has("no_packing"), wave=wave,
                          fuse_inits=recipe.has("fuse_inits"),
                          gpu=recipe.gpu_mapping)
