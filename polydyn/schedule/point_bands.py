"""A tiling plan applied to a schedule, and the point band of each tile: tiles with full tiles
isolated, the point loops' order (a stride-1 parallel member innermost, reductions out of
it), register tiles (rows x vector accumulators), the vector operand packed once per tile,
and strips of a vector loop that only reductions enclose. The plans are ``auto.py``'s."""

import islpy as isl

from ..scop.deps import Deps
from ..scop.exprs import Load
from ..scop.forward import repackable
from ..scop.ir import Scop
from ..target import AVX512, CpuTarget
from .bands import (
    BandTiling,
    constant_members,
    elem_bytes,
    member_dependence,
    repacked_vector,
    stride_one,
    targets_move,
    vector_reuse,
)
from .legality import is_legal
from .reductions import reassociable_validity, sum_targets
from .registers import RegisterShape
from .transforms import outermost_bands, reorder_band, tile_band
from .transposes import mark_transposes, transposed_in_blocks
from .tree import (
    PROMOTE,
    RFACTOR,
    RROW,
    RVEC,
    SPLIT,
    VECTOR,
    LoopMark,
    PackMark,
    band_above,
    chain_below,
    is_band,
    mark_id,
    node_at,
    node_path,
    split_and_mark,
)


def tiled_members(node: isl.ScheduleNode, scop: Scop, constant: list[bool]
                   ) -> tuple[list[int], bool]:
    """The band members to tile, and whether the band is deep. A band of more than three
    live members with loops below it (conv's ky, kx) tiles three: the register-row member
    that reuses the vector operands best (conv's output channel f rather than its output
    row), the vector member (the last parallel, stride-1 one) and the innermost reduction,
    in that order (deep); otherwise its last three live members."""
    live = [k for k, c in enumerate(constant) if not c]
    if len(live) <= 3:
        return live, False
    deps_of = member_dependence(node, scop)
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(len(constant))]
    vecs = [k for k in live if coincident[k] and stride_one(scop, deps_of, k)]
    reductions = [k for k in live if not coincident[k]]
    if not vecs or not reductions or reductions[-1] < vecs[-1]:
        return live[-3:], False
    vec = vecs[-1]
    rows = [k for k in live if coincident[k] and k < vec]
    if not rows:
        return live[-3:], False
    row = max(rows, key=lambda k: (vector_reuse(scop, deps_of, k, vec), k))
    below = any(set(scop.statement(name).iters) - set().union(*members)
                for name, members in deps_of.items())
    if not below:  # every loop is in the band (batched matmul): the footprint bounds it
        return live[-3:], False
    return [row, vec, reductions[-1]], True


def _permute_point_band(node: isl.ScheduleNode, scop: Scop) -> isl.ScheduleNode:
    """Make a parallel, stride-1 member innermost in a permutable point band."""
    n = node.band_n_member()
    if n < 2 or not node.band_get_permutable():
        return node
    deps_of = member_dependence(node, scop)
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(n)]
    candidates = [k for k in range(n) if coincident[k] and stride_one(scop, deps_of, k)]
    if not candidates or candidates[-1] == n - 1:
        return node
    inner = candidates[-1]
    return reorder_band(node, [k for k in range(n) if k != inner] + [inner])


