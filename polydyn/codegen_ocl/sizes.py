"""The sizes of a variant's kernels: the ``gpu`` directive's where the recipe gives them, else
the defaults below shrunk to the device's work-group limit; ``Sizes`` remembers the ones the
kernels used, which the mapping writes into the variant's recipe (schedule/gpu.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..schedule.gpu import GpuMapping
from .regtiles import BK, WORK_ITEMS

# Work-group extents by number of mapped members, outermost member first; the innermost
# member varies fastest (OpenCL dimension 0), so neighbouring work-items touch neighbouring
# elements along the stride-1 loop.
DEFAULT_TILES = {1: (256,), 2: (16, 16), 3: (2, 8, 16)}
LANES = 256  # work-items per row of a lane kernel (a power of two: the combine is a tree)
WIDE_LANES = 1024  # the same, where fewer rows than compute units leave the device idle
# a lane kernel reading along its member with stride 1 takes this many values per group (a
# warp's loads then cover 32 neighbours) with this many lanes each (more where few groups)
COLUMNS, COLUMN_LANES = 32, 8
# local-memory buffers per copied array of a register-tiled kernel: two, so that the next
# reduction tile is copied while the current one is computed, with one barrier per tile
# (the published SGEMM kernels for NVIDIA double-buffer; bench/gpu_probe.py times both)
STAGES = 2


def tile_sizes(n: int, max_group: int = 256) -> tuple[int, ...]:
    """Work-group extents for ``n`` mapped members, shrunk to the device's limit."""
    return _shrunk(DEFAULT_TILES[n], max_group)


def power_of_two(n: int) -> int:
    """The largest power of two at most ``n`` (at least 1)."""
    return 1 << (max(n, 1).bit_length() - 1)


class Sizes:
    """The sizes the kernels of one mapping take, given the directive and the device."""

    def __init__(self, given: GpuMapping, max_group: int):
        self.given = given
        self.max_group = max_group
        self.seen: dict[Any, Any] = {}  # group extents by member count; "lanes", "columns", "bk"

    def group(self, n: int) -> tuple[int, ...]:
        """Work-group extents for ``n`` mapped members."""
        out = self.given.group_of(n) or tile_sizes(n, self.max_group)
        self.seen[n] = out
        return out

    def register_items(self) -> tuple[tuple[int, ...], int, int]:
        """Work-items (rows, columns), reduction depth and local buffers per copied array
        of a register-tiled kernel."""
        return self.given.group_of(2) or _shrunk(WORK_ITEMS, self.max_group), \
            self.given.bk or BK, self.given.stages or STAGES

    def registers_used(self, items: tuple[int, ...], bk: int, stages: int) -> None:
        """A kernel took register tiles with these work-items, depth and buffers."""
        self.seen[2], self.seen["bk"], self.seen["stages"] = items, bk, stages

    @property
    def lanes(self) -> tuple[int, int]:
        """Lanes per row of a lane kernel, and of its alternative for launches of fewer rows
        than the device has compute units."""
        if self.given.lanes:
            return self.given.lanes[0], self.given.lanes[1]
        return power_of_two(min(LANES, self.max_group)), \
            power_of_two(min(WIDE_LANES, self.max_group))

    @property
    def columns(self) -> tuple[int, ...]:
        """Values per group and lanes per value of a lane kernel reading along its member."""
        return self.given.columns or (COLUMNS, COLUMN_LANES)

    def used(self, what: str, value: Any) -> None:
        """``value`` of ``what`` ("lanes", "columns") is what a kernel took."""
        self.seen[what] = value

    def only_lanes(self) -> None:
        """The mapping kept one lane kernel alone: the other kernels' sizes are gone."""
        self.seen = {"lanes": self.lanes}

    def recorded(self, outer: bool) -> GpuMapping:
        """The directive's choices with the sizes the kernels used filled in."""
        groups = {len(g): g for g in self.given.group}
        groups.update((k, v) for k, v in self.seen.items() if isinstance(k, int))
        return replace(self.given, outer=outer,
                       group=tuple(groups[n] for n in sorted(groups)),
                       lanes=self.given.lanes or self.seen.get("lanes", ()),
                       columns=self.given.columns or self.seen.get("columns", ()),
                       bk=self.given.bk or self.seen.get("bk", 0),
                       stages=self.given.stages or self.seen.get("stages", 0))


def _shrunk(sizes: tuple[int, ...], max_group: int) -> tuple[int, ...]:
    """``sizes`` with the largest halved until their product fits ``max_group``."""
    out = list(sizes)
    while math.prod(out) > max_group and max(out) > 1:
        k = out.index(max(out))
        out[k] //= 2
    return tuple(out)


__all__ = ["COLUMNS", "COLUMN_LANES", "DEFAULT_TILES", "LANES", "STAGES", "WIDE_LANES",
           "Sizes", "power_of_two", "tile_sizes"]
