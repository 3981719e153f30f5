"""The plan of an OpenCL variant: its kernels (grids, ASTs, local memory, register tiles) and
the host loops around their launches, as the mapping (mapping.py) decides them and the
emitter, the host code, the scalar spilling and the race check read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..astgen import ITERATOR
from ..lowering.tree import has_loop
from ..parametric.variants import Variant
from .promotion import LocalCopy
from .regtiles import Accumulator, RegisterTiles

HOST, OFFSET, GROUP, LOCAL = "pd_h", "pd_o", "pd_g", "pd_l"


@dataclass(frozen=True)
class Grid:
    """The mapped members of a kernel: prefix-schedule positions (outermost first), tile
    sizes (values of each member per work-group: work-items times the register tile), and
    the host expressions of each member's first and last value."""

    positions: tuple[int, ...]
    tiles: tuple[int, ...]
    lo: tuple[str, ...]
    hi: tuple[str, ...]


@dataclass(frozen=True)
class KernelSpec:
    """One OpenCL kernel: its name, how many host loop values it takes (``pd_h0``...), its
    grid (None: a single work-item), when the host launches it, and its body AST."""

    name: str
    n_host: int
    grid: Grid | None
    when: str
    statements: tuple[str, ...]
    ast: Any = field(compare=False, repr=False)  # Node
    local: tuple[LocalCopy, ...] = ()
    # promoted kernels: the AST loops over mapped members, ``(iterator, k)``, that the
    # emitter prints as work-item guards
    threads: tuple[tuple[str, int], ...] = ()
    # the same kernel without local memory, run when the buffers sized at launch are too big
    fallback: KernelSpec | None = None
    # { instance -> [host loop values, mapped member values] }: which launch and which
    # work-item runs each instance
    placement: Any = field(default=None, compare=False, repr=False)  # isl.UnionMap
    # work-items per value of the one mapped member (0: one work-item per value): its loops
    # are dealt out to them
    lanes: int = 0
    # values of that member per work-group of a lane kernel (0: one), and the member's last
    # value (an isl AST expression of the sizes: work-items past it store nothing)
    columns: int = 0
    last: Any = field(default=None, compare=False, repr=False)
    # each work-item computes a register tile of the two innermost mapped members
    # (regtiles.py); None: one value of each per work-item
    regtiles: RegisterTiles | None = None
    # the arrays whose cells the work-item holds in registers, and the mapped members whose
    # blocks are always full (their register loops need no guard)
    accumulators: tuple[Accumulator, ...] = ()
    full: tuple[int, ...] = ()
    # the iterators of the register loops of whole tiles (regtiles.py): no guard either
    free: tuple[str, ...] = ()
    # { instance -> [flat schedule] }: the order of a register-tiled kernel's instances in a
    # work-item (the race check verifies that it keeps every dependence)
    order: Any = field(default=None, compare=False, repr=False)  # isl.UnionMap
    # the same work in smaller work-groups (register tiles of half the size, one point per
    # work-item): the launch runs the first of this kernel and these whose groups fill the
    # device's compute units, else the last (host.py)
    alternatives: tuple[KernelSpec, ...] = ()

    def family(self) -> list[KernelSpec]:
        """This kernel, its fallback and its alternatives (with theirs): every kernel the
        program holds for this launch, in the order of the program's kernel ids."""
        out = [self] + ([self.fallback] if self.fallback is not None else [])
        for alt in self.alternatives:
            out += alt.family()
        return out

    @property
    def stages(self) -> int:
        """Local-memory buffers per copied array (2: double-buffered register tiles)."""
        return self.regtiles.stages if self.regtiles is not None else 1

    @property
    def dynamic_local(self) -> tuple[LocalCopy, ...]:
        return tuple(c for c in self.local if c.dynamic)

    def local_bytes_py(self) -> str:
        """Python expression: bytes of __local memory one work-group uses."""
        return " + ".join(f"({c.bytes_py()})" for c in self.local) or "0"

    @property
    def local_size(self) -> tuple[int, ...]:
        """OpenCL local size (dimension 0 first: the innermost mapped member)."""
        if self.lanes:
            return (self.lanes * max(1, self.columns),)
        if self.grid is None:
            return (1,)
        per_item = self.regtiles.per_item(len(self.grid.tiles)) if self.regtiles else \
            (1,) * len(self.grid.tiles)
        return tuple(t // r for t, r in zip(reversed(self.grid.tiles), reversed(per_item),
                                             strict=True))

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kernel": self.name, "statements": list(self.statements),
                               "host_iterators": [f"{HOST}{j}" for j in range(self.n_host)],
                               "when": self.when}
        if self.grid is None and self.lanes:
            out["grid"] = {"work_dims": 1, "local_size": [self.lanes], "groups": ["1"],
                           "lanes": self.lanes,
                           "note": "no mapped member: one work-group shares the loops"}
        elif self.grid is None:
            out["grid"] = {"work_dims": 1, "local_size": [1], "groups": ["1"],
                           "note": "no parallel loop: one work-item"}
        else:
            g = self.grid
            groups = [f"({hi} - ({lo})) // {t} + 1"
                      for lo, hi, t in zip(g.lo, g.hi, g.tiles, strict=True)]
            out["grid"] = {"work_dims": len(g.tiles), "local_size": list(self.local_size),
                           "groups": list(reversed(groups)),
                           "offsets": list(reversed(g.lo)),
                           "schedule_dims": [f"{ITERATOR}{p}" for p in reversed(g.positions)]}
            if self.lanes:
                out["grid"]["lanes"] = self.lanes
            if self.columns:
                out["grid"]["values_per_group"] = self.columns
            if self.regtiles:
                out["grid"]["register_tiles"] = self.regtiles.describe()
        out["local_memory"] = [c.describe() for c in self.local]
        if self.fallback is not None:
            out["local_bytes"] = self.local_bytes_py()
            out["fallback"] = f"{self.fallback.name} when local_bytes exceeds the device's limit"
        if self.alternatives:
            out["alternatives"] = [alt.describe() for alt in self.alternatives]
            out["choice"] = ("the first of this kernel and its alternatives whose work-groups "
                             "are at least the device's compute units, else the last")
        return out


@dataclass(frozen=True)
class HostLoop:
    """``for var in range(lo, hi + 1, step)`` on the host (when ``when`` holds) around
    launches."""

    var: str
    lo: str
    hi: str
    when: str
    body: tuple[Any, ...]
    step: int = 1

    def describe(self) -> dict[str, Any]:
        return {"for": self.var, "from": self.lo, "to": self.hi, "step": self.step,
                "when": self.when, "body": [item.describe() for item in self.body]}


@dataclass(frozen=True)
class VariantMapping:
    """A variant (carrying the schedule the kernels were generated from) and its launches."""

    variant: Variant
    host: tuple[Any, ...]  # HostLoop | KernelSpec, in launch order
    kernels: tuple[KernelSpec, ...]

    def describe(self) -> dict[str, Any]:
        return {"variant": self.variant.name, "region": str(self.variant.region),
                "schedule": self.variant.summary,
                "launches": [item.describe() for item in self.host]}

    @property
    def serial_statements(self) -> int:
        """Statements run by a single work-item inside loops (no parallel member found)."""
        return sum(len(k.statements) for k in self.kernels if k.grid is None and
                   not k.lanes and has_loop(k.ast))


__all__ = ["GROUP", "HOST", "LOCAL", "OFFSET", "Grid", "HostLoop", "KernelSpec",
           "VariantMapping"]