def apply_tiling(schedule: isl.Schedule, plan: list[BandTiling], scop: Scop,
                 isolate: bool = True, deps: Deps | None = None, pack_tiles: bool = True,
                 target: CpuTarget = AVX512) -> isl.Schedule:
    """Tile the planned bands (full tiles isolated), order their point loops for vectors and,
    where a reduction allows it, tile the point loops again for ``target``'s registers and
    (with ``pack_tiles``) copy the vector operand's tiles into local buffers."""
    for tiling in plan:
        try:
            node = node_at(schedule, tiling.path)
        except isl.Error:  # the band is gone under this region (an empty branch)
            continue
        if not is_band(node) or node.band_n_member() != len(tiling.sizes):
            continue
        sizes = list(tiling.sizes)
        pack = _pack_plan(node, scop, sizes) if pack_tiles else None
        if pack is not None:  # the rows' tile loop innermost: one packed tile serves them all
            order, packed = pack
            node = reorder_band(node, order)
            sizes = [sizes[k] for k in order]
        # full tiles isolated along the parallel members only: a reduction's partial tile
        # keeps a min() bound on its sequential loop rather than a copy of the tile's code;
        # so does a packed band's rows' member (last here), whose loop steps over register
        # tiles, outside them (a third fewer copies in matmul's `tiled`, the same speed)
        along = [k for k in range(len(sizes)) if node.band_member_get_coincident(k) and
                 not (pack is not None and k == len(sizes) - 1)]
        blocks = transposed_in_blocks(node, scop, sizes)
        node = tile_band(node, sizes, isolate=isolate, full_along=along)
        depth = node.get_tree_depth()
        point = _permute_point_band(node.child(0), scop)
        if blocks:
            schedule = mark_transposes(point, scop).get_schedule()
            continue
        node = register_tile(point, scop, deps,
                             shape=target.deep if tiling.deep else target.registers,
                             pack_rows=pack_tiles)
        if pack is not None and node.get_type() == isl.schedule_node_type.mark:
            while node.get_tree_depth() > depth:
                node = node.parent()
            # the tile loops around the packing run sequentially: the threads each copy the
            # packed tile and split the row tiles below it (untiled members, a batch, keep
            # their threads and pack privately)
            node = node.band_split(len(sizes) - 1)
            for k in range(len(sizes) - 1):
                if sizes[k] > 1:
                    node = node.band_member_set_coincident(k, 0)
            node = node.child(0).insert_mark(mark_id(PackMark(tuple(packed))))
        schedule = node.get_schedule()
    return schedule


def packed_members(schedule: isl.Schedule, scop: Scop, tiling: BandTiling
                   ) -> tuple[int, int] | None:
    """The rows' and the vector's member of a band whose vector operand gets packed."""
    return packed_band_members(node_at(schedule, tiling.path), scop, tiling.sizes)


def packed_band_members(node: isl.ScheduleNode, scop: Scop, sizes: tuple[int, ...]
                    ) -> tuple[int, int] | None:
    pack = _pack_plan(node, scop, list(sizes))
    if pack is None:
        return None
    row = pack[0][-1]
    deps_of = member_dependence(node, scop)
    vecs = [k for k in range(node.band_n_member()) if sizes[k] > 1 and k != row and
            node.band_member_get_coincident(k) and stride_one(scop, deps_of, k)]
    return (row, vecs[-1]) if vecs else None


def _pack_plan(band: isl.ScheduleNode, scop: Scop, sizes: list[int]
               ) -> tuple[list[int], list[str]] | None:
    """For a band whose point loops will get register tiles: the member order that puts the
    register rows' member last (its tile loop innermost among the tile loops) and the
    arrays to pack above it, the vector operands (matmul's B). None when nothing packs."""
    point = _permute_point_band(band, scop)
    plan = register_plan(point, scop)
    if plan is None:
        return None
    order, row, vec = plan
    point = reorder_band(point, order)
    deps_of = member_dependence(point, scop)
    packed = _vector_operands(scop, deps_of, row, vec)
    rows = _member_moving(band, scop, set().union(*(members[row]
                                                    for members in deps_of.values())))
    if not packed or rows is None or sizes[rows] == 1 or sum(size > 1 for size in sizes) < 3:
        return None
    return [k for k in range(band.band_n_member()) if k != rows] + [rows], packed


def register_rows(band: isl.ScheduleNode, scop: Scop) -> int | None:
    """The member of a permutable band that gives its register tiles' rows, as
    ``apply_tiling`` and ``order_for_vectors`` choose them for its point loops; None where
    none does."""
    point = _permute_point_band(band, scop)
    plan = register_plan(point, scop)
    if plan is None:
        return None
    order, row, _ = plan
    return _member_moving(band, scop, set().union(
        *(members[order[row]] for members in member_dependence(point, scop).values())))


def _member_moving(band: isl.ScheduleNode, scop: Scop, its: set[str]) -> int | None:
    """The one member of ``band`` that moves exactly the iterators ``its`` (over all its
    statements); None where no member or several do."""
    band_deps = member_dependence(band, scop)
    found = [k for k in range(band.band_n_member())
             if set().union(*(m[k] for m in band_deps.values())) == its]
    return found[0] if len(found) == 1 else None


