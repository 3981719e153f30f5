"""Band analysis for the automatic schedule: what each member of a permutable band moves
(per statement, the iterators it depends on), the strides and reuse of its accesses, a
tile's footprint, and the members' extents over the syms (what regions are made of)."""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..scop.exprs import Load
from ..scop.forward import read_only, repackable
from ..scop.ir import Scop
from .tree import node_at


@dataclass(frozen=True)
class BandTiling:
    """Tile the outermost band at ``path`` (child indices from the root) by ``sizes``."""

    path: tuple[int, ...]
    sizes: tuple[int, ...]
    # loops below the band (conv's ky, kx): the tiled code, register tiles in partial tiles
    # included, beats plain loops at every size, so no untiled "small" variant
    deep: bool = False
    # per member, the smallest extent at which the tiled code runs (shorter: the untiled
    # "small" variant); None: the tile sizes
    min_extents: tuple[int, ...] | None = None


def member_dependence(node: isl.ScheduleNode, scop: Scop) -> dict[str, list[set[str]]]:
    """For each statement, the set of its iterators each band member depends on."""
    mupa = node.band_get_partial_schedule()
    out: dict[str, list[set[str]]] = {}
    for k in range(mupa.dim(isl.dim_type.out)):
        upa = mupa.get_union_pw_aff(k)
        pieces: list[isl.PwAff] = []
        upa.foreach_pw_aff(pieces.append)
        for pa in pieces:
            name = pa.get_space().get_tuple_name(isl.dim_type.in_)
            stmt = scop.statement(name)
            used: set[str] = set()

            def piece(_set: isl.Set, aff: isl.Aff, used: set[str] = used,
                      iters: tuple[str, ...] = stmt.iters) -> None:
                for d, it in enumerate(iters):
                    if not aff.get_coefficient_val(isl.dim_type.in_, d).is_zero():
                        used.add(it)

            pa.foreach_piece(piece)
            out.setdefault(name, [set() for _ in range(mupa.dim(isl.dim_type.out))])[k] = used
    return out


def stride_one(scop: Scop, deps_of: dict[str, list[set[str]]], k: int) -> bool:
    """Every access of the band's statements is stride 0 or 1 along member ``k``."""
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        moving = members[k]
        refs = [stmt.target, *(e for e in stmt.value.walk() if isinstance(e, Load))]
        for ref in refs:
            if not isinstance(ref, Load):
                continue
            for d, sub in enumerate(ref.index):
                hit = sub.vars() & moving
                if hit and d != len(ref.index) - 1:
                    return False
    return True


def repacked_vector(scop: Scop, deps_of: dict[str, list[set[str]]], k: int) -> bool:
    """Member ``k`` can carry a register tile's vector through a repacked copy: every target
    moves along it in its last subscript only, and every read that moves along it other than
    with stride 1 is of an array no statement writes, subscripted by single iterators with
    coefficient 1 (nn.Linear's ``W[o, k]`` along ``o``): the emitter copies such a read with
    the member's dimension innermost (``codegen_c.repack``). True also where ``stride_one``
    holds."""
    only = read_only(scop)
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        moving = members[k]
        if isinstance(stmt.target, Load) and any(
                sub.vars() & moving and d != len(stmt.target.index) - 1
                for d, sub in enumerate(stmt.target.index)):
            return False
        for ref in stmt.value.walk():
            if isinstance(ref, Load) and any(sub.vars() & moving and d != len(ref.index) - 1
                                             for d, sub in enumerate(ref.index)) and \
                    (ref.array not in only or not repackable(ref)):
                return False
    return True


def has_reuse(scop: Scop, deps_of: dict[str, list[set[str]]], live: list[int]) -> bool:
    """Some read that moves along two or more live members does not move along another:
    tiling keeps its tile in cache. A read along one member at most (a bias row broadcast
    over a batch, a scale per row) is a vector the cache keeps without tiles."""
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        for ref in stmt.value.walk():
            if not isinstance(ref, Load):
                continue
            used = set().union(*(sub.vars() for sub in ref.index))
            moving = [k for k in live if members[k] & used]
            if 2 <= len(moving) < len(live):
                return True
    return False


def targets_move(scop: Scop, deps_of: dict[str, list[set[str]]], members: list[int]) -> bool:
    """Whether some statement of the band writes a cell whose subscripts move along one of
    ``members`` (``member_dependence``'s iterators per member): they are not reductions."""
    for name, iters in deps_of.items():
        target = scop.statement(name).target
        used = subscript_vars(target) if isinstance(target, Load) else set()
        if any(used & iters[k] for k in members):
            return True
    return False


