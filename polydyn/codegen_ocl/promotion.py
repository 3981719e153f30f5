"""Local-memory promotion of reused tiles, in the manner of PPCG.

For a kernel whose mapped members are directly followed by a sequential member ``r`` (the
``k`` of matmul), the kernel's schedule is changed, for one work-group (its group ids are
parameters), to

    [host values, outer chain members]  [r tile: r - r mod R]      (uniform in the group)
      sequence:
        copy statements PDCOPY_<array>: the tile of each promoted array, all work-items
        [mapped members]  [r point, everything below]               (one point per work-item)

Without such a member (a stencil sweep) the copies run once, before the mapped members.
Moving the ``r`` tile loop above the mapped members is legal because the mapped members are
coincident: every dependence inside a launch stays within one work-item, whose instances keep
their order. The copy statements are inserted with an isl extension node (as PPCG's
``gpu_tree`` does); the emitter prints each as ``barrier; cooperative copy; barrier``, and
prints the loops of the mapped members as work-item guards, so every barrier is reached by
the whole work-group (guards on the local ids sit below the copies).

An array is promoted when it is read and not written in the kernel, when two work-items of
the group read a common element in the same ``r`` tile (reuse: ``A[i, k]`` does not depend
on ``j``), and when its footprint per tile, the isl relation
``{ [outer values, r tile] -> A[...] }``, has a bounding box that fits: per dimension
``dim_max - dim_min + 1``, maxed over every group and tile. A constant extent gives a
``__local`` array in the kernel (matmul: 16x16 tiles of A and B). An extent that grows with
the syms (conv2d's window ``8 + KH - 1``, layernorm's ``gamma[0..D)``) is bounded by a
function of the syms alone; the buffer is then a ``__local`` kernel argument that the host
sizes per launch, and a plain twin of the kernel runs when it would not fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import islpy as isl

from ..astgen import ITERATOR, new_build
from ..lowering.tree import Block, If, Instance, Loop, MarkNode, Node, from_isl
from ..schedule.tree import is_band, is_sequential_mark, node_at, node_path
from ..scop.checks import array_bounds
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Scop
from .limits import LOCAL_BUDGET
from .pyexpr import pw_aff_to_py

R_TILE = 16  # points of the sequential member per copy
COPY = "PDCOPY_"
SYNC = "PDSYNC"  # the barrier that ends a double-buffered kernel's reduction tile (regtiles.py)
# Promotion is an optimization: a footprint that is no single convex piece, or whose extent
# is piecewise over more than a few pieces, is not promoted (its box and the bound of its
# extent in the syms took isl minutes on fuzz operators: unions of hundreds of pieces)
MAX_EXTENT_PIECES = 4
OUTER = "pd_u"


@dataclass(frozen=True)
class LocalCopy:
    """One promoted array: its ``__local`` box and, as isl AST expressions in the copy
    statement's arguments ``pd_u0``... (host values, outer members, ``r`` tile), the first
    and last element of the box along each dimension.

    ``sizes[j]`` is the box's extent along dimension j when it is a constant; None when it
    depends on the syms (conv2d's ``8 + KH - 1``): the bound is then ``size_c[j]`` (an AST
    expression in the syms, for the kernel) and ``size_py[j]`` (Python, for the host), the
    buffer is a ``__local`` kernel argument sized at launch, and a plain twin of the kernel
    runs when the sizes exceed the local memory."""

    array: str
    sizes: tuple[int | None, ...]
    lo: tuple[Any, ...] = field(compare=False)  # isl.AstExpr
    hi: tuple[Any, ...] = field(compare=False)
    itemsize: int = 4
    size_c: tuple[Any, ...] = field(default=(), compare=False)  # isl.AstExpr or None
    size_py: tuple[str | None, ...] = ()

    @property
    def statement(self) -> str:
        return f"{COPY}{self.array}"

    @property
    def buffer(self) -> str:
        return f"pd_loc_{self.array}"

    @property
    def dynamic(self) -> bool:
        return None in self.sizes

    def extents_py(self) -> list[str]:
        """Python expressions of the box's extents (host side)."""
        exprs = self.size_py or (None,) * len(self.sizes)
        return [str(s) if s is not None else f"max(1, {e})"
                for s, e in zip(self.sizes, exprs, strict=True)]

    def bytes_py(self) -> str:
        """Python expression of the buffer's size in bytes (a constant when static)."""
        return " * ".join([str(self.itemsize), *self.extents_py()])

    def describe(self) -> dict[str, Any]:
        return {"array": self.array, "box": self.extents_py(), "bytes": self.bytes_py(),
                "first": [e.to_C_str() for e in self.lo]}