def register_plan(node: isl.ScheduleNode, scop: Scop, transposed: bool = False
                  ) -> tuple[list[int], int, int] | None:
    """For a permutable point band ending in a stride-1 parallel member, or else with a
    parallel member along which the operands not read with stride 1 can be repacked
    (``repacked_vector``: B stored transposed): the member order ``[other parallel, row,
    vector, reductions]`` and the row and vector member positions in it, when every
    statement accumulates into one target that the reductions do not move (``C[i, j] +=
    ...`` over ``k``) and whose subscripts are single iterators. With
    ``transposed`` (``RegisterShape.transposed``) the two exchange roles: the stride-1
    member gives the rows, the rows' member the vector."""
    n = node.band_n_member()
    if n < 3 or not node.band_get_permutable():
        return None
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(n)]
    deps_of = member_dependence(node, scop)
    constant = constant_members(deps_of, n)
    vec = n - 1
    if not coincident[vec] or constant[vec] or not stride_one(scop, deps_of, vec):
        # no stride-1 member innermost: the last parallel one along which the operands that
        # do not run with stride 1 can be read from repacked copies (B stored transposed)
        vecs = [] if transposed else \
            [k for k in range(n) if coincident[k] and not constant[k] and
             repacked_vector(scop, deps_of, k)]
        if not vecs:
            return None
        vec = vecs[-1]
    reductions = [k for k in range(n) if not coincident[k] and not constant[k]]
    rows = [k for k in range(n) if coincident[k] and not constant[k] and k != vec]
    if not reductions or not rows:
        return None
    # prefer rows along which the vector operands stay the same (matmul's i for B[k, j],
    # conv's f for X[b, c, oy + ky, ox + kx]): one vector load then feeds every row
    if _streams(scop, set(deps_of)):
        return None
    row = max(rows, key=lambda k: (vector_reuse(scop, deps_of, k, vec), k))
    target = None
    for name, members in deps_of.items():
        stmt = scop.statement(name)
        if not isinstance(stmt.target, Load) or stmt.op == "=":
            return None
        key = (stmt.target.array, tuple(str(i) for i in stmt.target.index))
        if target not in (None, key):
            return None
        target = key
        moving = set().union(*(members[k] for k in reductions))
        for sub in stmt.target.index:
            lin = sub.linear()
            if lin is None or len(lin[0]) > 1 or any(abs(c) != 1 for c in lin[0].values()) \
                    or sub.vars() & moving:
                return None
        uses = [e for e in stmt.value.walk() if isinstance(e, Load) and e.array == key[0]]
        if any(tuple(str(i) for i in u.index) != key[1] for u in uses):
            return None
        row_its, vec_its = members[row], members[vec]
        hits_row = [d for d, sub in enumerate(stmt.target.index) if sub.vars() & row_its]
        hits_vec = [d for d, sub in enumerate(stmt.target.index) if sub.vars() & vec_its]
        if len(hits_row) != 1 or len(hits_vec) != 1 or hits_vec[0] != len(key[1]) - 1:
            return None
    others = [k for k in range(n) if k not in reductions and k not in (row, vec)]
    order = [*others, vec, row, *reductions] if transposed else [*others, row, vec, *reductions]
    return order, len(others), len(others) + 1


def _streams(scop: Scop, names: set[str]) -> bool:
    """Some statement reads an array other than its target at one element per iteration,
    each subscript a loop variable of its own, every loop variable in one (``X[b, l, d]`` in
    ``Y[b, d] += X[b, l, d] * w[l]``): each element is read once, so the nest runs at the
    speed it streams them, which a register tile's rows, as many strided streams, slow down.
    (matmul's and conv's operands stay the same along some loop, or a window's taps read
    them again: tiles reuse them.)"""
    for name in names:
        stmt = scop.statement(name)
        target = stmt.target.array if isinstance(stmt.target, Load) else None
        for ref in stmt.value.walk():
            if not isinstance(ref, Load) or ref.array == target:
                continue
            lins = [sub.linear() for sub in ref.index]
            alone = {v for lin in lins if lin is not None and len(lin[0]) == 1
                     for v, c in lin[0].items() if abs(c) == 1}
            if stmt.iters and set(stmt.iters) <= alone:
                return True
    return False


