"""Register tiles and packed tiles in C: the accumulators of a rows x vector register tile
kept in a local array around its reduction loops (a partial tile run as a full one where
that is safe), one cell kept in a local around an unrolled reduction, and a tile of a
vector operand copied into an aligned local buffer with padded rows. ``RegisterTiles`` is a
part of ``emit.CEmitter``, which reads the marks."""

from __future__ import annotations

import re
from dataclasses import dataclass

import cgen
import islpy as isl

from ..astgen import ITERATOR, PACK_FIELD, PACK_ITEM, PACK_SEP
from ..schedule.registers import MAX_REG_VECTOR_BYTES
from ..schedule.tree import INIT, PROMOTE, RROW, RVEC, parse_mark
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE, Expr, Index, Load, Scalar, Select
from ..scop.ir import Statement
from .astnodes import (
    PACKED_PARALLEL_MIN_WORK,
    PARALLEL_MIN_WORK,
    LoopState,
    UnsharedWorkError,
    ast_users,
    constant_trip,
    count_role_loops,
    find_role_loop,
    loop_annotation,
)

# The largest packed tile (a stack buffer; half of the L2 the tiles are sized for).
PACK_MAX_BYTES = 512 * 1024
# Register tiles of at least this many rows read their rows' operand from a repacked copy
# (``RegisterTiles.repack``): reading it in place takes one pointer per row, and gcc keeps
# at most about 12 of them in the 15 general registers (16 rows of conv: 8 pointers
# reloaded from the stack in every step of the micro-kernel). With 6 rows the copy's layout
# was slower than reading in place (measured: conv (1, 64, 64, 56) 0.88x).
REPACK_MIN_ROWS = 12
# ... and when the tile's statement does this many multiply-adds per element copied (the
# copy's cost, about 2 cycles an element, then stays under 3% of the work; conv
# (1, 64, 64, 9): 49, where the copy made the call 1.4x slower).
REPACK_MIN_REUSE = 1024


# A packed tile's copy: C element type, buffer name, buffer elements, the copy's loops and
# the box's sizes (C expressions)
PackCopy = tuple[str, str, int, cgen.Generable, list[str]]


@dataclass
class Repack:
    """A copy of a read-only array made at a function's entry, in another dimension order
    (``RegisterTiles.repack``), where the work pays for it (else ``buf`` is NULL)."""

    buf: str
    strides: list[str]  # C, per dimension of the array
    alloc: list[cgen.Generable]  # declarations: the padded row's length, the buffer
    fail: str  # C: the allocation was wanted and failed
    copy: cgen.Generable
    release: cgen.Generable  # the buffer kept for the next call (pd_give)


@dataclass
class Padded:
    """A partial register tile run as a full one (``RegisterTiles._padded_plan``)."""

    stmt: Statement
    args: dict[str, str]  # C values of the statement's iterators (rows, vector: set later)
    lo: dict[str, str]  # the box: smallest value and extent of each iterator
    size: dict[str, str]
    rows: int
    width: int
    where: str  # C: the box is not empty (else there are no instances: nothing runs)
    checks: list[str]  # more run-time conditions (C): reads stay in rows, the width fits
    shift: bool = False  # the vector ends at the box's top (it starts below the box)


@dataclass(frozen=True)
class _Tile:
    """What ``RegisterTiles.register_tile`` found of a register tile around ``n``."""

    n: isl.AstNode
    stmts: list[Statement]
    args: dict[str, str]
    target: Load
    row_dim: int
    vec_dim: int
    row_var: str
    vec_var: str
    row_it: str
    vec_it: str
    extents: list[int | None]
    transposed: bool
    saved_packed: dict


@dataclass
class HeldCell:
    """The cell an unrolled loop's statement updates, held in ``local`` over the loop
    (``RegisterTiles.held_cell``); ``decls`` declare the iterators its subscripts use."""

    array: str
    index: tuple[Aff, ...]
    local: str
    ctype: str
    decls: list[cgen.Generable]
    cell: str  # C: the cell itself (in the array, or in a copy the array is read from)


