"""The OpenCL mapping's choices as a recipe directive (``Schedule.gpu``): which isl schedule
is mapped, the work-items' register tiles, local memory, and the sizes PPCG and loopy leave
to the user (work-group extents, lanes per row, the reduction depth of a local tile). The
mapping (codegen_ocl/mapping.py) fills every choice it made into the variant's recipe, so
that the recipe maps the same way again and a tuner can vary one size at a time."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError

MAX_GROUP = 1024  # work-items per group on any device the mapping targets
MAX_BK = 64  # reduction steps per local-memory tile of register-tiled kernels
MAX_STAGES = 2  # local-memory buffers per copied array of register-tiled kernels


@dataclass(frozen=True)
class GpuMapping:
    """``outer``: isl's schedule computed with parallelism sought in the outermost band
    first (None: the mapping tries both); ``regtile``: "" (each kernel's choice), "off" or
    "TMxTN"; ``local``: tiles copied into local memory; ``group``: work-group extents, one
    tuple per number of mapped members (outermost member first; a register-tiled kernel
    takes the pair as its rows x columns of work-items); ``lanes``: (lanes per row, lanes per
    row where few rows leave the device idle) of lane kernels; ``columns``: (values per
    group, lanes per value) of lane kernels that read along their member; ``bk``: reduction
    steps per local-memory tile of register-tiled kernels; ``stages``: local-memory buffers
    per copied array of register-tiled kernels (2: the next reduction tile is copied while
    the current one is computed, one barrier per tile); ``vector``: copies into local memory
    load 16 bytes at a time where the tile's rows are aligned (tested in the kernel);
    ``product_order``: a band's parallel members are reordered so that the two innermost
    form an outer product (codegen_ocl/order.py: conv's output channels and columns, an
    implicit GEMM); ``members``: at most this many loops of a kernel's chain of parallel
    loops become the grid's dimensions, the innermost ones (1 to 3; the others run in each
    work-item). Empty or 0: the mapping's default for the device (``members``: 3)."""

    outer: bool | None = False
    regtile: str = ""
    local: bool = True
    group: tuple[tuple[int, ...], ...] = ()
    lanes: tuple[int, ...] = ()
    columns: tuple[int, ...] = ()
    bk: int = 0
    stages: int = 0
    vector: bool = True
    product_order: bool = True
    members: int = 0

    @staticmethod
    def checked(outer: Any = False, regtile: Any = "", local: Any = True, group: Any = (),
                lanes: Any = (), columns: Any = (), bk: Any = 0, stages: Any = 0,
                vector: Any = True, product_order: Any = True,
                members: Any = 0) -> GpuMapping:
        """The directive's arguments checked and in their canonical form (ScheduleError
        naming the argument otherwise)."""
        for name, flag in (("outer", outer), ("local", local), ("vector", vector),
                           ("product_order", product_order)):
            if not isinstance(flag, bool):
                raise ScheduleError(f"gpu({name}={flag!r}): True or False")
        try:
            parse_regtile(regtile)
        except ValueError as exc:
            raise ScheduleError(f"gpu(regtile={regtile!r}): {exc}") from None
        return GpuMapping(outer, regtile.strip().lower(), local, _groups(group),
                          _pair("lanes", lanes, "lanes per row and lanes per row where few "
                                "rows fill the device"),
                          _pair("columns", columns, "values per group and lanes per value"),
                          _bk(bk), _stages(stages), vector, product_order, _members(members))

    @staticmethod
    def from_args(args: tuple[Any, ...]) -> GpuMapping:
        """The directive a recipe's ``gpu`` step holds (the fields in order; a recipe saved
        with fewer takes the defaults for the others), checked: a step read from JSON has
        not been."""
        return GpuMapping.checked(*args)

    def args(self) -> tuple[Any, ...]:
        return (self.outer, self.regtile, self.local, self.group, self.lanes, self.columns,
                self.bk, self.stages, self.vector, self.product_order, self.members)

    def keywords(self) -> list[tuple[str, Any]]:
        """The settings that differ from the defaults, as ``(keyword, value)``."""
        default = GpuMapping()
        names = ("outer", "regtile", "local", "group", "lanes", "columns", "bk", "stages",
                 "vector", "product_order", "members")
        return [(n, v) for n, v, d in zip(names, self.args(), default.args(), strict=True)
                if v != d]

    def group_of(self, n: int) -> tuple[int, ...] | None:
        """The extents given for kernels of ``n`` mapped members, if any."""
        return next((g for g in self.group if len(g) == n), None)

    def fit(self, max_group: int) -> None:
        """ScheduleError where a size exceeds the device's work-group limit."""
        sizes = [("group", g, math.prod(g)) for g in self.group]
        if self.lanes:
            sizes.append(("lanes", self.lanes, self.lanes[1]))
        if self.columns:
            sizes.append(("columns", self.columns, math.prod(self.columns)))
        for name, value, items in sizes:
            if items > max_group:
                raise ScheduleError(f"gpu({name}={value!r}): {items} work-items per group, "
                                    f"the device allows {max_group}")