def register_tile(point: isl.ScheduleNode, scop: Scop, deps: Deps | None = None,
                  vector_outer: bool = False, shape: RegisterShape = AVX512.registers,
                  pack_rows: bool = False) -> isl.ScheduleNode:
    """Tile the point band ``point`` for registers: rows x vector accumulators kept in a
    local array around the reduction loops (the emitter promotes them; marks say where).
    With ``vector_outer`` (no cache tiles around), the loop over vector tiles runs outside
    the loop over row tiles: one vector tile's panel of the vector operand (matmul's B,
    K x 32) then stays in the L2 while every row tile passes, where rows outside would read
    all of B once per row tile. With ``pack_rows`` (cache tiles around, rows outside), the
    rows operands read down their columns (``_rows_operands``) are packed under each row of
    register tiles (a ``PackMark`` with ``rows``): a tile's reduction steps then read one
    run of cells, where in place each step reads a line of its own. Returns the point
    band's place (a mark when the tiling happened)."""
    plan = register_plan(point, scop, shape.transposed)
    if plan is None:
        return point
    order, row, vec = plan
    node = reorder_band(point, order)
    rows_packed = _rows_operands(scop, member_dependence(node, scop), row, vec) \
        if pack_rows and not vector_outer else []
    elem = elem_bytes(scop)
    sizes = [1] * node.band_n_member()
    sizes[row], sizes[vec] = shape.rows, shape.width(elem)
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(len(sizes))]
    n = len(sizes)
    if vector_outer:  # tile in the order [.., vector, row, ..], then swap the point loops back
        swap = list(range(n))
        swap[row], swap[vec] = vec, row
        node = tile_band(reorder_band(node, swap), [sizes[k] for k in swap], isolate=True)
        node = reorder_band(node.child(0), swap).parent()
    else:
        node = tile_band(node, sizes, isolate=True)  # the register-tile band; child: points
    moved = None
    if deps is not None and node.child(0).child(0).get_type() != isl.schedule_node_type.leaf:
        # bands below the point loops (conv's ky, kx) would run inside the vector loop: sink
        # the point band under them when that keeps every dependence
        sunk = node.child(0).band_sink()
        if is_legal(sunk.get_schedule(), deps):
            node = sunk.parent()
            moved = _reductions_innermost(node, vec + 1, scop, deps)
    depth = node.get_tree_depth()
    node = _mark_tile_loops(node if moved is None else moved, coincident, vec, moved is not None)
    node = split_and_mark(node, [LoopMark(coincident[k], RROW if k == row else
                                           RVEC if k == vec else "") for k in range(n)])
    while node.get_tree_depth() > depth:
        node = node.parent()
    if rows_packed and moved is None:  # under the rows' tile loop (mark, band per member)
        for _ in range(2 * row + 1):
            node = node.child(0)
        node = node.child(0).insert_mark(mark_id(PackMark(tuple(rows_packed), rows=True)))
        while node.get_tree_depth() > depth:
            node = node.parent()
    return node


def _mark_tile_loops(node: isl.ScheduleNode, coincident: list[bool], vec: int, moved: bool
                     ) -> isl.ScheduleNode:
    """Mark the loops of a register-tile band, the accumulators' (promote) mark above its
    first reduction member, or above the first band below it when ``moved`` (the band's
    reductions went under the bands below). Returns the point band."""
    n = len(coincident)
    if not moved:
        node = split_and_mark(node, [LoopMark(coincident[k], PROMOTE if k == vec + 1 else
                                               "") for k in range(n)])
        for _ in range(2 * n):
            node = node.child(0)
        while not (is_band(node) and node.band_n_member() == n):  # down to the point band
            node = node.child(0)
        return node
    node = split_and_mark(node, [LoopMark(coincident[k]) for k in range(vec + 1)])
    for _ in range(2 * (vec + 1)):
        node = node.child(0)
    node = split_and_mark(node, [LoopMark(bool(node.band_member_get_coincident(k)),
                                           PROMOTE if k == 0 else "")
                                 for k in range(node.band_n_member())])
    while node.child(0).get_type() != isl.schedule_node_type.leaf:
        node = node.child(0)
    return node


