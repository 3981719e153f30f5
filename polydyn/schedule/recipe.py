"""Schedules as data (SPEC section 3): a recipe of directives, printable as the Python that
rebuilds it and serializable to JSON.

Two kinds of recipe share the type. A *loop recipe* (``pd.Schedule()``, then ``tile``,
``interchange``, ...) names the operator's own loops and replays on its loop tree
(``schedule.directives``). A *policy recipe* (``pd.Schedule.isl()``, then ``tile_band``,
``registers``, ...) starts from isl's schedule of the operator and states every choice the
automatic policy makes for a region (``schedule.variant``); the policy returns one per variant,
so ``k.variants[i].recipe`` replays to the same code. ``pd.Schedule.auto()`` asks the policy
to choose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError
from .gpu import GpuMapping

# The directives of loop recipes, of policy recipes, and the ones both take.
LOOP_DIRECTIVES = ("tile", "interchange", "fuse", "distribute", "parallel", "vectorize",
                   "unroll", "auto")
POLICY_DIRECTIVES = ("isl", "order_band", "tile_band", "keep_partial_tiles", "registers",
                     "no_packing", "wavefront", "fuse_inits", "single_thread")
COMMON_DIRECTIVES = ("double_buffer", "repack", "gpu", "label")
DIRECTIVES = LOOP_DIRECTIVES + POLICY_DIRECTIVES + COMMON_DIRECTIVES


def _positive(name: str, values: Any) -> tuple[int, ...]:
    out = tuple(values)
    if not out or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in out):
        raise ScheduleError(f"{name}: expected positive integers, got {values!r}")
    return out


def _path(name: str, path: Any) -> tuple[int, ...]:
    out = tuple(path)
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in out):
        raise ScheduleError(f"{name}: a band's path is child indices from the root of the "
                            f"schedule tree (non-negative integers), got {path!r}")
    return out


@dataclass(frozen=True)
class Schedule:
    """An immutable recipe; each method returns a new Schedule with one more directive."""

    steps: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def _add(self, name: str, *args: Any) -> Schedule:
        if name in POLICY_DIRECTIVES[1:] and not self.is_policy:
            raise ScheduleError(f"{name}() refines isl's schedule: start the recipe with "
                                f"pd.Schedule.isl()")
        if name in LOOP_DIRECTIVES and self.is_policy:
            raise ScheduleError(f"{name}() names the operator's loops; a recipe that starts "
                                "with pd.Schedule.isl() takes tile_band, registers, ... instead")
        return Schedule((*self.steps, (name, args)))

    # ---- loop recipes: the operator's own loops ---------------------------------------------

    def tile(self, **sizes: int) -> Schedule:
        """Tile perfectly nested loops: ``tile(i=64, j=256)`` (outer loop first)."""
        for loop, size in sizes.items():
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ScheduleError(f"tile({loop}={size!r}): sizes are positive integers")
        return self._add("tile", *sizes.items())

    def interchange(self, *loops: str) -> Schedule:
        """Reorder perfectly nested loops: ``interchange("j", "i")`` puts j outside i."""
        return self._add("interchange", *loops)

    def fuse(self, loop: str) -> Schedule:
        """Fuse consecutive sibling loops over ``loop`` into one loop."""
        return self._add("fuse", loop)

    def distribute(self, loop: str) -> Schedule:
        """Split the loop over ``loop`` into one loop per statement group in its body."""
        return self._add("distribute", loop)

    def parallel(self, *loops: str) -> Schedule:
        """Run these loops on threads (OpenMP); they must carry no dependence."""
        return self._add("parallel", *loops)

    def vectorize(self, loop: str) -> Schedule:
        """Vectorize an innermost loop (``omp simd``); it must carry no dependence."""
        return self._add("vectorize", loop)

    def unroll(self, loop: str, factor: int = 4) -> Schedule:
        """Unroll a loop by ``factor`` (a request to the C compiler)."""
        return self._add("unroll", loop, int(factor))

    @staticmethod
    def original() -> Schedule:
        """The operator's loops as written, untransformed (the plain-C baseline)."""
        return Schedule()

    @staticmethod
    def auto() -> Schedule:
        """The automatic policy (what polydyn chooses with no schedule)."""
        return Schedule((("auto", ()),))

    # ---- policy recipes: isl's schedule, refined --------------------------------------------

    @staticmethod
    def isl() -> Schedule:
        """isl's schedule of the operator (the original order where isl's scheduler gives
        up), untiled, its parallel loops on threads: the automatic policy's starting point."""
        return Schedule((("isl", ()),))

    def order_band(self, path: tuple[int, ...], order: tuple[int, ...]) -> Schedule:
        """Permute the members of the outermost band at ``path`` (child indices from the
        schedule tree's root): member ``k`` becomes isl's member ``order[k]``. Give it before
        ``tile_band``, whose sizes then follow the new order. The band must stay legal (a
        permutable band always does; otherwise a ScheduleError names the dependence)."""
        order_ = tuple(order)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in order_) or \
                sorted(order_) != list(range(len(order_))):
            raise ScheduleError(f"order_band: expected a permutation of 0..n-1, got {order!r}")
        return self._add("order_band", _path("order_band", path), order_)

    def tile_band(self, path: tuple[int, ...], sizes: tuple[int, ...],
                  deep: bool = False) -> Schedule:
        """Tile the outermost band at ``path`` (child indices from the schedule tree's root)
        by ``sizes``, one per member; order its point loops for vectors and give them
        register tiles where a reduction allows (of the target's ``deep`` shape when
        ``deep``: the band has loops below it, conv's window), copying the vector operand's
        tiles into local buffers unless ``no_packing``. A band that reads an f32 array in
        another order than it writes, tiled 16 x 16 over the members the arrays run along,
        transposes each full tile of the read in registers (``schedule/transposes.py``)."""
        args: tuple[Any, ...] = (_path("tile_band", path), _positive("tile_band", sizes))
        return self._add("tile_band", *(args + ((True,) if deep else ())))

    def keep_partial_tiles(self) -> Schedule:
        """Tile without isolating full tiles (for regions where every tile is full)."""
        return self._add("keep_partial_tiles")

    def registers(self, rows: int, vector_bytes: int, transposed: bool = False) -> Schedule:
        """Untiled code with register tiles of ``rows`` rows of ``vector_bytes`` bytes of
        accumulators (``transposed``: the vector along the rows' member, conv's output
        channels)."""
        rows_, width = _positive("registers", (rows, vector_bytes))
        return self._add("registers", rows_, width, *((True,) if transposed else ()))

    def no_packing(self) -> Schedule:
        """Leave the vector operand's tiles in place (no packed copies)."""
        return self._add("no_packing")

    def wavefront(self, path: tuple[int, ...], sizes: tuple[int, int]) -> Schedule:
        """Tile the fused band at ``path`` of isl's schedule over the whole context (a
        time-iterated stencil) by ``sizes`` on its two outer members, tiles in wavefronts."""
        sizes_ = _positive("wavefront", sizes)
        if len(sizes_) != 2:
            raise ScheduleError(f"wavefront: two tile sizes (time, rows), got {sizes!r}")
        return self._add("wavefront", _path("wavefront", path), sizes_)

    def fuse_inits(self) -> Schedule:
        """Run the statements that initialize register-tile cells (``C = 0``) inside the
        register tiles that hold those cells' whole reduction."""
        return self._add("fuse_inits")

    def single_thread(self) -> Schedule:
        """Run every loop on one thread."""
        return self._add("single_thread")

    # ---- both ---------------------------------------------------------------------------------

    def double_buffer(self) -> Schedule:
        """Rewrite a time loop that computes a temporary and copies it back into one whose
        steps take the two arrays in turn (``scop.buffers``). It changes the operator for
        every variant: give it in every variant's recipe or in none."""
        return self._add("double_buffer")

    def repack(self) -> Schedule:
        """Keep a product's sum in its output cell where register tiles can read an operand
        that runs along the cell's last subscript in another subscript (nn.Linear's
        ``W[o, k]``) from a copy repacked per call; without it such a product is a dot
        product per cell, held in a scalar (``scop.hold``). It rewrites the operator for
        this variant only (CPU)."""
        return self._add("repack")

    def gpu(self, outer: bool = False, regtile: str = "", local: bool = True,
            group: Any = (), lanes: Any = (), columns: Any = (), bk: int = 0,
            stages: int = 0, vector: bool = True, product_order: bool = True,
            members: int = 0) -> Schedule:
        """The OpenCL mapping's choices (the GPU target's part of the schedule; the C
        target ignores it): with ``outer``, isl's schedule computed with parallelism sought
        in the outermost band first (PPCG's setting for GPUs; policy recipes only), else
        isl's default one; ``regtile``, the register tiles of the work-items: "" (each
        kernel's own choice), "off" or "TMxTN" (1 to 16 each); without ``local``, no tile
        is copied into local memory (and so no register tiles either, which stage their
        operands there); ``group``, work-group extents per number of mapped loops
        (``(16, 16)`` or ``((256,), (16, 16))``; a register-tiled kernel's work-items
        take the pair); ``lanes``, lane kernels' lanes per row and per row where few rows
        leave the device idle (``(256, 1024)``); ``columns``, values per group and lanes
        per value of lane kernels that read along their loop (``(32, 8)``); ``bk``,
        reduction steps per local-memory tile of register-tiled kernels; ``stages``, their
        local-memory buffers per copied array (2: the next tile is copied while the current
        one is computed; 1: copy, then compute); without ``vector``, copies into local
        memory load an element at a time (with it, 16 bytes where the rows are aligned);
        without ``product_order``, policy recipes keep isl's order of parallel loops (with
        it, two whose operands each move along one of them go innermost, where the work-items'
        register tiles run: conv's output channels and columns); ``members``, at most this
        many of a kernel's nested parallel loops (1 to 3, the innermost ones) become the
        grid's dimensions, the outer ones running in each work-item. Empty or 0: the
        device's default (three loops). The automatic policy records what it chose here,
        so that the recipe maps the same way again (schedule/gpu.py)."""
        mapping = GpuMapping.checked(outer, regtile, local, group, lanes, columns, bk, stages,
                                     vector, product_order, members)
        if outer and not self.is_policy:
            raise ScheduleError("gpu(outer=True) chooses among isl's schedules: start the "
                                "recipe with pd.Schedule.isl()")
        return self._add("gpu", *mapping.args())

    def label(self, name: str) -> Schedule:
        """Name the variant (its function in the generated code, ``k.explain``)."""
        if not isinstance(name, str) or not name.strip() or not name.isprintable() or \
                "*/" in name:
            raise ScheduleError(f"label({name!r}): a variant's name is a line of printable "
                                "text")
        return self._add("label", name)

    def on_gpu(self, mapping: GpuMapping) -> Schedule:
        """This variant's recipe as the OpenCL target runs it, with the mapping's choices
        (``gpu``): a policy recipe is isl's schedule so mapped (the CPU policy's tiling,
        register tiles and threads do not apply), keeping the operator's rewrites; a loop
        recipe stays as given, its mapping stated. The label stays last."""
        if self.is_policy:
            kept = [step for step in self.steps[1:] if step[0] in ("double_buffer", "repack")]
            out = Schedule((self.steps[0], *kept))
        else:
            kept = [step for step in self.steps if step[0] not in ("gpu", "label")]
            out = Schedule(tuple(kept))
        out = out._add("gpu", *mapping.args())
        return out if self.name is None else out.label(self.name)

    @property
    def gpu_mapping(self) -> GpuMapping | None:
        """The last ``gpu`` directive's choices, if any."""
        given = self.args("gpu")
        return GpuMapping.from_args(given[-1]) if given else None

    # ---- reading a recipe ---------------------------------------------------------------------

    @property
    def is_auto(self) -> bool:
        return any(name == "auto" for name, _ in self.steps)

    @property
    def is_policy(self) -> bool:
        """A policy recipe: isl's schedule refined (``Schedule.isl()``)."""
        return bool(self.steps) and self.steps[0][0] == "isl"

    def has(self, name: str) -> bool:
        return any(step == name for step, _ in self.steps)

    def args(self, name: str) -> list[tuple[Any, ...]]:
        """The arguments of every ``name`` directive, in order."""
        return [args for step, args in self.steps if step == name]

    @property
    def name(self) -> str | None:
        """The variant's name given by ``label`` (the last one), if any."""
        labels = self.args("label")
        return labels[-1][0] if labels else None

    # ---- text forms ---------------------------------------------------------------------------

    def to_json(self) -> list[list[Any]]:
        return [[name, [_to_json(a) for a in args]] for name, args in self.steps]

    @staticmethod
    def from_json(data: str | list[Any]) -> Schedule:
        steps = json.loads(data) if isinstance(data, str) else data
        out = []
        for name, args in steps:
            if name not in DIRECTIVES:
                raise ScheduleError(f"unknown directive {name!r}; known: {', '.join(DIRECTIVES)}")
            out.append((name, tuple(_from_json(a) for a in args)))
        return Schedule(tuple(out))

    def describe(self) -> str:
        parts = []
        for name, args in self.steps:
            text = ", ".join(f"{a[0]}={a[1]}" if _is_pair(name, a) else repr(a) for a in args)
            parts.append(f"{name}({text})")
        return ".".join(parts) or "original loop order"

    def _calls(self) -> list[str] | None:
        """The recipe as ``pd.Schedule`` calls, one per directive (None when its steps
        cannot be made by calls: an ``auto`` after the first step, read from JSON)."""
        first = self.steps[0][0] if self.steps else None
        out = ["pd.Schedule.isl()" if first == "isl" else
               "pd.Schedule.auto()" if first == "auto" else "pd.Schedule()"]
        for k, (name, args) in enumerate(self.steps):
            if k == 0 and name in ("isl", "auto"):
                continue
            if name in ("isl", "auto"):
                return None
            if name == "tile":
                text = ", ".join(f"{v}={s}" for v, s in args)
            elif name in ("tile_band", "registers") and len(args) == 3:
                flag = "deep" if name == "tile_band" else "transposed"
                text = f"{args[0]!r}, {args[1]!r}, {flag}=True"
            elif name == "gpu":  # the settings that differ from the defaults, by keyword
                text = ", ".join(f"{key}={value!r}"  # as given: printing checks nothing
                                 for key, value in GpuMapping(*args).keywords())
            else:
                text = ", ".join(repr(a) for a in args)
            out.append(f".{name}({text})")
        return out

    def __repr__(self) -> str:
        calls = self._calls()
        if calls is None:
            return f"pd.Schedule.from_json({json.dumps(self.to_json())!r})"
        return "".join(calls)

    def __str__(self) -> str:
        calls = self._calls()
        if calls is None:
            return repr(self)
        return "\n    ".join(calls)


def _is_pair(name: str, arg: Any) -> bool:
    return name == "tile" and isinstance(arg, tuple)


def _to_json(arg: Any) -> Any:
    return [_to_json(a) for a in arg] if isinstance(arg, tuple) else arg


def _from_json(arg: Any) -> Any:
    return tuple(_from_json(a) for a in arg) if isinstance(arg, list) else arg