@dataclass(frozen=True)
class Promotion:
    """A promoted kernel: its AST, its copies, and the iterators of the mapped members
    (``(name, k)``: the loop over mapped member k, printed as a work-item guard)."""

    ast: Any  # Node
    copies: tuple[LocalCopy, ...]
    threads: tuple[tuple[str, int], ...]


def promote(scop: Scop, schedule: isl.Schedule, domain: isl.UnionSet, depth: int,
            chain: list[isl.ScheduleNode], mapped: list[isl.ScheduleNode],
            tiles: tuple[int, ...], params: list[str], kctx: isl.Set,
            budget: int = LOCAL_BUDGET) -> Promotion | None:
    """The promoted form of a kernel, or None when nothing is worth promoting."""
    positions = [b.get_schedule_depth() for b in mapped]
    chain_depths = [b.get_schedule_depth() for b in chain]
    if chain_depths[-len(mapped):] != positions:
        return None  # a single-valued member after the mapped ones: keep it simple
    below = mapped[-1].child(0)
    hoist = below.get_type() == isl.schedule_node_type.mark and \
        is_sequential_mark(below) and \
        is_band(below.child(0))
    prefix = below.get_prefix_schedule_union_map().intersect_domain(domain)
    group = prefix.intersect_range(isl.UnionSet.from_set(
        tile_set(params, positions[-1] + 1, depth, positions, tiles))).domain()
    if group.is_empty():
        return None
    top = node_path(mapped[0].parent())
    if node_at(schedule, top).is_subtree_anchored():
        return None  # a recipe's tile isolates full tiles below: isl moves no band there
    # tree edits on the whole schedule (paths stay valid), the group's domain at the end
    if hoist:  # copies per tile of r (matmul's k)
        sched = _hoist_r_tile(schedule, node_path(below.child(0)), top)
        graft_at = node_at(sched, top).child(0)
    else:  # one copy per launch (a stencil's halo tile)
        graft_at = node_at(schedule, top)
    outer = graft_at.get_prefix_schedule_union_map().intersect_domain(group)
    threads_map = prefix.intersect_domain(group).apply_range(_pick(positions[-1] + 1, positions))
    copies, footprints = choose_copies(scop, group, outer, threads_map, kctx, budget)
    if not copies:
        return None
    extension = isl.UnionMap.empty(group.get_space())
    for copy, fp in zip(copies, footprints, strict=True):
        # { [outer values, r tile] -> PDCOPY_A[outer values, r tile] } where A has a tile
        ident = isl.Map.identity(fp.get_space().map_from_set()).intersect_domain(fp)
        extension = extension.union(isl.UnionMap.from_map(
            ident.set_tuple_name(isl.dim_type.out, copy.statement)))
    sched = graft_at.graft_before(isl.ScheduleNode.from_extension(extension)).get_schedule()
    sched = sched.intersect_domain(group)
    ast = from_isl(new_build(kctx).node_from_schedule(sched))
    threads = tuple((f"{ITERATOR}{p + int(hoist)}", k) for k, p in enumerate(positions))
    if not threads_enclose_statements(ast, {name for name, k in threads if tiles[k] > 1}):
        return None
    if not copies_unconditional(ast):
        return None
    return Promotion(ast, tuple(copies), threads)