class RegisterTiles:
    """The register-tile and packing methods of ``emit.CEmitter``."""

    def held_cell(self, n: isl.AstNode, it: str) -> HeldCell | None:
        """Scalar replacement for an unrolled loop whose one statement updates a cell that
        does not move with the loop (the N = 1 matmul's steps of k: ``C[0, j] += A[0, k] *
        B[k, j]``) and reads no other cell of that array: the cell is loaded into a local
        before the loop and stored after it (``held_loop``). In the functions OpenMP
        outlines gcc no longer knows the arrays apart, restrict being lost: it stored the
        cell after every step and loaded A's values again, and the N = 1 matmul ran at half
        NumPy's speed. None where the loop is not of that form."""
        body = n.for_get_body()
        if body.get_type() != isl.ast_node_type.user:
            return None
        call = body.user_get_expr()
        stmt = self.scop.statement(call.get_op_arg(0).get_id().get_name())
        target = stmt.target
        if not isinstance(target, Load) or target.array in self.promoted:
            return None
        if any(isinstance(e, Load) and e.array == target.array and e.index != target.index
               for e in stmt.value.walk()):
            return None
        used = set().union(*(a.vars() for a in target.index))
        args = [self.ast_expr(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg())]
        decls = [(v, a) for v, a in zip(stmt.iters, args, strict=True) if v in used]
        if any(re.search(rf"\b{it}\b", a) for _, a in decls):
            return None  # the cell moves with the loop
        self.held_count += 1
        return HeldCell(target.array, target.index, f"pd_cell{self.held_count}",
                        C_TYPE[self.scop.array(target.array).dtype],
                        [cgen.Statement(f"const int64_t {v} = {a}") for v, a in decls],
                        self.load(target))

    def held_loop(self, n: isl.AstNode, held: HeldCell, unrolled: list[cgen.Generable],
                  it: str, init: str, cond: str) -> list[cgen.Generable]:
        """The unrolled loop ``n`` with its cell loaded before and stored after; a loop
        that may have no iterations does both only where it runs (a thread whose share has
        none must not store a cell another thread updates)."""
        code = [cgen.Statement(f"{held.ctype} {held.local} = {held.cell}"), *unrolled,
                cgen.Statement(f"{held.cell} = {held.local}")]
        if not (constant_trip(n) or 0) > 0:
            code = [cgen.If(re.sub(rf"\b{it}\b", f"({init})", cond), cgen.Block(code))]
        return [cgen.Block([*held.decls, *code])]

    def _promoted_ref(self, e: Load) -> tuple[str, str, str, str, str]:
        """The accumulator cell of a target access: its row and vector iterators minus
        their values at the tile's origin (``C[i, k + 1]`` -> ``acc[i - i0][k - k0]``)."""
        acc, row_dim, vec_dim, base_row, base_vec = self.promoted[e.array]
        (row,) = e.index[int(row_dim)].vars()
        (vec,) = e.index[int(vec_dim)].vars()
        return acc, f"({row})", f"({vec})", base_row, base_vec

    def register_tile(self, n: isl.AstNode, st: LoopState, box: str = ""
                      ) -> list[cgen.Generable] | None:
        """Around the reduction loop ``n`` of a register tile: copy the target's rows x
        vector footprint into a local array, accumulate there, copy it back. A partial tile
        runs as a full one over its instance box (``box``, see ``_padded_plan``) where that
        is safe; otherwise (None) the plain loops run."""
        body_node = n.for_get_body()
        row = find_role_loop(body_node, RROW, through_ifs=True)
        vec = find_role_loop(body_node, RVEC, through_ifs=True)
        if row is None or vec is None:
            return None
        extents = [constant_trip(x) for x in (row, vec)]
        full = None not in extents and find_role_loop(body_node, RROW) is not None and \
            find_role_loop(body_node, RVEC) is not None
        if not full and (not box or count_role_loops(body_node, RROW) != 1):
            return None
        row_it, vec_it = (x.for_get_iterator().get_id().get_name() for x in (row, vec))
        users = ast_users(body_node, self)
        stmts = [self.scop.statement(name) for name, _ in users]
        target = stmts[0].target
        if not isinstance(target, Load) or any(
                not isinstance(s.target, Load) or s.target.array != target.array
                or [str(i) for i in s.target.index] != [str(i) for i in target.index]
                for s in stmts):
            return None
        # which target subscript moves with the rows, which with the vector
        args = dict(zip(stmts[0].iters, users[0][1]))
        row_dim = vec_dim = None
        for d, sub in enumerate(target.index):
            text = " ".join(args.get(v, "") for v in sub.vars())
            if re.search(rf"\b{row_it}\b", text):
                row_dim = d
            if re.search(rf"\b{vec_it}\b", text):
                vec_dim = d
        if row_dim is None or vec_dim is None or row_dim == vec_dim:
            return None
        row_sub, vec_sub = target.index[row_dim], target.index[vec_dim]
        if len(row_sub.vars()) != 1 or len(vec_sub.vars()) != 1:
            return None
        (row_var,), (vec_var,) = row_sub.vars(), vec_sub.vars()
        saved_packed = dict(self.packed)
        # a transposed tile (RegisterShape.transposed: the vector along a subscript of the
        # target that is not its last) reads the operands that move along the vector from
        # copies with the vector's dimension innermost, always: in place, each vector would
        # be a gather
        transposed = vec_dim != len(target.index) - 1
        if transposed:
            lanes = MAX_REG_VECTOR_BYTES // dtype_bytes(self.scop.array(target.array).dtype)
            if not self.repack(stmts, args, vec_var, row_var, lanes, always=True):
                return None
        padded = None
        if not full:
            padded = self._padded_plan(stmts, users, box, row_var, vec_var, row_it, vec_it)
            if padded is None:
                self.packed = saved_packed
                return None
        # a partial vector of at most half the tile's width runs with half the lanes: the
        # cells past the box cost half as much (33 columns: 32 + 1 computed as 32 + 16)
        narrow = self._narrow_plan(padded, stmts, users, box, row_var, vec_var, row_it, vec_it)
        tile = _Tile(n, stmts, args, target, row_dim, vec_dim, row_var, vec_var, row_it,
                     vec_it, extents, transposed, saved_packed)
        entry = dict(self.packed)  # each version starts from the copies made so far
        wide = self._tile_version(tile, st, padded)
        if wide is None or narrow is None:
            return wide
        self.packed = dict(entry)
        half = self._tile_version(tile, st, narrow, fallback=cgen.Block(wide))
        return half if half is not None else wide

    def _narrow_plan(self, padded: Padded | None, stmts: list[Statement],
                     users: list[tuple[str, list[str]]], box: str, row_var: str,
                     vec_var: str, row_it: str, vec_it: str) -> Padded | None:
        """For a partial register tile of two 64-byte vectors whose vector can be at most
        half that at run time: the same tile with one of them, or None. Measured on Zen 4,
        2 threads, square matmul against the wide tile alone: 33^3 1.11x, 40^3 1.12x,
        65^3 1.12x, 80^3 1.14x, 100^3 1.08x, 129^3 1.07x, 300^3 1.04x; halving a one-zmm
        tile (the narrow tiers, 17^3 to 24^3) ran 0.94-0.97x, so those stay whole."""
        if padded is None or padded.size[vec_var] == str(padded.width):
            return None
        half = padded.width // 2
        elem = dtype_bytes(self.scop.array(stmts[0].target.array).dtype)
        if half * elem < MAX_REG_VECTOR_BYTES // 2:
            return None
        return self._padded_plan(stmts, users, box, row_var, vec_var, row_it, vec_it,
                                 max_width=half)

    def _tile_version(self, tile: _Tile, st: LoopState, padded: Padded | None,
                      fallback: cgen.Generable | None = None) -> list[cgen.Generable] | None:
        """The register tile around ``tile.n`` (full, or the partial one ``padded``); where
        a partial tile's run-time checks fail, ``fallback`` runs (by default the plain
        loops)."""
        n, stmts, args, target = tile.n, tile.stmts, tile.args, tile.target
        row_var, vec_var, row_it, vec_it = tile.row_var, tile.vec_var, tile.row_it, tile.vec_it
        saved_packed = tile.saved_packed
        repacked = [] if tile.transposed else \
            self.repack(stmts, args, row_var, vec_var,
                        tile.extents[0] if padded is None else padded.rows)
        self.tile_count += 1
        k = self.tile_count
        acc = f"pd_acc{k}"
        ctype = C_TYPE[self.scop.array(target.array).dtype]
        # base iterator values: the statement's iterators with the tile's point loops at 0
        # (a partial tile: at the smallest values of its box)
        bases = {v: f"pd_b{k}_{v}" for v in stmts[0].iters}
        decl = [cgen.Statement(f"int64_t {b}") for b in bases.values()]
        zero = [cgen.Statement(f"const int64_t {row_it} = 0"),
                cgen.Statement(f"const int64_t {vec_it} = 0")]
        values = dict(args)
        if padded is not None:
            zero = []
            values[row_var], values[vec_var] = padded.lo[row_var], padded.lo[vec_var]
            if padded.shift:
                values[vec_var] = \
                    f"({padded.lo[vec_var]}) + ({padded.size[vec_var]}) - {padded.width}"
        assign = [cgen.Statement(f"{bases[v]} = {values[v]}") for v in stmts[0].iters
                  if not _mentions_inner(values[v], n, row_it, vec_it)]
        if len(assign) != len(stmts[0].iters):
            # an iterator of the target depends on the reduction loops: no promotion
            tgt_vars = set().union(*(sub.vars() for sub in target.index))
            assign = [cgen.Statement(f"{bases[v]} = {values[v]}") for v in stmts[0].iters
                      if v in tgt_vars]
            if any(_mentions_inner(values[v], n, row_it, vec_it) for v in tgt_vars):
                self.tile_count -= 1
                self.packed = saved_packed
                return None
        env = {v: Aff.var(bases[v]) for v in bases}
        env[row_var] = Aff.var(bases[row_var]) + Aff.var("pd_r")
        env[vec_var] = Aff.var(bases[vec_var]) + Aff.var("pd_v")
        cells = [i.subst(env) for i in target.index]
        cell = f"{target.array}[{self.flat_index(target.array, cells)}]"
        # the accumulators' first values: the cells, or the values of the init statement
        # fused before the tile (schedule.inits), whose loops then do not run
        start = self._init_values([c.to_c() for c in cells])
        first_value, decls = (cell, []) if start is None else start
        if padded is None:
            rows, width = tile.extents
            copy_in = [self._tile_copy(f"{acc}[pd_r][pd_v] = {first_value}", rows, width,
                                       decls=decls)]
            copy_out = self._tile_copy(f"{cell} = {acc}[pd_r][pd_v]", rows, width)
        else:  # the accumulators of cells outside the box start at 0 and are dropped
            rows, width = padded.rows, padded.width
            nr, nv = f"pd_nr{k}", f"pd_nv{k}"
            decl += [cgen.Statement(f"const int64_t {nr} = {padded.size[row_var]}"),
                     cgen.Statement(f"const int64_t {nv} = {padded.size[vec_var]}")]
            # the box's cells: the first nv of the vector, or its last nv when it ends at the
            # box's top (the cells below are other tiles': neither read nor written)
            first = f"{width} - {nv}" if padded.shift else 0
            copy_in = [self._tile_copy(f"{acc}[pd_r][pd_v] = 0", rows, width),
                       self._tile_copy(f"{acc}[pd_r][pd_v] = {first_value}", nr, nv if not
                                       padded.shift else width, first, decls=decls)]
            copy_out = self._tile_copy(f"{cell} = {acc}[pd_r][pd_v]", nr,
                                       nv if not padded.shift else width, first)
            clamped = f"{bases[row_var]} + pd_min(pd_r, {nr} - 1)"
            # rows past the box read a repacked copy's zeros, in bounds (not where a
            # condition on the row guards a load that does not move with it, as for columns
            # in _padded_plan)
            padded.args[row_var] = f"{bases[row_var]} + pd_r" \
                if repacked and not _guarded_along(padded.stmt.value, row_var) else clamped
            padded.args[vec_var] = f"{bases[vec_var]} + pd_v"
        self.promoted[target.array] = (acc, str(tile.row_dim), str(tile.vec_dim),
                                       bases[row_var], bases[vec_var])
        self.padded = padded
        try:
            body = self.loop(n, st, parallel=False)
            if repacked:  # where the copies were not made, the arrays are read in place
                self.packed = dict(saved_packed)
                if padded is not None:
                    padded.args[row_var] = clamped
                body = [cgen.If(" && ".join(repacked), cgen.Block(body),
                                cgen.Block(self.loop(n, st, parallel=False)))]
        finally:
            del self.promoted[target.array]
            self.padded = None
            self.packed = saved_packed
        code = cgen.Block([*(self.init_loops(st, PROMOTE) if start is None else []),
                           *decl, cgen.Block([*zero, *assign]),
                           cgen.Statement(f"{ctype} {acc}[{rows}][{width}]"),
                           *copy_in, *body, copy_out])
        if padded is None:
            return [code]
        if padded.checks:
            # where the vector's cells outside the box would read past the end of a packed
            # row (a tile not aligned to the vector in the packed box), or the box is wider
            # than the tile, the plain loops run
            other = fallback if fallback is not None else cgen.Block(
                [*self.init_loops(st, PROMOTE), *self.loop(n, st, parallel=False)])
            code = cgen.If(" && ".join(padded.checks), code, other)
        # where the box is empty nothing runs (the plain loops' reduction loops around an
        # empty vector loop took a quarter of conv (2, 8, 28, 34), whose columns are one
        # whole tile)
        return [code if padded.where == "1" else cgen.If(padded.where, code)]

    def repack(self, stmts: list[Statement], args: dict[str, str], row_var: str,
               vec_var: str, rows: int, always: bool = False) -> list[str]:
        """For a register tile of ``rows`` >= ``REPACK_MIN_ROWS`` rows: read every array that
        moves along the rows only (conv's ``Wt[f, c, ky, kx]``: read-only, subscripts single
        iterators, one of them the rows') from a copy made at the function's entry, whose
        innermost dimension is the rows' (zero-filled past its end: rounded up to 16 elements,
        and a tile's rows more), the others in the order of the loops that move them in this
        tile. The rows then read consecutive cells, at constant offsets from one pointer.
        Returns the copies' buffers (NULL where the work does not pay for them: the caller
        emits the tile twice) when every read that moves along the rows comes from such a copy.
        ``always``: for any number of rows, the copy made whatever the work (a transposed
        tile's vector operands, called with the vector's member as ``row_var``)."""
        if (rows < REPACK_MIN_ROWS and not always) or len(stmts) != 1:
            return []
        written = {s.target.array for s in self.scop.statements if isinstance(s.target, Load)}
        along_rows = [ref for ref in stmts[0].value.walk() if isinstance(ref, Load) and
                      any(row_var in sub.vars() for sub in ref.index)]
        orders = []
        for ref in along_rows:
            lins = [sub.linear() for sub in ref.index]
            if ref.array in written or any(lin is None or lin[1] != 0 or len(lin[0]) != 1 or
                                           set(lin[0].values()) != {1} for lin in lins):
                return []
            its = [next(iter(lin[0])) for lin in lins]
            if its.count(row_var) != 1 or vec_var in its:
                return []

            def depth(it: str) -> int:  # the deepest loop the iterator's value uses here
                found = re.findall(rf"\b{ITERATOR}(\d+)\b", args.get(it, ""))
                return max((int(x) for x in found), default=-1)

            row_dim = its.index(row_var)
            others = sorted((d for d in range(len(its)) if d != row_dim),
                            key=lambda d: (depth(its[d]), d))
            orders.append([*others, row_dim])
        pad = -(-rows // 16) * 16  # a partial tile's rows past the last one read zeros
        for ref, order in zip(along_rows, orders, strict=True):
            key = (ref.array, tuple(order), pad)
            if key not in self.repacks:
                self.repacks[key] = self._repack_copy(ref.array, order, pad, stmts[0].name,
                                                      0 if always else REPACK_MIN_REUSE)
            self.packed[ref.array] = (self.repacks[key].buf, ["0"] * len(order),
                                      self.repacks[key].strides)
        return sorted({self.packed[ref.array][0] for ref in along_rows})

    def _repack_copy(self, array: str, order: list[int], pad: int, stmt: str,
                     min_reuse: int) -> Repack:
        """A copy of ``array`` with its dimensions in ``order`` (the last one rounded up to
        16 elements, then ``pad`` more, zeros), made where ``stmt`` does ``min_reuse``
        multiply-adds per element of the array (0: always), in local tiles of 16 x 16
        (``_transpose``). In the copy's own order, conv's weights (9.4 MiB at 512 channels)
        were read a line per element, the lines 18 KiB apart in two L1 sets, nine times
        over, and the threads shared out the 3 rows of the window: 3.2 ms, now 1.3 ms
        (from C, 2 threads). The buffer is kept from one call to the next (``pd_take``)."""
        arr = self.scop.array(array)
        shape = [f"({d.to_c()})" for d in arr.shape]
        buf = f"pd_rp{len(self.repacks) + 1}"
        row_len = f"{buf}_n"
        extents = [shape[d] for d in order[:-1]] + [row_len]
        strides = [""] * len(order)
        stride = "1"
        for pos in range(len(order) - 1, -1, -1):
            strides[order[pos]] = stride
            stride = extents[pos] if stride == "1" else f"{stride} * {extents[pos]}"
        ctype = C_TYPE[arr.dtype]
        wanted = f"({self.work_expr([stmt])}) >= {min_reuse} * {' * '.join(shape)}" \
            if min_reuse else "1"
        alloc = [cgen.Statement(f"const int64_t {row_len} = ({shape[order[-1]]} + 15) / 16 * 16"
                                f" + {pad}"),
                 cgen.Statement(f"static _Atomic(void *) {buf}_keep = NULL"),
                 cgen.Statement(f"{ctype} *{self.restrict} {buf} = {wanted} ? ({ctype} *)"
                                f"pd_take(&{buf}_keep, sizeof({ctype}) * (size_t)({stride})) "
                                ": NULL")]
        its = [f"pd_q{d}" for d in range(len(order))]
        dst = " + ".join(f"{its[d]} * {strides[d]}" for d in order)
        src = self.flat_index(array, [Aff.var(q) for q in its])
        copy = cgen.If(buf, cgen.Block(self._transpose(
            array, shape, order, its, f"{buf}[{dst}]", f"{array}[{src}]", row_len,
            ctype, f"{stride} >= 65536")))
        return Repack(buf, strides, alloc, f"({wanted} && !{buf})", copy,
                      cgen.Statement(f"pd_give(&{buf}_keep, {buf})"))

    def _transpose(self, array: str, shape: list[str], order: list[int], its: list[str],
                   dst: str, src: str, row_len: str, ctype: str, threads: str
                   ) -> list[cgen.Generable]:
        """The loops of a repack's copy (``dst = src`` over the copy's cells, zeros in its
        rows' padding up to ``row_len``): tiles of 16 x 16 cells along the copy's two
        innermost dimensions, each read into a local tile in the array's order of the two,
        then written a line at a time; the tiles of the second dimension shared out among
        the threads, the other dimensions in the array's own order inside."""
        inner = order[-1]
        if len(order) < 2:  # a one-dimensional copy: one loop
            return [cgen.Pragma(f"omp parallel for if({threads})"), cgen.For(
                f"int64_t {its[inner]} = 0", f"{its[inner]} < {row_len}", f"{its[inner]}++",
                cgen.Block([cgen.Statement(
                    f"{dst} = {its[inner]} < {shape[inner]} ? {src} : 0")]))]
        second = order[-2]
        qi, qs = its[inner], its[second]
        cell = f"pd_t[{qs} - pd_qs][{qi} - pd_qi]"
        # the local tile filled in the array's order of the two dimensions
        first, last = sorted((inner, second))
        loop = {inner: (qi, "pd_qi", "16"), second: (qs, "pd_qs", "pd_ns")}
        fill: cgen.Generable = cgen.Statement(f"{cell} = {qi} < {shape[inner]} ? {src} : 0")
        for d in (last, first):
            q, base, size = loop[d]
            fill = cgen.For(f"int64_t {q} = {base}", f"{q} < {base} + {size}", f"{q}++",
                            cgen.Block([fill]))
        store = cgen.For(f"int64_t {qs} = pd_qs", f"{qs} < pd_qs + pd_ns", f"{qs}++",
                         cgen.Block([cgen.Pragma("omp simd"), cgen.For(
                             f"int64_t {qi} = pd_qi", f"{qi} < pd_qi + 16", f"{qi}++",
                             cgen.Block([cgen.Statement(f"{dst} = {cell}")]))]))
        body: cgen.Generable = cgen.Block([
            cgen.Statement(f"{ctype} pd_t[16][16]"),
            cgen.Statement(f"const int64_t pd_ns = pd_min(16, {shape[second]} - pd_qs)"),
            fill, store])
        for d in reversed([d for d in range(len(order)) if d not in (inner, second)]):
            body = cgen.For(f"int64_t {its[d]} = 0", f"{its[d]} < {shape[d]}", f"{its[d]}++",
                            cgen.Block([body]))
        return [cgen.Pragma(f"omp parallel for if({threads})"),
                cgen.For("int64_t pd_qs = 0", f"pd_qs < {shape[second]}", "pd_qs += 16",
                         cgen.Block([cgen.For("int64_t pd_qi = 0", f"pd_qi < {row_len}",
                                              "pd_qi += 16", cgen.Block([body]))]))]

    def _padded_plan(self, stmts: list[Statement], users: list[tuple[str, list[str]]],
                     box: str, row_var: str, vec_var: str, row_it: str, vec_it: str,
                     max_width: int | None = None) -> Padded | None:
        """How a partial register tile runs as a full one. ``box`` (astgen) gives, per
        iterator of the tile's one statement, its smallest value, its extent and its largest
        extent, and says that the instances form that box: every cell of the target in it
        takes the same reduction iterations. The tile then computes all rows x width cells:
        a row outside the box reads the last row in it (its loads stay in bounds) and the
        cells outside are never stored. Columns outside the box read past the box's end, so
        a partial vector needs every load that moves along it to come from a packed buffer
        (rows padded and zero-filled, see ``pack``), checked at run time to stay in its row.
        None when that does not hold. With ``max_width``, the tile is that many lanes wide,
        for boxes no wider (a run-time check)."""
        if len(users) != 1:
            return None
        stmt, args = stmts[0], users[0][1]
        where, *boxes = box.split(PACK_FIELD)
        fields = [f.split(PACK_ITEM) for f in boxes]
        if len(fields) != len(stmt.iters):
            return None
        lo, size, top = ({v: f[x] for v, f in zip(stmt.iters, fields, strict=True)}
                         for x in range(3))
        room = fields[stmt.iters.index(vec_var)][3:] or [""]
        for sub, var in ((stmt.target.index[d], v) for d, v in
                         _target_dims(stmt.target, row_var, vec_var)):
            lin = sub.linear()
            if lin is None or lin[0] != {var: 1}:
                return None
        elem = dtype_bytes(self.scop.array(stmt.target.array).dtype)
        if not top[row_var] or not top[vec_var]:  # unbounded
            return None
        # the rows the box can have; its width rounded up to whole vectors: 16, 32 or 64
        # bytes (a narrow tier's tile: CpuTarget.narrow, or a register tile's vector)
        lanes = next(b for b in (16, 32, 64) if int(top[vec_var]) * elem <= b or b == 64) // elem
        rows, width = int(top[row_var]), -(-int(top[vec_var]) // lanes) * lanes
        if rows * width > 4096:  # not a register tile
            return None
        inner = re.compile(rf"\b({row_it}|{vec_it})\b")
        others = {v: a for v, a in zip(stmt.iters, args, strict=True)
                  if v not in (row_var, vec_var)}
        if any(inner.search(a) for a in others.values()):
            return None
        checks = []
        if max_width is not None:
            width = max_width
            checks.append(f"({size[vec_var]}) <= {width}")
        shift = False
        if size[vec_var] != str(width):  # a partial vector
            moving = [ref for ref in stmt.value.walk() if isinstance(ref, Load) and
                      ref.array != stmt.target.array and
                      any(vec_var in sub.vars() for sub in ref.index)]
            # columns past the box evaluate the statement there: a load that does not move
            # along the vector, under a condition that does (`A[i, k - 1] if k + j >= M`),
            # could leave the array there although it stays inside at every instance
            past = not _guarded_along(stmt.value, vec_var)
            if past and all(self._repacked_along(ref, vec_var) for ref in moving):
                pass  # a transposed tile's copies: zeros past the vector's end, in bounds
            elif past and all(ref.array in self.packed and ref.index[-1].vars() == {vec_var} and
                     vec_var not in set().union(*(sub.vars() for sub in ref.index[:-1]))
                     for ref in moving):
                for ref in moving:
                    _, offsets, strides = self.packed[ref.array]
                    top_cell = Aff.var(f"({lo[vec_var]} + {width - 1})")
                    last = ref.index[-1].subst({vec_var: top_cell})
                    checks.append(f"({last.to_c()}) - ({offsets[-1]}) < {strides[-2]}")
            elif room[0] and not any(ref.array in self.packed for ref in moving):
                # the tile moved down to end at the box's top, over instances (a packed
                # copy's box may start at the tile's box: it would be read below its start)
                shift = True
                checks.append(f"({lo[vec_var]}) + ({size[vec_var]}) - {width} >= ({room[0]})")
            else:
                return None
        return Padded(stmt, dict(others), lo, size, rows, width, where, checks, shift)

    def _repacked_along(self, ref: Load, var: str) -> bool:
        """``ref`` reads a repacked copy (``repack``) whose innermost dimension is ``var``'s:
        its rows run on past the array's end by the widest register vector, in zeros."""
        if ref.array not in self.packed or \
                self.packed[ref.array][0] not in {r.buf for r in self.repacks.values()}:
            return False
        strides = self.packed[ref.array][2]
        return any(sub.vars() == {var} and strides[d] == "1" for d, sub in enumerate(ref.index))

    def padded_rows(self, st: LoopState) -> list[cgen.Generable]:
        """The rows x vector loops of a partial register tile run as a full one."""
        padded = self.padded
        st.used_locals |= self.stmt_locals[padded.stmt.name]
        args = [padded.args[v] for v in padded.stmt.iters]
        vec = cgen.For("int64_t pd_v = 0", f"pd_v < {padded.width}", "pd_v++",
                       cgen.Block([self.statement(padded.stmt, args)]))
        rows = cgen.For("int64_t pd_r = 0", f"pd_r < {padded.rows}", "pd_r++",
                        cgen.Block([cgen.Pragma(self.simd_pragma), vec]))
        return [cgen.Pragma("GCC unroll 16"), rows]

    def pack(self, n: isl.AstNode, st: LoopState) -> list[cgen.Generable]:
        """Under a pack mark whose footprint boxes astgen annotated: copy each box into a
        local buffer (of the box's largest size) whose rows are padded by 64 bytes, so that
        a power-of-two leading dimension does not map a tile's rows to a few cache sets,
        and read the array from the buffer below. Without boxes, the plain code."""
        boxes = loop_annotation(n)
        if not boxes:  # no box of bounded size (untiled code)
            return self.node(n.mark_get_node(), st)
        if st.region:  # a pack before the region's shared loops: its own region would nest
            raise UnsharedWorkError("pack")
        saved = dict(self.packed)
        copies: list[PackCopy] = []
        for box in boxes.split(PACK_SEP):
            array, bounds_text, sizes_text, offsets_text = box.split(PACK_FIELD)
            bounds = [int(x) for x in bounds_text.split(",")]
            sizes, offsets = sizes_text.split(PACK_ITEM), offsets_text.split(PACK_ITEM)
            arr = self.scop.array(array)
            elem = dtype_bytes(arr.dtype)
            # rows: a whole number of register-tile vectors (a partial register tile reads
            # them all; the widest target's, which every narrower one divides), then 64
            # bytes more
            vector = MAX_REG_VECTOR_BYTES // elem
            row = -(-bounds[-1] // vector) * vector + 64 // elem if len(bounds) > 1 \
                else bounds[-1]
            strides = [1] * len(bounds)
            for d in range(len(bounds) - 2, -1, -1):
                strides[d] = strides[d + 1] * (row if d == len(bounds) - 2 else bounds[d + 1])
            total = strides[0] * bounds[0]
            if total * elem > PACK_MAX_BYTES:
                continue
            self.pack_count += 1
            buf = f"pd_pk{self.pack_count}"
            its = [f"pd_q{d}" for d in range(len(sizes))]
            src = self.flat_index(array, [Aff.var(f"({o})") + Aff.var(q)
                                          for o, q in zip(offsets, its, strict=True)])
            dst = " + ".join(f"{q} * {w}" for q, w in zip(its, strides, strict=True))
            q = its[-1]
            copy: cgen.Generable = cgen.Block([
                cgen.Pragma("omp simd"),
                cgen.For(f"int64_t {q} = 0", f"{q} < ({sizes[-1]})", f"{q}++",
                         cgen.Block([cgen.Statement(f"{buf}[{dst}] = {array}[{src}]")])),
                # the rest of the row is zeros: what a partial register tile reads there
                cgen.For(f"int64_t {q} = {sizes[-1]}", f"{q} < {row}", f"{q}++",
                         cgen.Block([cgen.Statement(f"{buf}[{dst}] = 0")]))])
            for d in range(len(sizes) - 2, -1, -1):
                copy = cgen.For(f"int64_t {its[d]} = 0", f"{its[d]} < ({sizes[d]})",
                                f"{its[d]}++", cgen.Block([copy]))
            copies.append((C_TYPE[arr.dtype], buf, total, copy, sizes))
            self.packed[array] = (buf, offsets, strides)
        try:
            if not st.in_parallel and st.team is None and copies:
                try:
                    return self._pack_region(n, copies)
                except UnsharedWorkError:
                    pass
            return [cgen.Block([*self._pack_copies(copies, st), *self.node(n.mark_get_node(), st)])]
        finally:
            self.packed = saved

    def _buffer(self, ctype: str, buf: str, total: int) -> list[cgen.Generable]:
        # read through a restrict pointer: with the array itself in the function that
        # holds the register tiles (a pack inside a parallel loop or region), gcc 12 kept
        # their accumulators in memory (a load and a store per FMA; batched matmul 8 x
        # 256^3 ran at 45% of 1 x 256^3 per thread)
        return [cgen.Statement(f"{ctype} {buf}_s[{total}] __attribute__((aligned(64)))"),
                cgen.Statement(f"{ctype} *{self.restrict} {buf} = {buf}_s")]

    def _pack_copies(self, copies: list[PackCopy], st: LoopState) -> list[cgen.Generable]:
        """The buffers and their copies, where the pack's body forks threads of its own."""
        out: list[cgen.Generable] = []
        for ctype, buf, total, copy, sizes in copies:
            out += self._buffer(ctype, buf, total)
            if len(sizes) > 1 and not st.in_parallel:
                # outside the threads' loop: the threads share out the copy's rows (the
                # buffer is shared; one thread copying while the other waited cost 3-4% of
                # a 2-thread matmul)
                size = " * ".join(f"({x})" for x in sizes)
                out.append(cgen.Pragma(
                    f"{self.parallel_pragma} if({size} >= {PARALLEL_MIN_WORK} && "
                    f"({sizes[0]}) >= pd_threads())"))
            out.append(copy)
        return out

    def _pack_region(self, n: isl.AstNode, copies: list[PackCopy]) -> list[cgen.Generable]:
        """One parallel region around a pack and its body, whose loops share out their
        iterations without forks of their own (``emit.CEmitter.region_loop``). Every thread
        copies the tile into a buffer of its own: reading a tile that another core copied
        cost 4-6% of a 2-thread 1024^3 matmul (its lines move between the cores' caches at
        every tile), more than copying it twice."""
        child = n.mark_get_node()
        body = self.node(child, LoopState(region=True))
        work = self.work_expr(name for name, _ in ast_users(child, self))
        own: list[cgen.Generable] = []  # each thread's buffers and copies
        for ctype, buf, total, copy, _ in copies:
            own += [*self._buffer(ctype, buf, total), copy]
        return [cgen.Pragma(f"omp parallel if({work} >= {PACKED_PARALLEL_MIN_WORK})"),
                cgen.Block([*own, *body])]

    def init_loops(self, st: LoopState, role: str) -> list[cgen.Generable]:
        """Under a promote mark that an init's loops precede, where the tile's statement runs
        as plain code: those loops, first."""
        if role != PROMOTE or self.init is None:
            return []
        init, self.init = self.init, None
        try:
            return self.node(init, st)
        finally:
            self.init = init

    def _init_values(self, cells: list[str]) -> tuple[str, list[str]] | None:
        """With an init fused before the tile (``self.init``): its value at the target cell
        whose subscripts are ``cells`` (C) and the declarations of its iterators there, when
        its subscripts are its iterators plus constants and it reads no copied array;
        else None (its loops then run before the tile)."""
        if self.init is None:
            return None
        names = {name for name, _ in ast_users(self.init, self)}
        if len(names) != 1:
            return None
        init = self.scop.statement(names.pop())
        if not isinstance(init.target, Load) or len(init.target.index) != len(cells):
            return None
        values: dict[str, str] = {}
        for sub, cell in zip(init.target.index, cells, strict=True):
            lin = sub.linear()
            if lin is None or len(lin[0]) != 1 or set(lin[0].values()) != {1}:
                return None
            (it,) = lin[0]
            values[it] = f"({cell}) - {lin[1]}"
        reads = {e.array for e in init.value.walk() if isinstance(e, Load)}
        if set(values) != set(init.iters) or len(values) != len(cells) or \
                reads & (set(self.packed) | set(self.promoted)) or \
                any(isinstance(e, Scalar) for e in init.value.walk()):
            return None  # (a local scalar is not in scope at the tile)
        dtype = self.scop.array(init.target.array).dtype
        return (self.cast_to(init.rhs(), dtype),
                [f"const int64_t {it} = {values[it]}" for it in init.iters])

    def _tile_copy(self, assignment: str, rows: int | str, width: int | str,
                   first: int | str = 0, decls: list[str] | tuple[str, ...] = ()
                   ) -> cgen.Generable:
        inner = cgen.For(f"int64_t pd_v = {first}", f"pd_v < {width}", "pd_v++",
                         cgen.Block([*(cgen.Statement(d) for d in decls),
                                     cgen.Statement(assignment)]))
        return cgen.For("int64_t pd_r = 0", f"pd_r < {rows}", "pd_r++",
                        cgen.Block([cgen.Pragma("omp simd"), inner]))


def dtype_bytes(dtype: str) -> int:
    """Bytes of an accumulator's element, as register tiles count them."""
    return 8 if dtype in ("f64", "i64") else 4


def _target_dims(target: Load, row_var: str, vec_var: str) -> list[tuple[int, str]]:
    """``(subscript position, iterator)`` of the target's row and vector subscripts."""
    return [(d, v) for d, sub in enumerate(target.index) for v in (row_var, vec_var)
            if v in sub.vars()]


def _guarded_along(value: Expr, var: str) -> bool:
    """Whether ``value`` holds a load whose subscripts do not use ``var`` under the branches
    of an `a if c else b` whose condition does."""
    for e in value.walk():
        if not isinstance(e, Select):
            continue
        cond_vars = set().union(*(x.aff.vars() if isinstance(x, Index) else
                                  set().union(*(i.vars() for i in x.index))
                                  for x in e.cond.walk() if isinstance(x, Index | Load)))
        if var in cond_vars and any(
                isinstance(x, Load) and var not in set().union(*(i.vars() for i in x.index))
                for branch in (e.a, e.b) for x in branch.walk()):
            return True
    return False


def _mentions_inner(expr: str, n: isl.AstNode, row_it: str, vec_it: str) -> bool:
    """Whether an iterator expression uses loops inside the promoted loop other than the
    tile's rows and vector (then it has no single value at the copy-in point)."""
    inner = set(re.findall(rf"\b{ITERATOR}\d+\b", expr)) - {row_it, vec_it}
    outer_limit = int(n.for_get_iterator().get_id().get_name()[len(ITERATOR):])
    return any(int(c[len(ITERATOR):]) >= outer_limit for c in inner)


def mark_role(n: isl.AstNode) -> str | None:
    """The role of a loop mark (``parse_mark``), "init" for an init's mark, None for other
    nodes."""
    if n.get_type() != isl.ast_node_type.mark:
        return None
    name = n.mark_get_id().get_name()
    return INIT if name == INIT else parse_mark(name)[1]


def loops_below(n: isl.AstNode) -> int:
    """The for nodes that ``n`` reaches through blocks and ifs; 2 when it reaches anything
    else (a statement outside a loop)."""
    t = n.get_type()
    if t == isl.ast_node_type.for_:
        return 1
    if t == isl.ast_node_type.block:
        children = n.block_get_children()
        return sum(loops_below(children.get_at(i)) for i in range(children.n_ast_node()))
    if t == isl.ast_node_type.if_:
        return loops_below(n.if_get_then_node()) + \
            (loops_below(n.if_get_else_node()) if n.if_has_else_node() else 0)
    return 2