def _reductions_innermost(tile: isl.ScheduleNode, first: int, scop: Scop, deps: Deps
                          ) -> isl.ScheduleNode | None:
    """Move a register-tile band's reduction members (``first`` on: conv's input channel)
    below the bands under it (conv's ``ky``, ``kx``), just above the point band, when a
    reduction's updates may be reordered there (``reassociable_validity``). The innermost
    reduction loop then has the long count (a channel tile, not the 3 of a 3 x 3 window)
    and constant strides, so gcc keeps one pointer per operand in the micro-kernel.
    Returns the tile band's place, or None (nothing to move, or not legal)."""
    n = tile.band_n_member()
    chain = chain_below(tile)
    if not 0 < first < n or chain is None or len(chain) < 2 or \
            not all(is_band(x) for x in chain):
        return None
    depth = tile.get_tree_depth()
    # take the bands between the reductions and the point band out, and put them back
    # above the reductions (the tile band's options anchor its members: they cannot sink)
    node = tile.band_split(first).child(0).child(0)
    bands = []
    for _ in range(len(chain) - 1):
        flags = [node.band_member_get_coincident(k) for k in range(node.band_n_member())]
        bands.append((node.band_get_partial_schedule(), node.band_get_permutable(), flags))
        node = node.delete()
    node = node.parent()  # the reductions' band
    for mupa, permutable, coincident in reversed(bands):
        node = node.insert_partial_schedule(mupa).band_set_permutable(permutable)
        for k, flag in enumerate(coincident):
            node = node.band_member_set_coincident(k, flag)
    schedule = node.get_schedule()
    if not is_legal(schedule, reassociable_validity(scop, deps)):
        return None
    while node.get_tree_depth() > depth:
        node = node.parent()
    return node


def _rows_operands(scop: Scop, deps_of: dict[str, list[set[str]]], row: int, vec: int
                   ) -> list[str]:
    """Arrays read, never written, by the band's statements in one way only, with at least
    two subscripts, each one iterator or a constant (``repackable``), the last moving along
    the rows' member and none along the vector, all along band members: a register tile's
    rows operand read down its columns (``A[k, i]`` in A.T @ B)."""
    written = {scop.statement(name).target.array for name in deps_of
               if isinstance(scop.statement(name).target, Load)}
    reads: dict[str, set[tuple[str, ...]]] = {}
    out: list[str] = []
    for name, members in deps_of.items():
        in_band = set().union(*members)
        for ref in scop.statement(name).value.walk():
            if not isinstance(ref, Load):
                continue
            reads.setdefault(ref.array, set()).add(tuple(sub.to_c() for sub in ref.index))
            if len(ref.index) < 2 or ref.array in written or ref.array in out or \
                    not repackable(ref):
                continue
            used = set().union(*(sub.vars() for sub in ref.index))
            last = ref.index[-1].vars()
            if last and last <= members[row] and not used & members[vec] and used <= in_band:
                out.append(ref.array)
    return [array for array in out if len(reads[array]) == 1]


def _vector_operands(scop: Scop, deps_of: dict[str, list[set[str]]], row: int, vec: int
                     ) -> list[str]:
    """Arrays read, never written, by the band's statements, with at least two subscripts,
    the last moving along the vector member and none along the rows, and only along band
    members (a tile's footprint of constant size: not conv's ``X[.., oy + ky, ox + kx]``)."""
    written = {scop.statement(name).target.array for name in deps_of
               if isinstance(scop.statement(name).target, Load)}
    out: list[str] = []
    for name, members in deps_of.items():
        in_band = set().union(*members)
        for ref in scop.statement(name).value.walk():
            if not isinstance(ref, Load) or len(ref.index) < 2 or ref.array in written \
                    or ref.array in out:
                continue
            used = set().union(*(sub.vars() for sub in ref.index))
            if ref.index[-1].vars() & members[vec] and not used & members[row] and \
                    used <= in_band:
                out.append(ref.array)
    return out


def order_for_vectors(schedule: isl.Schedule, scop: Scop, deps: Deps | None = None,
                      registers: RegisterShape | None = None, target: CpuTarget = AVX512
                      ) -> isl.Schedule:
    """Untiled variants: the same inner-loop choice on each outermost band, and register
    tiles where a reduction allows them, else vector strips for the threads. Register tiles
    have the shape ``registers`` if given, else ``target.deep`` in deep bands (conv),
    ``target.registers`` in others."""
    for node in outermost_bands(schedule):
        path = node_path(node)
        node = node_at(schedule, path)
        constant = constant_members(member_dependence(node, scop), node.band_n_member())
        deep = tiled_members(node, scop, constant)[1]
        shape = registers or (target.deep if deep else target.registers)
        point = _permute_point_band(node, scop)
        # a deep band's regular tiles (conv's output channels x columns) run with the rows'
        # tiles outside: consecutive tiles then continue the same output rows, which the
        # hardware prefetchers stream; narrow and transposed tiles keep the vector's tiles
        # outside (bench/HISTORY.md, point 5)
        rows_outer = deep and shape == target.deep
        node = register_tile(point, scop, deps, vector_outer=not rows_outer, shape=shape)
        if node is point:
            node = strip_mine_vector(point, scop)
        schedule = node.get_schedule()
    return schedule