# --------------------------------------------------------------------------------------------
# Tree surgery


def _hoist_r_tile(sched: isl.Schedule, r_path: tuple[int, ...],
                  above_path: tuple[int, ...]) -> isl.Schedule:
    """Tile the ``r`` band by R_TILE and move its tile member above the mapped members."""
    node = node_at(sched, r_path)
    space = node.band_get_space()
    sizes = isl.MultiVal.zero(space).set_val(0, isl.Val.int_from_si(space.get_ctx(), R_TILE))
    node = node.band_tile(sizes)
    tile = node.band_get_partial_schedule()
    node = node.delete()
    node = node_at(node.get_schedule(), above_path).insert_partial_schedule(tile)
    return node.get_schedule()


def tile_set(params: list[str], n_dims: int, depth: int, positions: list[int],
              tiles: tuple[int, ...]) -> isl.Set:
    """``{ [p...] : p_j = pd_h<j>, pd_o<k> + T pd_g<k> <= p_pos < pd_o<k> + T (pd_g<k> + 1) }``:
    the prefix values of one work-group."""
    dims = [f"p{j}" for j in range(n_dims)]
    cons = [f"p{j} = pd_h{j}" for j in range(depth)]
    cons += [f"pd_o{k} + {t} * pd_g{k} <= p{pos} < pd_o{k} + {t} * pd_g{k} + {t}"
             for k, (pos, t) in enumerate(zip(positions, tiles, strict=True))]
    return isl.Set(f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] : "
                   f"{' and '.join(cons) or '1 = 1'} }}")


def _pick(n_dims: int, positions: list[int]) -> isl.UnionMap:
    dims = [f"p{j}" for j in range(n_dims)]
    return isl.UnionMap(f"{{ [{', '.join(dims)}] -> [{', '.join(f'p{p}' for p in positions)}] }}")


# --------------------------------------------------------------------------------------------
# Which arrays, which boxes


def choose_copies(scop: Scop, group: isl.UnionSet, outer: isl.UnionMap, threads: isl.UnionMap,
            kctx: isl.Set, budget: int) -> tuple[list[LocalCopy], list[isl.Set]]:
    reads = scop.accesses("read").intersect_domain(group)
    written = {m.get_tuple_name(isl.dim_type.out) for m in maps(
        scop.accesses("write").intersect_domain(group))}
    copies: list[LocalCopy] = []
    footprints: list[isl.Set] = []
    used = 0
    for a in scop.arrays:
        if not a.is_tensor or a.name in written:
            continue
        # a load under `a if c else b` may stand for elements outside the array (the
        # condition guards it): the copy loads the elements inside only
        access = accesses_to(reads, a.name).intersect_range(
            isl.UnionSet.from_set(array_bounds(scop, a.name)))
        if access.is_empty() or not _shared(outer, threads, access):
            continue
        # footprint: { [outer values, r tile] -> A[...] } for one work-group
        fp = isl.Map.from_union_map(outer.reverse().apply_range(access)).intersect_params(kctx)
        if fp.coalesce().n_basic_map() > 1:
            continue  # no single box: not worth isl's time (see MAX_EXTENT_PIECES)
        copy = _box(a.name, _itemsize(a.dtype), fp, kctx, a.rank, scop.syms)
        if copy is None:
            continue
        if not copy.dynamic:
            nbytes = math.prod(copy.sizes) * copy.itemsize
            if used + nbytes > budget:
                continue
            used += nbytes
        copies.append(copy)
        footprints.append(fp.domain())
    return copies, footprints