def _members(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
        raise ScheduleError(f"gpu(members={value!r}): the number of parallel loops a kernel "
                            "maps onto the grid, 1 to 3 (0: the default, 3)")
    return value


def parse_regtile(text: str) -> tuple[int, int] | None:
    """Register tiles as text: "" (the mapping chooses: None), "off" ((1, 1): none) or
    "TMxTN" (sizes 1 to 16); ValueError for anything else."""
    if not isinstance(text, str):
        raise ValueError("a string: '', 'off' or TMxTN such as '4x4'")
    text = text.strip().lower()
    if not text:
        return None
    if text == "off":
        return (1, 1)
    tm, sep, tn = text.partition("x")
    if not sep or not all(v.isascii() and v.isdigit() and 1 <= int(v) <= 16 for v in (tm, tn)):
        raise ValueError("choose 'off' or TMxTN with sizes 1 to 16 (such as 4x4)")
    return int(tm), int(tn)


def _ints(value: Any) -> tuple[int, ...] | None:
    try:
        out = tuple(value)
    except TypeError:
        return None
    if not out or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in out):
        return None
    return out


def _groups(group: Any) -> tuple[tuple[int, ...], ...]:
    """``group`` as extents per number of mapped members, fewest members first: a tuple of
    extents, or a tuple of such tuples (one per count)."""
    if isinstance(group, tuple | list) and not group:
        return ()
    single = _ints(group)
    entries = [single] if single is not None else \
        [_ints(g) for g in group] if isinstance(group, tuple | list) else [None]
    hint = ("work-group extents such as (16, 16), or one tuple per number of mapped loops "
            "such as ((256,), (16, 16))")
    if any(e is None or len(e) > 3 for e in entries):
        raise ScheduleError(f"gpu(group={group!r}): {hint}, 1 to 3 positive integers each")
    if len({len(e) for e in entries}) != len(entries):
        raise ScheduleError(f"gpu(group={group!r}): one tuple per number of mapped loops")
    for e in entries:
        if math.prod(e) > MAX_GROUP:
            raise ScheduleError(f"gpu(group={group!r}): {math.prod(e)} work-items per group, "
                                f"more than {MAX_GROUP}")
    return tuple(sorted(entries, key=len))


def _pair(name: str, value: Any, meaning: str) -> tuple[int, ...]:
    """``lanes`` or ``columns`` checked: two positive integers whose lanes are powers of two
    from 2 (lane sums combine as a tree), within a group's limit."""
    if isinstance(value, tuple | list) and not value:
        return ()
    pair = _ints(value)
    ok = pair is not None and len(pair) == 2
    if ok:
        lanes = pair if name == "lanes" else pair[1:]
        items = pair[1] if name == "lanes" else math.prod(pair)
        ok = all(v >= 2 and v & (v - 1) == 0 for v in lanes) and items <= MAX_GROUP and \
            (name != "lanes" or pair[1] >= pair[0])
    if not ok:
        raise ScheduleError(f"gpu({name}={value!r}): two positive integers, {meaning}; "
                            "lanes a power of two from 2 (their sums combine as a tree)" +
                            (", the second at least the first" if name == "lanes" else "") +
                            f", at most {MAX_GROUP} work-items per group")
    return pair


def _stages(stages: Any) -> int:
    if isinstance(stages, bool) or not isinstance(stages, int) or \
            not 0 <= stages <= MAX_STAGES:
        raise ScheduleError(f"gpu(stages={stages!r}): local-memory buffers per copied array, "
                            f"1 or {MAX_STAGES} (0: the mapping's choice)")
    return stages


def _bk(bk: Any) -> int:
    if isinstance(bk, bool) or not isinstance(bk, int) or not 0 <= bk <= MAX_BK:
        raise ScheduleError(f"gpu(bk={bk!r}): the reduction steps per local tile, 1 to "
                            f"{MAX_BK} (0: the mapping's choice)")
    return bk


__all__ = ["MAX_BK", "MAX_GROUP", "MAX_STAGES", "GpuMapping", "parse_regtile"]