def subscript_vars(ref: Load) -> set[str]:
    """The loop variables and syms that ``ref``'s subscripts use."""
    return set().union(*(aff.vars() for aff in ref.index))


def has_transposed_access(scop: Scop, deps_of: dict[str, list[set[str]]]) -> bool:
    """No member of the band can run innermost with every access along it in its last
    subscript (a transpose's read and write; not ``Y[b, d] += X[b, l, d]``, whose ``d``
    can): tiles keep both layouts' lines in cache. An access that does not move along a
    member (a scale per channel, ``g[c]``) is a value the loop keeps."""
    n = len(next(iter(deps_of.values()), []))

    def clean(k: int) -> bool:
        for name, members in deps_of.items():
            stmt = scop.statement(name)
            for ref in [stmt.target, *(e for e in stmt.value.walk() if isinstance(e, Load))]:
                if isinstance(ref, Load) and ref.index and members[k] and \
                        not (ref.index[-1].vars() & members[k]) and \
                        any(sub.vars() & members[k] for sub in ref.index[:-1]):
                    return False
        return True

    live = [k for k in range(n) if any(members[k] for members in deps_of.values())]
    return bool(live) and not any(clean(k) for k in live)


def elem_bytes(scop: Scop) -> int:
    """The element size register tiles and vectors are planned for: 8 where a tensor holds
    64-bit values, else 4."""
    return 8 if any(a.dtype in ("f64", "i64") for a in scop.arrays if a.is_tensor) else 4


def footprint_elems(node: isl.ScheduleNode, scop: Scop, sizes: list[int]) -> int:
    """Distinct array elements one tile touches (an upper bound: sum over access patterns of
    the product of each subscript's span over the tile)."""
    deps_of = member_dependence(node, scop)
    total = 0
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        it_size = {}
        for k, its in enumerate(members):
            for it in its:
                it_size[it] = sizes[k]
        for ref in [stmt.target, *(e for e in stmt.value.walk() if isinstance(e, Load))]:
            if not isinstance(ref, Load):
                continue
            key = (ref.array, tuple(str(i) for i in ref.index))
            if key in seen:
                continue
            seen.add(key)
            span = 1
            for sub in ref.index:
                span *= max([it_size.get(v, 1) for v in sub.vars()] or [1])
            total += span
    return total


def constant_members(deps_of: dict[str, list[set[str]]], n: int) -> list[bool]:
    return [all(not members[k] for members in deps_of.values()) for k in range(n)]


def at_least(extent: isl.PwAff, n: int) -> isl.Set:
    """The syms where ``extent`` (a member's extent, ``member_extents``) is at least ``n``."""
    return extent.ge_set(isl.PwAff.val_on_domain(
        extent.domain(), isl.Val.int_from_si(extent.get_ctx(), n)))


def member_extents(schedule: isl.Schedule, tiling: BandTiling) -> list[isl.PwAff]:
    """``max - min + 1`` of each member of the band, as piecewise affine functions of syms."""
    node = node_at(schedule, tiling.path)
    domain = node.get_domain()
    band = node.band_get_partial_schedule_union_map().intersect_domain(domain)
    image = isl.Set.from_union_set(band.range())
    out = []
    for k in range(image.dim(isl.dim_type.set)):
        lo, hi = image.dim_min(k), image.dim_max(k)
        out.append(hi.sub(lo).add_constant_val(isl.Val.one(image.get_ctx())))
    return out


def member_starts(schedule: isl.Schedule, tiling: BandTiling) -> list[isl.PwAff]:
    node = node_at(schedule, tiling.path)
    band = node.band_get_partial_schedule_union_map().intersect_domain(node.get_domain())
    image = isl.Set.from_union_set(band.range())
    return [image.dim_min(k) for k in range(image.dim(isl.dim_type.set))]


def vector_reuse(scop: Scop, deps_of: dict[str, list[set[str]]], row: int, vec: int) -> int:
    """How many reads that move along the vector member do not move along ``row``."""
    count = 0
    for name, members in deps_of.items():
        for ref in scop.statement(name).value.walk():
            if isinstance(ref, Load):
                used = set().union(*(sub.vars() for sub in ref.index))
                if used & members[vec] and not used & members[row]:
                    count += 1
    return count