def _shared(outer: isl.UnionMap, threads: isl.UnionMap, access: isl.UnionMap) -> bool:
    """Two work-items read a common element in the same tile iteration (reuse)."""
    key = outer.flat_range_product(threads)  # { S[x] -> [outer, r tile, mapped values] }
    elems = isl.Map.from_union_map(key.reverse().apply_range(access))
    pairs = elems.apply_range(elems.reverse())
    n_outer = isl.Set.from_union_set(outer.range()).dim(isl.dim_type.set)
    n_all = elems.dim(isl.dim_type.in_)
    xs = [f"x{j}" for j in range(n_all)]
    ys = [x if j < n_outer else f"y{j}" for j, x in enumerate(xs)]
    differ = " or ".join(f"x{j} != y{j}" for j in range(n_outer, n_all)) or "1 = 0"
    other = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(ys)}] : {differ} }}")
    return not pairs.intersect(other.align_params(pairs.get_space())).is_empty()


def _box(array: str, itemsize: int, fp: isl.Map, kctx: isl.Set, rank: int,
         syms: tuple[str, ...]) -> LocalCopy | None:
    """The bounding box of the footprint: per dimension its first and last element (AST
    expressions in ``pd_u<j>``) and its extent, a constant or a bound in the syms."""
    n_in = fp.dim(isl.dim_type.in_)
    names = [f"{OUTER}{j}" for j in range(n_in)]
    where = _to_params(fp.domain(), names).params().intersect(
        kctx.align_params(_to_params(fp.domain(), names).get_space()))
    build = isl.AstBuild.from_context(where)
    sizes: list[int | None] = []
    lo, hi, size_c, size_py = [], [], [], []
    for j in range(rank):
        first, last = fp.dim_min(j), fp.dim_max(j)
        extent = last.sub(first).add_constant_val(isl.Val.one(fp.get_ctx()))
        if extent.n_piece() > MAX_EXTENT_PIECES:
            return None
        try:
            most = extent.max_val()
        except isl.Error:  # a quasi-affine extent (isl_pw_aff_max_val wants affine pieces)
            return None
        if most.is_int():
            sizes.append(int(most.to_python()))
            size_c.append(None)
            size_py.append(None)
        else:
            bound = _bound_in_syms(extent, kctx, syms)
            if bound is None:
                return None
            sizes.append(None)
            size_c.append(isl.AstBuild.from_context(bound.domain()).expr_from_pw_aff(bound))
            size_py.append(pw_aff_to_py(bound, bound.domain()))
        lo.append(build.expr_from_pw_aff(pw_to_params(first, names).gist(where)))
        hi.append(build.expr_from_pw_aff(pw_to_params(last, names).gist(where)))
    if any(s is not None and s <= 0 for s in sizes):
        return None
    return LocalCopy(array, tuple(sizes), tuple(lo), tuple(hi), itemsize, tuple(size_c),
                     tuple(size_py))


def _bound_in_syms(extent: isl.PwAff, kctx: isl.Set, syms: tuple[str, ...]
                   ) -> isl.PwAff | None:
    """The largest value of ``extent`` over every group, tile and host value, as a function
    of the syms alone (``KH + 7``); None when unbounded."""
    values = isl.Map.from_pw_aff(extent).range()  # [params] -> { [extent] }
    values = values.intersect_params(kctx.align_params(values.get_space()))
    for k in reversed(range(values.dim(isl.dim_type.param))):
        if values.get_dim_name(isl.dim_type.param, k) not in syms:
            values = values.project_out(isl.dim_type.param, k, 1)
    if values.is_empty():
        return None
    # a bound is all the buffer needs: the hull's maximum, at least the exact one, keeps
    # isl's parametric maximum cheap (it took minutes on unions of many pieces)
    bound = isl.Set.from_basic_set(values.simple_hull()).dim_max(0)
    for piece_ok in _pieces_bounded(bound):
        if not piece_ok:
            return None
    return bound.coalesce()


def _pieces_bounded(bound: isl.PwAff) -> list[bool]:
    out: list[bool] = []
    bound.foreach_piece(lambda _set, aff: out.append(not aff.is_nan()))
    return out


