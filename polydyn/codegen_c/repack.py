"""Repacked copies in C: a read-only array copied at a function's entry in the dimension order
a register tile reads it in, where the tile's work pays for the copy, or copied a panel at a
time by the thread whose tiles read it (``Repacks.panel_plan``). ``Repacks`` is a part of
``emit.CEmitter``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import cgen

from ..astgen import iterator_depth
from ..lowering.tree import Loop
from ..schedule.registers import MAX_REG_VECTOR_BYTES
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE, Expr, Load
from ..scop.forward import repackable
from ..scop.ir import Statement

# Register tiles of at least this many rows read their rows' operand from a repacked copy
# (``RegisterTiles.repack``): reading it in place takes one pointer per row, and gcc keeps
# at most about 12 of them in the 15 general registers (16 rows of conv: 8 pointers
# reloaded from the stack in every step of the micro-kernel); with 6 rows the copy's layout
# is slower than reading in place (bench/HISTORY.md, point 5).
REPACK_MIN_ROWS = 12
# ... and when the tile's statement does this many multiply-adds per element copied (the
# copy's cost, about 2 cycles an element, then stays under 3% of the work).
REPACK_MIN_REUSE = 1024


class Copy(NamedTuple):
    """Where reads of an array come from while a tile is printed (``CEmitter.packed``): a
    buffer, per dimension the offset (C) and the stride of its cells; ``only``: the one
    read (its subscripts, as C) the buffer holds, where other reads of the array (at other
    cells) read the array itself; ``scale``: the factor the buffer's cells are already
    multiplied by (``packs.pack_scale``), which the reads then leave out."""

    buf: str
    offsets: Sequence[str]
    strides: Sequence[str | int]
    only: tuple[str, ...] | None = None
    scale: Expr | None = None


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
    in_registers: bool = False  # whole tiles copied by pd_tr16_f32 (prelude.TRANSPOSE16)
    panel: Panel | None = None  # per-thread panels (Repacks.panel_plan), not a whole copy

    @property
    def data(self) -> str:
        """The pointer the tiles read: the copy, or the running thread's panel."""
        return f"{self.buf}_d" if self.panel else self.buf


@dataclass(frozen=True)
class Panel:
    """Per-thread panels of the array ``ref`` reads (``Repacks.panel_plan``)."""

    name: str
    ref: Load
    vec_dim: int  # the array's dimension along the tile's vector
    other_dim: int  # the one its reduction moves: the panel's rows
    width: int  # elements of a panel row (the widest register tile's vector)
    head: int  # elements before a thread's panel: what it holds