# Bytes per strip of a vector loop that only reductions enclose (a row vector times a
# matrix): two strips of a 1024-wide f32 row, one per thread; strips read B's rows in
# pieces, and pieces under 2 KiB ran slower (bench/HISTORY.md, point 5d).
VECTOR_STRIP_BYTES = 2048
# The same strips where the threads split the sum instead: whole rows of B up to 16 KiB,
# the prefetchers' stream (OpenBLAS's gemv blocks its rows by 4096 elements too).
SPLIT_STRIP_BYTES = 16384
# Steps of the innermost reduction each vector of a strip takes before its accumulators
# go back to memory (the reduction unrolled and jammed into the vector loop).
JAM_STEPS = 8


def strip_mine_vector(node: isl.ScheduleNode, scop: Scop) -> isl.ScheduleNode:
    """A permutable band whose only parallel member is its innermost, stride-1 one, under
    reductions (``C[0, j] += A[0, k] * B[k, j]``): strips of that member become the outer
    loop, the reductions run inside a strip, the innermost one in steps of ``JAM_STEPS``
    where no target moves along it; in a strip, the vector loop runs around the steps
    (unrolled). The threads share out the strips, or, where the band's statements are sums
    (``reductions.sum_targets``) and the band is outermost, the outermost reduction inside
    the strips, each thread adding into a private copy of the sums' targets (marks
    ``rfactor`` and ``split``; the C emitter chooses at run time). Returns the band's
    place."""
    n = node.band_n_member()
    if n < 2 or not node.band_get_permutable():
        return node
    deps_of = member_dependence(node, scop)
    constant = constant_members(deps_of, n)
    live = [k for k in range(n) if not constant[k]]
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(n)]
    if len(live) < 2 or not coincident[live[-1]] or any(coincident[k] for k in live[:-1]) \
            or not stride_one(scop, deps_of, live[-1]):
        return node
    vec, jam = live[-1], live[-2]
    # steps only where the statements reduce along ``jam``: where a target moves along it
    # (a softmax's passes down a column write each row), the strip's rows run one by one
    steps = 1 if targets_move(scop, deps_of, [jam]) else JAM_STEPS
    split = sum_targets(scop, set(deps_of)) is not None and not band_above(node)
    order = [vec, *(k for k in range(n) if k != vec)]
    node = reorder_band(node, order)
    elem = elem_bytes(scop)
    # the strips' loop, then the reductions (tiles of 1, JAM_STEPS for the innermost) ...
    sizes = [(SPLIT_STRIP_BYTES if split else VECTOR_STRIP_BYTES) // elem] + [1] * (n - 1)
    sizes[order.index(jam)] = steps
    # full steps isolated (a constant count: gcc vectorizes the loop around them), the
    # last, partial strip in the threads' loop with the others
    node = tile_band(node, sizes, full_along=[order.index(jam)] if steps > 1 else [])
    if split:
        node = split_and_mark(node, [LoopMark(True, RFACTOR) if k == vec else
                                     LoopMark(False, SPLIT) if k == live[0] else
                                     LoopMark(coincident[k]) for k in order])
        for _ in range(2 * n - 1):
            node = node.child(0)
    # ... over the strip's points: the vector loop around the reduction's steps
    point = [k for k in order if k not in (vec, jam)] + [vec, jam]
    node = reorder_band(node.child(0), [order.index(k) for k in point])
    depth = node.get_tree_depth()
    jammed = jam if steps > 1 else None
    node = split_and_mark(node, [LoopMark(True, VECTOR) if k == vec else
                                 LoopMark(False, f"unroll{steps}") if k == jammed else
                                 LoopMark(coincident[k]) for k in point])
    while node.get_tree_depth() > depth - (2 * n if split else 1):
        node = node.parent()
    return node