def _to_params(s: isl.Set, names: list[str]) -> isl.Set:
    n = s.dim(isl.dim_type.param)
    s = s.move_dims(isl.dim_type.param, n, isl.dim_type.set, 0, len(names))
    for j, name in enumerate(names):
        s = s.set_dim_name(isl.dim_type.param, n + j, name)
    return s


def pw_to_params(pa: isl.PwAff, names: list[str]) -> isl.PwAff:
    """``{ [u0, ...] -> [f(u)] }`` as ``[pd_u0, ...] -> { [f] }`` (the ids are isl's own, the
    ones the parser gives these names)."""
    n = pa.dim(isl.dim_type.param)
    pa = pa.move_dims(isl.dim_type.param, n, isl.dim_type.in_, 0, len(names))
    for j, name in enumerate(names):
        pa = pa.set_dim_id(isl.dim_type.param, n + j, isl.Id.read_from_str(pa.get_ctx(), name))
    return pa.project_domain_on_params()


def threads_enclose_statements(ast: Node, threads: set[str], *more: set[str]) -> bool:
    """Every statement of the kernel (not the copies) lies inside a loop over each mapped
    member of tile size > 1 (the iterators ``threads``, or those of one of ``more``): isl
    replaces a loop by its value when that value is fixed, and then the work-item guard
    would be missing."""
    return all(name.startswith(COPY) or name == SYNC or
               any(t <= around for t in (threads, *more))
               for name, around, _ in _statement_places(ast))


def only_copies(n: Node) -> bool:
    """Whether ``n`` is one or more copy statements (blocks of them)."""
    if isinstance(n, Block):
        return all(only_copies(c) for c in n.children)
    return isinstance(n, Instance) and n.name.startswith(COPY)


def copies_unconditional(ast: Node, staged: bool = False) -> bool:
    """Every copy (and so every barrier) lies under loops only, or under an ``if`` with
    copies alone in it, which the emitter prints between barriers: PoCL's CPU compiler
    miscompiles barriers under a condition (work-items outside a later guard ran the code
    behind it), although the conditions here are uniform in the work-group. ``staged``
    (double-buffered register tiles): the copies hold no barrier, the ``PDSYNC`` statements
    do."""
    return not any((name == SYNC if staged else name.startswith(COPY)) and conditional
                   for name, _, conditional in _statement_places(ast))


def _statement_places(ast: Node) -> list[tuple[str, frozenset[str], bool]]:
    """``(statement, iterators of the loops around it, under a condition)`` for every
    statement of ``ast``; an ``if`` around copies alone does not count as a condition (the
    emitter prints it between barriers)."""
    out: list[tuple[str, frozenset[str], bool]] = []

    def walk(n: Node, around: frozenset[str], conditional: bool) -> None:
        if isinstance(n, Loop):
            walk(n.body, around | {n.iterator},
                 conditional)
        elif isinstance(n, Block):
            for c in n.children:
                walk(c, around, conditional)
        elif isinstance(n, If):
            hoisted = n.orelse is None and only_copies(n.then)
            walk(n.then, around, conditional or not hoisted)
            if n.orelse is not None:
                walk(n.orelse, around, True)
        elif isinstance(n, MarkNode):
            walk(n.node, around, conditional)
        elif isinstance(n, Instance):
            out.append((n.name, around,
                        conditional))

    walk(ast, frozenset(), False)
    return out


def accesses_to(accesses: isl.UnionMap, name: str) -> isl.UnionMap:
    """The part of ``accesses`` to the array ``name``."""
    out = isl.UnionMap.empty(accesses.get_space())
    for m in maps(accesses):
        if m.get_tuple_name(isl.dim_type.out) == name:
            out = out.union(isl.UnionMap.from_map(m))
    return out


def _itemsize(dtype: str) -> int:
    import numpy as np

    return np.dtype(NUMPY_NAME[dtype]).itemsize


def maps(umap: isl.UnionMap) -> list[isl.Map]:
    """The maps of a union map, one per pair of spaces."""
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out
