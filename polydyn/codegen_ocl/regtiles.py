"""Register tiles on work-items: each work-item computes a TM x TN block of outputs.

A kernel whose two innermost mapped members (rows ``m_r`` and columns ``m_c``; matmul's
``i, j``) are directly followed by a sequential single-member band (the reduction ``r``:
matmul's ``k``, conv's ``c``), alone or as the one band of a sequence of statements (an
accumulator set before and stored after), is register-tiled when every statement it runs
accumulates into cells that do not depend on the reduction: each array a statement writes is
written, for each point ``(outer, m_r, m_c)``, at one element (the cell), and every access
of the kernel to that array is to the cell. A work-group then covers a BM x BN block of
``(m_r, m_c)`` (BM = TM times the work-items along the rows), and work-item ``(l_r, l_c)``
owns the points ``m_r = o_r + BM g_r + (BM / TM) a + l_r``, ``m_c = o_c + BN g_c + (BN / TN)
b + l_c`` for ``a < TM, b < TN``: neighbouring work-items touch neighbouring columns
(coalesced global accesses, conflict-free local reads).

The kernel's AST is isl's, for one work-group (its group ids are parameters, as in
promotion.py), from the flat schedule

    [outer, 0, .., m_r, m_c]                        PDACCLOAD_<C>: cells from the output
    [outer, 1, seq, kt, 0, 0 ..]                    PDCOPY_<A>: the tile of A, all work-items
    [outer, 1, seq, kt, 1, r, below r .., m_r, m_c] the statements (kt = BK floor(r / BK))
    [outer, 2, .., m_r, m_c]                        PDACCSTORE_<C>: cells to the output

with the statements of a sequence around the band at their positions (``seq``); the cells'
loads only where a statement reads a cell before writing it (``_read_first``). It is then widened
(``regflat.Layout.widen``) so that whole reduction tiles and whole blocks get loops of their own,
with constant trip counts and no guards. ``m_r`` and ``m_c`` come innermost: that is legal
because they are coincident (every dependence inside the launch keeps them), and the race
check (legality.py) verifies it on the flat schedule. The emitter prints the loops over
``m_r`` and ``m_c`` as loops over the register tile, ``#pragma unroll``, guarded by isl's
bounds (left out in whole blocks, and where isl shows that every block is whole); the
cells live in private arrays ``pd_acc_<C>[TM][TN]`` and local scalars in ``s[TM][TN]``. The
copies are promotion.py's, their footprint per group now BM x BK etc.; an array whose box
grows with the syms (conv's window) is read in place instead.

With two buffers per copy (``stages``, the recipe's ``gpu(stages=...)``; two by default where
they fit in local memory) the copies of a reduction tile run in the tile before, while it is
computed, and one barrier (``PDSYNC``) ends each tile instead of two around each copy
(regflat.py has the flat schedule; copies.py prints the copies, 16 bytes per load where the
rows allow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import islpy as isl

from ..astgen import ITERATOR
from ..errors import UnsupportedError
from ..lowering.tree import Node, from_isl
from ..schedule.gpu import parse_regtile
from ..schedule.tree import is_band, is_sequential_mark
from ..scop.ir import Scop
from .promotion import (
    LOCAL_BUDGET,
    LocalCopy,
    accesses_to,
    choose_copies,
    copies_unconditional,
    maps,
    pw_to_params,
    threads_enclose_statements,
    tile_set,
)
from .regflat import Layout

TILE = 4  # outputs per work-item along each member (at most), when its extent allows
BK = 16  # points of the reduction per local-memory tile
WORK_ITEMS = (16, 16)  # work-items along (rows, columns), shrunk to the device's limit
ACC_LOAD, ACC_STORE = "PDACCLOAD_", "PDACCSTORE_"
_NT = isl.schedule_node_type


@dataclass(frozen=True)
class RegisterTiles:
    """The register-tile decision of a kernel: ``tm x tn`` outputs per work-item, ``wm x wn``
    work-items per group (rows, columns), the reduction staged ``bk`` deep in ``stages``
    local-memory buffers per copied array."""

    tm: int
    tn: int
    bk: int = BK
    wm: int = WORK_ITEMS[0]
    wn: int = WORK_ITEMS[1]
    stages: int = 1

    @property
    def bm(self) -> int:
        return self.tm * self.wm

    @property
    def bn(self) -> int:
        return self.tn * self.wn

    def blocks(self, n_mapped: int) -> tuple[int, ...]:
        """Values of each mapped member per work-group (outer mapped members: one)."""
        return (1,) * (n_mapped - 2) + (self.bm, self.bn)

    def per_item(self, n_mapped: int) -> tuple[int, ...]:
        """Values of each mapped member per work-item."""
        return (1,) * (n_mapped - 2) + (self.tm, self.tn)

    def describe(self) -> str:
        return (f"register tiles {self.tm}x{self.tn} per work-item, "
                f"{self.bm}x{self.bn}x{self.bk} blocks" +
                (", two buffers" if self.stages == 2 else ""))


@dataclass(frozen=True)
class Accumulator:
    """An array whose cells a register-tiled kernel keeps in ``pd_acc_<array>[TM][TN]``:
    the element of each point, AST expressions in ``pd_u<j>`` (the point's prefix values,
    ``m_r`` and ``m_c`` last)."""

    array: str
    index: tuple[Any, ...] = field(compare=False)  # isl.AstExpr

    @property
    def buffer(self) -> str:
        return f"pd_acc_{self.array}"


@dataclass(frozen=True)
class RegisterCode:
    """A register-tiled kernel: its group AST, copies, the loops over the rows and columns
    ``(iterator, k)``, its accumulators, the mapped members whose blocks are always full (no
    guard) and the flat schedule of its statements (``order``)."""

    ast: Any  # Node
    tiles: RegisterTiles  # as built: ``stages`` 1 where two buffers would not fit
    copies: tuple[LocalCopy, ...]
    threads: tuple[tuple[str, int], ...]
    accumulators: tuple[Accumulator, ...]
    full: tuple[int, ...]
    order: Any  # isl.UnionMap
    free: tuple[str, ...] = ()  # the iterators of full tiles' register loops: no guard


def parse_override(text: str) -> tuple[int, int] | None:
    """POLYDYN_OCL_REGTILE: "" (automatic: None), "off" ((1, 1): none) or "TMxTN"."""
    try:
        return parse_regtile(text)
    except ValueError as exc:
        raise UnsupportedError(f"POLYDYN_OCL_REGTILE={text!r}: {exc}") from None


def choose_register_tiles(mapped: list[isl.ScheduleNode], ranges: list[isl.Set],
                          ctx: isl.Set, items: tuple[int, ...], bk: int = BK,
                          override: str = "", stages: int = 1) -> RegisterTiles | None:
    """The register tiles of a kernel, or None: it needs two mapped members or more with a
    reduction band below the innermost (``reduction_band``); each of the two innermost gets
    ``TILE`` outputs per work-item where its extent in the region (``ranges``, under
    ``ctx``) is at least ``TILE`` times the work-items along it, 2 where it is twice, else
    1; none when either gets 1 (a one-row block leaves a quarter of the plain mapping's
    work-groups; bench/HISTORY.md, GPU, has what was measured).
    ``items``: the work-items along the two (sizes.py); ``bk``: the
    reduction steps per local tile; ``override`` (POLYDYN_OCL_REGTILE or the recipe's
    ``regtile``) forces the sizes or "off"; ``stages``: local buffers per copied array."""
    forced = parse_override(override)
    if len(mapped) < 2 or reduction_band(mapped[-1].child(0)) is None:
        return None
    wm, wn = items
    if forced is not None:
        tm, tn = forced
    else:
        tm, tn = (_per_item(_extent(rng, ctx), w) for rng, w in zip(ranges[-2:], (wm, wn),
                                                                    strict=True))
    if (forced is None and 1 in (tm, tn)) or (tm, tn) == (1, 1):
        return None
    return RegisterTiles(tm, tn, bk, wm, wn, stages)


def smaller_tiles(tiles: RegisterTiles | None, forced: bool = False) -> list[RegisterTiles]:
    """``tiles`` and the register tiles of half its size along each member while both stay
    at least 2 (4x4, 2x2): the kernels a launch chooses from by how many work-groups fill
    the device (host.py); ``forced`` (POLYDYN_OCL_REGTILE) keeps ``tiles`` alone."""
    out = [] if tiles is None else [tiles]
    while out and not forced and min(out[-1].tm, out[-1].tn) >= 4:
        last = out[-1]
        out.append(replace(last, tm=last.tm // 2, tn=last.tn // 2))
    return out


def reduction_band(below: isl.ScheduleNode) -> tuple[isl.ScheduleNode, int, int] | None:
    """``(band, d, position)``: the sequential single-member band right below the mapped
    members (``d = 0``), or the one band of a sequence there (``d = 1``, its ``position``
    in the sequence; the other children hold no band); None otherwise."""
    band = _sequential_band(below)
    if band is not None:
        return band, 0, 0
    if below.get_type() != _NT.sequence:
        return None
    found = [k for k in range(below.n_children()) if _has_band(below.child(k))]
    if len(found) != 1:
        return None
    child = below.child(found[0])
    band = _sequential_band(child.child(0) if child.n_children() else child)
    return (band, 1, found[0]) if band is not None else None


def register_kernel(scop: Scop, schedule: isl.Schedule, domain: isl.UnionSet, depth: int,
                    chain: list[isl.ScheduleNode], mapped: list[isl.ScheduleNode],
                    tiles: RegisterTiles, params: list[str], kctx: isl.Set
                    ) -> RegisterCode | None:
    """The register-tiled form of a kernel (``kctx``: its build context for the blocks), or
    None when its statements do not fit (see the module's docstring)."""
    positions = [b.get_schedule_depth() for b in mapped]
    pc = positions[-1]
    if [b.get_schedule_depth() for b in chain][-len(mapped):] != positions or \
            positions[-2] != pc - 1:
        return None
    below = mapped[-1].child(0)
    found = reduction_band(below)
    if found is None:
        return None
    band, d, seq = found
    pre = below.get_prefix_schedule_union_map().intersect_domain(domain)  # S -> [p0..pc]
    sub = below.get_subtree_schedule_union_map().intersect_domain(domain)  # S -> [b..]
    spaces: list[isl.Set] = []
    sub.range().foreach_set(spaces.append)
    if len(spaces) != 1:
        return None
    n_pre, n_sub = pc + 1, spaces[0].dim(isl.dim_type.set)
    blocks = tiles.blocks(len(mapped))
    group = pre.intersect_range(isl.UnionSet.from_set(
        tile_set(params, n_pre, depth, positions, blocks))).domain()
    if group.is_empty():
        return None
    lay = Layout(n_pre, n_sub, d, seq, tiles.bk)
    flat = pre.flat_range_product(sub).apply_range(lay.statements())
    accumulators = _accumulators(scop, domain, band.get_domain().intersect(domain), pre)
    if accumulators is None:
        return None
    parts = flat.intersect_domain(group)
    acc_exprs = []
    for array, cells in accumulators:
        points = pre.intersect_domain(group).range()  # { [p..] } of the group
        cell_set = isl.Set.from_union_set(isl.UnionSet.from_set(cells.domain()).intersect(
            points))
        transfers = ((ACC_LOAD, 0), (ACC_STORE, 2)) if _read_first(scop, flat, array) else \
            ((ACC_STORE, 2),)
        for prefix, phase in transfers:
            parts = parts.union(isl.UnionMap.from_map(lay.cell_statement(
                cell_set.set_tuple_name(prefix + array), phase)))
        acc_exprs.append(Accumulator(array, _cell_index(cells, kctx)))
    copies = _copies(scop, group.intersect(band.get_domain()), domain, pre, sub, lay, kctx)
    k_r, k_c = len(mapped) - 2, len(mapped) - 1
    statements = flat.intersect_domain(group)  # not empty: the group has instances
    speculate = _speculative(scop, statements, copies, accumulators, lay)
    widen = lay.widen(statements, k_r, k_c, blocks[k_r], blocks[k_c], speculate)
    n_flat = lay.n_dims
    threads = ((f"{ITERATOR}{n_flat}", k_r), (f"{ITERATOR}{n_flat + 1}", k_c),
               (f"{ITERATOR}{n_flat + 2}", k_r), (f"{ITERATOR}{n_flat + 3}", k_c))
    slow, fast = ({name for name, _ in threads[:2]}, {name for name, _ in threads[2:]})
    # two buffers where they fit and their barriers stand under loops only, else one
    for stages in sorted({_stages(scop, tiles, copies, domain, band.get_domain()), 1},
                         reverse=True):
        ast = _group_ast(lay, kctx, parts, copies, statements, widen,
                         tiles.bk if stages == 2 else 0)
        if threads_enclose_statements(ast, slow, fast) and \
                copies_unconditional(ast, staged=stages == 2):
            break
    else:
        return None
    tiles = replace(tiles, stages=stages)
    image = isl.Set.from_union_set(statements.range())
    full = tuple(k for k, dim in ((k_r, n_flat - 2), (k_c, n_flat - 1))
                 if _full_block(image, dim, k, blocks[k], kctx))
    return RegisterCode(ast, tiles, tuple(c for c, _ in copies), threads, tuple(acc_exprs),
                        full, flat, tuple(sorted(fast)))


def _group_ast(lay: Layout, kctx: isl.Set, parts: isl.UnionMap,
               copies: list[tuple[LocalCopy, isl.Set]], statements: isl.UnionMap,
               widen: isl.UnionMap, ahead: int) -> Node:
    """isl's AST of the group: the statements and cells (``parts``), the copies first in
    their tile or (``ahead``: two buffers) in the tile before, and then a ``PDSYNC`` last in
    every tile."""
    for copy, fp in copies:
        parts = parts.union(isl.UnionMap.from_map(
            lay.copy_statement(fp.set_tuple_name(copy.statement), ahead)))
    if ahead:
        parts = parts.union(isl.UnionMap.from_map(lay.sync_statement(
            [fp for _, fp in copies], statements, ahead)))
    # read back from its text, equalities detected: isl's coalescing inside the build failed
    # an internal check ("original tableau does not correspond to original basic map") on
    # some maps in the form the operations above leave them (tests/fuzz/regressions/
    # opencl_regtile_coalesce.py); read back alone, some held divisions isl could not name
    # ("unknown divs", test_epilogue's read_after). Catching the error is no way round: isl
    # is left in a state in which the next build crashes.
    schedule = isl.UnionMap(str(parts.apply_range(widen))).detect_equalities()
    return from_isl(lay.build(kctx).node_from_schedule_map(schedule))


def _stages(scop: Scop, tiles: RegisterTiles, copies: list[tuple[LocalCopy, isl.Set]],
            domain: isl.UnionSet, band_domain: isl.UnionSet) -> int:
    """The buffers per copied array: ``tiles.stages``, or 1 where two of every copy pass the
    local-memory budget or a statement outside the reduction band reads a copied array (it
    reads the local copy, which two buffers leave at the other half after the band)."""
    if tiles.stages < 2 or not copies:
        return 1
    if 2 * sum(math.prod(c.sizes) * c.itemsize for c, _ in copies) > LOCAL_BUDGET:
        return 1
    outside = scop.accesses("read").intersect_domain(domain.subtract(band_domain))
    copied = {c.array for c, _ in copies}
    if any(m.get_tuple_name(isl.dim_type.out) in copied for m in maps(outside)):
        return 1
    return tiles.stages


def _speculative(scop: Scop, statements: isl.UnionMap, copies: list[tuple[LocalCopy, isl.Set]],
                 accumulators: list[tuple[str, isl.Map]], lay: Layout) -> bool:
    """Whether a partial block may run its register loops over every point, as a whole block
    does, with a guard on the cells' loads and stores alone (as GEMM kernels guard their
    stores only): the statements read nothing but local-memory copies, held cells and local
    scalars and write nothing but held cells and local scalars (a point outside the domain
    then reads stale local memory, never global memory beyond an array, and writes only its
    own registers), and each statement's points along the rows and columns do not depend on
    the other dimensions of its tile (a point inside the domain has every reduction value
    there: no triangle)."""
    cells = {name for name, _ in accumulators}
    for kind, allowed in (("read", cells | {c.array for c, _ in copies}), ("write", cells)):
        touched = scop.accesses(kind).intersect_domain(statements.domain())
        if any(m.get_tuple_name(isl.dim_type.out) not in allowed and
               scop.array(m.get_tuple_name(isl.dim_type.out)).kind not in ("local", "value")
               for m in maps(touched)):
            return False
    n, key_n = lay.n_dims, lay.n_pre + lay.d
    for m in maps(statements):
        image = m.range()
        rest = image.project_out(isl.dim_type.set, n - 2, 2).insert_dims(
            isl.dim_type.set, n - 2, 2)
        points = image.project_out(isl.dim_type.set, key_n, n - 2 - key_n).insert_dims(
            isl.dim_type.set, key_n, n - 2 - key_n)
        if not rest.intersect(points).is_subset(image):
            return False
    return True


def _accumulators(scop: Scop, domain: isl.UnionSet, band_domain: isl.UnionSet,
                  pre: isl.UnionMap) -> list[tuple[str, isl.Map]] | None:
    """``(array, { [prefix values] -> array[cell] })`` for each array the band's statements
    write (local scalars stay private per point); None when some written array has no
    single cell per point, or some access of the kernel to it is not to the cell."""
    out = []
    writes = scop.accesses("write").intersect_domain(band_domain)
    arrays = sorted({m.get_tuple_name(isl.dim_type.out) for m in maps(writes)})
    for name in arrays:
        if scop.array(name).kind == "local":
            continue
        written = accesses_to(scop.accesses("write").intersect_domain(domain), name)
        cells = pre.reverse().apply_range(written)  # { [p..] -> C[e] }
        if not cells.is_single_valued() or not cells.is_injective():
            return None
        cell_map = isl.Map.from_union_map(cells)
        for kind in ("read", "write"):
            touched = pre.reverse().apply_range(
                accesses_to(scop.accesses(kind).intersect_domain(domain), name))
            if not touched.is_subset(cells):
                return None
        out.append((name, cell_map))
    return out


def _read_first(scop: Scop, flat: isl.UnionMap, name: str) -> bool:
    """Whether some statement of the kernel (``flat``: its schedule) reads a cell of ``name``
    before every write to it: only then do the accumulators start from the array's values
    (a product's ``C = 0`` first leaves nothing to load)."""
    statements = flat.domain()
    reads = accesses_to(scop.accesses("read").intersect_domain(statements), name)
    if reads.is_empty():
        return False
    writes = accesses_to(scop.accesses("write").intersect_domain(statements), name)
    info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
    return not info.set_schedule_map(flat).compute_flow().get_may_no_source().is_empty()


def _cell_index(cells: isl.Map, kctx: isl.Set) -> tuple[Any, ...]:
    """The cell's subscripts as AST expressions in ``pd_u<j>`` (the point's values)."""
    names = [f"pd_u{j}" for j in range(cells.dim(isl.dim_type.in_))]
    where = _params_of(cells.domain(), names)
    where = where.intersect(kctx.align_params(where.get_space()))
    build = isl.AstBuild.from_context(where)
    pma = isl.PwMultiAff.from_map(cells)
    return tuple(build.expr_from_pw_aff(pw_to_params(pma.get_pw_aff(j), names).gist(where))
                 for j in range(cells.dim(isl.dim_type.out)))


def _copies(scop: Scop, band_group: isl.UnionSet, domain: isl.UnionSet, pre: isl.UnionMap,
            sub: isl.UnionMap, lay: Layout, kctx: isl.Set
            ) -> list[tuple[LocalCopy, isl.Set]]:
    """promotion.py's copies for one group's reduction tiles: arrays read and not written
    in the kernel, shared by work-items, with a box of constant size."""
    p = [f"p{j}" for j in range(lay.n_pre)]
    b = [f"b{j}" for j in range(lay.n_sub)]
    tile = f"{lay.bk} * floor(({b[lay.d]}) / {lay.bk})"
    outer = pre.flat_range_product(sub).intersect_domain(band_group).apply_range(
        isl.UnionMap(f"{{ [{', '.join(p + b)}] -> [{', '.join([*p[:-2], tile])}] }}"))
    threads = pre.intersect_domain(band_group).apply_range(
        isl.UnionMap(f"{{ [{', '.join(p)}] -> [{', '.join(p[-2:])}] }}"))
    copies, footprints = choose_copies(scop, band_group, outer, threads, kctx, LOCAL_BUDGET)
    written = {m.get_tuple_name(isl.dim_type.out)
               for m in maps(scop.accesses("write").intersect_domain(domain))}
    return [(c, fp) for c, fp in zip(copies, footprints, strict=True)
            if not c.dynamic and c.array not in written]


def _full_block(image: isl.Set, dim: int, k: int, block: int, kctx: isl.Set) -> bool:
    """Whether every group's block along mapped member ``k`` (flat dimension ``dim``) is
    full wherever the other dimensions have instances: no guard is needed."""
    n = image.dim(isl.dim_type.set)
    others = image.project_out(isl.dim_type.set, dim, 1).insert_dims(isl.dim_type.set, dim, 1)
    xs = [f"x{j}" for j in range(n)]
    head = f"[pd_o{k}, pd_g{k}] -> "
    box = isl.Set(head + f"{{ [{', '.join(xs)}] : pd_o{k} + {block} * pd_g{k} <= x{dim} < "
                  f"pd_o{k} + {block} * pd_g{k} + {block} }}")
    filled = others.intersect(box.align_params(others.get_space()))
    filled = filled.intersect_params(kctx.align_params(filled.get_space()))
    return bool(filled.is_subset(image.align_params(filled.get_space())))


# --------------------------------------------------------------------------------------------
# Helpers


def _per_item(extent: float, work_items: int) -> int:
    for t in (TILE, 2):
        if extent >= t * work_items:
            return t
    return 1


def _extent(rng: isl.Set, ctx: isl.Set) -> float:
    """The member's largest number of values in the region (inf when unbounded)."""
    rng = rng.intersect_params(ctx.align_params(rng.get_space()))
    if rng.is_empty():
        return 0
    extent = rng.dim_max(0).sub(rng.dim_min(0)).add_constant_val(isl.Val.one(rng.get_ctx()))
    try:
        most = extent.max_val()
    except isl.Error:
        return math.inf
    return int(most.to_python()) if most.is_int() else math.inf


def _sequential_band(node: isl.ScheduleNode) -> isl.ScheduleNode | None:
    if node.get_type() == _NT.mark and \
            is_sequential_mark(node) and \
            node.n_children() and is_band(node.child(0)) and \
            node.child(0).band_n_member() == 1:
        return node.child(0)
    return None


def _has_band(node: isl.ScheduleNode) -> bool:
    if is_band(node):
        return True
    return any(_has_band(node.child(k)) for k in range(node.n_children()))


def _params_of(s: isl.Set, names: list[str]) -> isl.Set:
    n = s.dim(isl.dim_type.param)
    s = s.move_dims(isl.dim_type.param, n, isl.dim_type.set, 0, len(names))
    for j, name in enumerate(names):
        s = s.set_dim_name(isl.dim_type.param, n + j, name)
    return s.params()


__all__ = ["Accumulator", "RegisterCode", "RegisterTiles", "choose_register_tiles",
           "parse_override", "reduction_band", "register_kernel", "smaller_tiles"]