class Repacks:
    """The repacking methods of ``emit.CEmitter``."""

    def panel_plan(self, stmt: Statement, uses: dict[str, frozenset[str]], n: Loop,
                   row_var: str, vec_var: str) -> str | None:
        """For a register tile around the reduction loop ``n`` whose one operand moving along
        the vector does so in a subscript other than its last (nn.Linear's ``W[o, i]``, the
        vector along ``o``; a fused QKV projection's keys ``QKV[b, j, 1, h, d]``, along
        ``j``): read it from a panel, a copy of its cells at the tile's vector
        (``MAX_REG_VECTOR_BYTES`` wide) and every value of the one subscript the tile's
        reduction moves, at the values the others have in the tile, the vector's dimension
        innermost. The thread running the tile makes it where its panel holds other cells
        (``panel_fill``); each thread has a panel of its own. Where the loops around the tile
        keep the vector and move the rows (the untiled code's row tiles inside its vector
        tiles), every tile of a vector tile reads the panel the first one copied, so the array
        is read once, where a copy of all of it at the function's entry wrote it to memory and
        read it back (the BERT layer's weights at 16 to 64 tokens). Not where the tile covers
        part of that subscript's range (cache tiles of the reduction) or the loops around it
        move the rows outside the vector's. Other reads of the array (syrk's ``A[i, k]``
        beside ``A[j, k]``) read the array itself (``Copy.only``). Returns the panel's name,
        the array then read from it; else None."""
        moving = [ref for ref in stmt.value.walk() if isinstance(ref, Load) and
                  any(vec_var in sub.vars() for sub in ref.index)]
        written = {s.target.array for s in self.scop.statements if isinstance(s.target, Load)}
        limit = iterator_depth(n.iterator)
        if len(moving) != 1 or moving[0].array in written or not repackable(moving[0]) or \
                limit is None:
            return None
        ref = moving[0]

        def outside(v: str) -> list[int]:  # the depths of the loops around the tile v uses
            return [d for c in uses.get(v, ()) if (d := iterator_depth(c)) is not None and
                    d < limit]

        def inside(v: str) -> bool:  # v's value moves with loops of the tile
            return any((d := iterator_depth(c)) is not None and d >= limit
                       for c in uses.get(v, ()))

        its = {d: next(iter(sub.vars())) for d, sub in enumerate(ref.index) if sub.vars()}
        vec_dims = [d for d, v in its.items() if v == vec_var]
        # the subscript the tile's reduction moves (over its whole range: none of the loops
        # around the tile moves it), and those that keep their value in the tile
        reduced = [d for d, v in its.items() if v != vec_var and inside(v)]
        kept = [v for d, v in its.items() if v != vec_var and d not in reduced]
        rows, vecs = outside(row_var), outside(vec_var)
        target = set().union(*(sub.vars() for sub in stmt.target.index)) \
            if isinstance(stmt.target, Load) else set()
        if len(vec_dims) != 1 or len(reduced) != 1 or vec_dims[0] == len(ref.index) - 1 or \
                outside(its[reduced[0]]) or row_var in its.values() or len(kept) > 7 or \
                not set(kept) <= target or (rows and vecs and min(rows) < min(vecs)):
            return None  # (the tile's base values are certain for the target's iterators)
        key = (ref.array, tuple(sub.to_c() for sub in ref.index), 0, True)
        if key not in self.repacks:
            self.repacks[key] = self._panel(ref, vec_dims[0], reduced[0])
        repack = self.repacks[key]
        panel = repack.panel
        offsets = [sub.to_c() for sub in ref.index]
        strides = ["0"] * len(ref.index)  # the tile's values: this copy's cells (copy_of)
        offsets[panel.vec_dim], strides[panel.vec_dim] = f"{panel.name}_o", "1"
        offsets[panel.other_dim], strides[panel.other_dim] = "0", str(panel.width)
        self.packed[ref.array] = Copy(repack.data, offsets, strides,
                                      tuple(sub.to_c() for sub in ref.index))
        return panel.name

    def _panel(self, ref: Load, vec_dim: int, other_dim: int) -> Repack:
        """The per-thread panels of ``ref``'s array (``panel_plan``), allocated at the
        function's entry (one slice a thread: 64 bytes recording the cells the panel holds,
        the vector's start and the other iterators' values, then the panel), every slice
        marked as holding none."""
        arr = self.scop.array(ref.array)
        ctype = C_TYPE[arr.dtype]
        elem = 8 if arr.dtype in ("f64", "i64") else 4
        panel = Panel(f"pd_pl{len(self.repacks) + 1}", ref, vec_dim, other_dim,
                      MAX_REG_VECTOR_BYTES // elem, 64 // elem)
        buf = panel.name
        others = f"({arr.shape[other_dim].to_c()})"
        alloc = [cgen.Statement(f"const int64_t {buf}_s = {panel.head} + {others} * "
                                f"{panel.width}"),
                 cgen.Statement(f"const int64_t {buf}_t = pd_threads()"),
                 cgen.Statement(f"const int {buf}_lv = pd_level()"),
                 cgen.Statement(f"static _Atomic(void *) {buf}_keep = NULL"),
                 cgen.Statement(f"{ctype} *{self.restrict} {buf} = ({ctype} *)pd_take("
                                f"&{buf}_keep, sizeof({ctype}) * (size_t)({buf}_s * {buf}_t))")]
        marks = cgen.If(buf, cgen.Block([cgen.For(
            "int64_t pd_q = 0", f"pd_q < {buf}_t", "pd_q++", cgen.Block([cgen.Statement(
                f"*(int64_t *)({buf} + pd_q * {buf}_s) = INT64_MIN")]))]))
        fast = ctype == "float" and other_dim == len(ref.index) - 1
        return Repack(buf, [], alloc, f"!{buf}", marks,
                      cgen.Statement(f"pd_give(&{buf}_keep, {buf})"), fast, panel)

    def panel_fill(self, name: str, base: str, values: dict[str, str]) -> list[cgen.Generable]:
        """In a register tile that reads panel ``name`` (``panel_plan``) at the vector that
        starts at ``base`` (C), its iterators' values ``values`` (C): the thread's panel,
        filled with the cells there unless it holds them already (zeros where the vector
        runs past the array's end)."""
        repack = next(r for r in self.repacks.values() if r.buf == name)
        panel = repack.panel
        ref, width, array = panel.ref, panel.width, panel.ref.array
        shape = [f"({d.to_c()})" for d in self.scop.array(array).shape]
        vecs, others = shape[panel.vec_dim], shape[panel.other_dim]
        data, at = repack.data, f"{name}_o"

        def cell_at(vec: Aff, other: Aff) -> str:
            index = [vec if d == panel.vec_dim else other if d == panel.other_dim else
                     sub.subst({v: Aff.var(values[v]) for v in sub.vars()})
                     for d, sub in enumerate(ref.index)]
            return self.flat_index(array, index)

        cell = f"{data}[pd_q1 * {width} + pd_qi + pd_q0]"
        src = f"{array}[{cell_at(Aff.var('pd_qo') + Aff.var('pd_q0'), Aff.var('pd_q1'))}]"
        scalar: cgen.Generable = cgen.For(
            "int64_t pd_q1 = pd_qs", "pd_q1 < pd_qs + pd_ns", "pd_q1++", cgen.Block([cgen.For(
                "int64_t pd_q0 = 0", "pd_q0 < 16", "pd_q0++", cgen.Block([cgen.Statement(
                    f"{cell} = pd_qo + pd_q0 >= 0 && pd_qo + pd_q0 < {vecs} ? {src} : 0")]))]))
        tile: list[cgen.Generable] = [scalar]
        if repack.in_registers:  # the other subscript is the last: 16 x 16 tiles in registers
            start = cell_at(Aff.var("pd_qo"), Aff.var("pd_qs"))
            ld = " * ".join(shape[panel.vec_dim + 1:])
            tile = [cgen.If(f"pd_ns == 16 && pd_qo >= 0 && pd_qo + 16 <= {vecs}", cgen.Block([
                cgen.Statement(f"pd_tr16_f32(&{array}[{start}], {ld}, "
                               f"&{data}[pd_qs * {width} + pd_qi], {width})")]),
                cgen.Block([scalar]))]
        fill = cgen.For("int64_t pd_qs = 0", f"pd_qs < {others}", "pd_qs += 16", cgen.Block([
            cgen.Statement(f"const int64_t pd_ns = pd_min(16, {others} - pd_qs)"),
            cgen.For("int64_t pd_qi = 0", f"pd_qi < {width}", "pd_qi += 16", cgen.Block([
                cgen.Statement(f"const int64_t pd_qo = {at} + pd_qi"), *tile]))]))
        ctype = C_TYPE[self.scop.array(array).dtype]
        # what the panel holds: the vector's start, then the values of the iterators that
        # stay the same in the tile (a batch's, a head's)
        held = [at] + [values[v] for d, sub in enumerate(ref.index) if sub.vars() and
                       d not in (panel.vec_dim, panel.other_dim) for v in sub.vars()]
        mark = f"((int64_t *)({data} - {panel.head}))"
        return [cgen.Statement(f"{ctype} *{self.restrict} {data} = "
                               f"{name} + pd_slot({name}_lv) * {name}_s + {panel.head}"),
                cgen.Statement(f"const int64_t {at} = {base}"),
                cgen.If(" || ".join(f"{mark}[{k}] != {h}" for k, h in enumerate(held)),
                        cgen.Block([fill, *(cgen.Statement(f"{mark}[{k}] = {h}")
                                            for k, h in enumerate(held))]))]

    def copy_of(self, e: Load) -> Copy | None:
        """The copy ``e`` reads (``self.packed``), or None: a dimension of stride 0 is one
        the copy holds at one subscript only (its offset, as C), and a read with another
        subscript there, or another read than a panel's own, reads the array itself."""
        entry = self.packed.get(e.array)
        if entry is None or any(str(w) == "0" and e.index[d].to_c() != entry.offsets[d]
                                for d, w in enumerate(entry.strides)) or \
                (entry.only is not None and
                 tuple(sub.to_c() for sub in e.index) != entry.only):
            return None
        return entry

    def repack(self, stmts: list[Statement], uses: dict[str, frozenset[str]], row_var: str,
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
            if ref.array in written or not repackable(ref):
                return []
            # a constant subscript (the keys of a fused QKV, QKV[b, j, 1, h, d]): the copy
            # holds that slice only
            its = [next(iter(sub.vars()), None) for sub in ref.index]
            if its.count(row_var) != 1 or vec_var in its:
                return []

            def depth(it: str) -> int:  # the deepest loop the iterator's value uses here
                return max((d for c in uses.get(it, ()) if (d := iterator_depth(c)) is not None),
                           default=-1)

            row_dim = its.index(row_var)
            others = sorted((d for d, it in enumerate(its) if d != row_dim and it is not None),
                            key=lambda d: (depth(its[d]), d))
            orders.append([*others, row_dim])
        pad = -(-rows // 16) * 16  # a partial tile's rows past the last one read zeros
        for ref, order in zip(along_rows, orders, strict=True):
            fixed = {d: sub for d, sub in enumerate(ref.index) if not sub.vars()}
            key = (ref.array, tuple(order), pad, False,
                   tuple((d, sub.to_c()) for d, sub in fixed.items()))
            if key not in self.repacks:
                self.repacks[key] = self._repack_copy(ref.array, order, pad, stmts[0].name,
                                                      0 if always else REPACK_MIN_REUSE, fixed)
            offsets = [fixed[d].to_c() if d in fixed else "0" for d in range(len(ref.index))]
            # a transposed tile's copy serves its vector operands; a read of the same array
            # along the rows (syrk's A[i, k] beside A[j, k]) reads it in place, as a product's
            # rows do
            self.packed[ref.array] = Copy(self.repacks[key].buf, offsets,
                                          self.repacks[key].strides,
                                          tuple(sub.to_c() for sub in ref.index)
                                          if always else None)
        return sorted({self.packed[ref.array].buf for ref in along_rows})

    def _repack_copy(self, array: str, order: list[int], pad: int, stmt: str,
                     min_reuse: int, fixed: dict[int, Aff]) -> Repack:
        """A copy of ``array`` with its dimensions in ``order`` (the last one rounded up to
        16 elements, then ``pad`` more, zeros; the others at the subscripts ``fixed`` gives
        them, stride 0: ``copy_of``), made where ``stmt`` does ``min_reuse``
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
        strides = ["0"] * len(shape)
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
        its = [f"pd_q{d}" for d in range(len(shape))]
        dst = " + ".join(f"{its[d]} * {strides[d]}" for d in order)
        src = self.flat_index(array, [fixed.get(d, Aff.var(q)) for d, q in enumerate(its)])
        fast = None
        if ctype == "float" and len(order) >= 2 and order[-2] == len(shape) - 1:
            # the array's rows run along the tile's second dimension: whole 16 x 16 tiles
            # are transposed in registers (pd_tr16_f32)
            inner, second = order[-1], order[-2]
            at = {inner: "pd_qi", second: "pd_qs"}
            tile_its = [at.get(d, q) for d, q in enumerate(its)]
            src_at = self.flat_index(array, [fixed.get(d, Aff.var(q))
                                             for d, q in enumerate(tile_its)])
            dst_at = " + ".join(f"{tile_its[d]} * {strides[d]}" for d in order)
            ld_src = " * ".join(shape[inner + 1:]) or "1"
            fast = (f"&{array}[{src_at}]", ld_src, f"&{buf}[{dst_at}]", strides[second])
        copy = cgen.If(buf, cgen.Block(self._transpose(
            array, shape, order, its, f"{buf}[{dst}]", f"{array}[{src}]", row_len,
            ctype, f"{stride} >= 65536", fast)))
        return Repack(buf, strides, alloc, f"({wanted} && !{buf})", copy,
                      cgen.Statement(f"pd_give(&{buf}_keep, {buf})"), fast is not None)

    def _transpose(self, array: str, shape: list[str], order: list[int], its: list[str],
                   dst: str, src: str, row_len: str, ctype: str, threads: str,
                   fast: tuple[str, str, str, str] | None = None) -> list[cgen.Generable]:
        """The loops of a repack's copy (``dst = src`` over the copy's cells, zeros in its
        rows' padding up to ``row_len``): tiles of 16 x 16 cells along the copy's two
        innermost dimensions, each read into a local tile in the array's order of the two,
        then written a line at a time; the tiles of the second dimension shared out among
        the threads, the other dimensions in the array's own order inside. ``fast``: the
        source and destination of a tile and their rows' strides, where whole tiles are
        transposed by ``pd_tr16_f32`` instead."""
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
        tile: list[cgen.Generable] = [fill, store]
        if fast is not None:
            whole = f"pd_ns == 16 && pd_qi + 16 <= {shape[inner]}"
            tile = [cgen.If(whole, cgen.Block([cgen.Statement(
                f"pd_tr16_f32({fast[0]}, {fast[1]}, {fast[2]}, {fast[3]})")]),
                cgen.Block(tile))]
        body: cgen.Generable = cgen.Block([
            cgen.Statement(f"{ctype} pd_t[16][16]"),
            cgen.Statement(f"const int64_t pd_ns = pd_min(16, {shape[second]} - pd_qs)"),
            *tile])
        for d in reversed([d for d in sorted(order) if d not in (inner, second)]):
            body = cgen.For(f"int64_t {its[d]} = 0", f"{its[d]} < {shape[d]}", f"{its[d]}++",
                            cgen.Block([body]))
        return [cgen.Pragma(f"omp parallel for if({threads})"),
                cgen.For("int64_t pd_qs = 0", f"pd_qs < {shape[second]}", "pd_qs += 16",
                         cgen.Block([cgen.For("int64_t pd_qi = 0", f"pd_qi < {row_len}",
                                              "pd_qi += 16", cgen.Block([body]))]))]
