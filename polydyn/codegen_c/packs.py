"""Packed tiles in C: under a pack mark, each operand's tile copied into an aligned local
buffer with padded rows (shared by the threads of a parallel region where the copy is large).
``PackedTiles`` is a part of ``emit.CEmitter``."""

from __future__ import annotations

import cgen

from ..astgen import PackBox
from ..lowering.openmp import PACKED_PARALLEL_MIN_WORK, PARALLEL_MIN_WORK
from ..lowering.teams import region_body
from ..lowering.tree import Node
from ..schedule.registers import MAX_REG_VECTOR_BYTES
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE, Bin, Expr, Index, Load, Scalar, concrete
from ..scop.forward import read_only
from ..scop.ir import Scop, Statement
from .astnodes import LoopState, ast_users
from .repack import Copy
from .tiles import dtype_bytes

# The largest packed tile (a stack buffer; half of the L2 the tiles are sized for).
PACK_MAX_BYTES = 512 * 1024


# A packed tile's copy: C element type, buffer name, buffer elements, the copy's loops and
# the box's sizes (C expressions)
PackCopy = tuple[str, str, int, cgen.Generable, list[str]]


def pack_scale(scop: Scop, stmts: list[Statement], array: str) -> Expr | None:
    """The factor by which every read of ``array`` in ``stmts`` is multiplied, where it
    reads no loop's iterator and nothing the operator writes (BLAS's alpha in a scaled
    sum's terms, ``A[i, k] * (alpha * B[k, j])``, scop/forward.py): a packed copy then holds
    the products, and the register tiles multiply nothing more per term. None where some
    read is not so multiplied, the factors differ, or the product's type is not the
    array's."""
    scales = [f for s in stmts for f in _factors(s.value, array)]
    if not scales or scales[0] is None or any(f != scales[0] for f in scales[1:]):
        return None
    scale = scales[0]
    fixed = read_only(scop) | {a.name for a in scop.arrays if a.kind == "value"}
    for e in scale.walk():
        if isinstance(e, Index) or (isinstance(e, Scalar) and e.name not in fixed) or \
                (isinstance(e, Load) and (e.array not in fixed or
                                          any(i.vars() - set(scop.syms) for i in e.index))):
            return None
    return scale


def _factors(e: Expr, array: str) -> list[Expr | None]:
    """Per read of ``array`` in ``e``: the other factor of the product it is a factor of,
    None where it is not."""
    if isinstance(e, Load) and e.array == array:
        return [None]
    if isinstance(e, Bin) and e.op == "*":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, Load) and y.array == array and concrete(e.dtype) == y.dtype:
                return [x, *_factors(x, array)]
    return [f for c in e.children() for f in _factors(c, array)]


class PackedTiles:
    """The packed-tile methods of ``emit.CEmitter``."""

    def pack(self, n: Node, st: LoopState) -> list[cgen.Generable]:
        """Under a pack mark whose footprint boxes astgen annotated: copy each box into a
        local buffer (of the box's largest size) whose rows are padded by 64 bytes, so that
        a power-of-two leading dimension does not map a tile's rows to a few cache sets,
        and read the array from the buffer below; a rows pack's (``PackMark.rows``) rows
        unpadded, one run of cells per reduction step. Without boxes, the plain code."""
        boxes: tuple[PackBox, ...] = n.box or ()
        if not boxes:  # no box of bounded size (untiled code)
            return self.node(n.node, st)
        saved = dict(self.packed)
        copies: list[PackCopy] = []
        stmts = [self.scop.statement(name) for name in {u.name for u in ast_users(n.node, self)}]
        for box in boxes:
            array, bounds = box.array, list(box.bounds)
            sizes = [self.ast_expr(e) for e in box.sizes]
            offsets = [self.ast_expr(e) for e in box.offsets]
            arr = self.scop.array(array)
            elem = dtype_bytes(arr.dtype)
            # rows: a whole number of register-tile vectors (a partial register tile reads
            # them all; the widest target's, which every narrower one divides), then 64
            # bytes more; a rows operand's (read a cell at a time) as long as the box's
            vector = MAX_REG_VECTOR_BYTES // elem
            row = -(-bounds[-1] // vector) * vector + 64 // elem \
                if len(bounds) > 1 and not n.mark.rows else bounds[-1]
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
            scale = pack_scale(self.scop, stmts, array)
            value = f"{array}[{src}]" if scale is None else \
                f"{self.cast_to(scale, arr.dtype)} * {array}[{src}]"
            copy: cgen.Generable = cgen.Block([
                cgen.Pragma("omp simd"),
                cgen.For(f"int64_t {q} = 0", f"{q} < ({sizes[-1]})", f"{q}++",
                         cgen.Block([cgen.Statement(f"{buf}[{dst}] = {value}")])),
                # the rest of the row is zeros: what a partial register tile reads there
                cgen.For(f"int64_t {q} = {sizes[-1]}", f"{q} < {row}", f"{q}++",
                         cgen.Block([cgen.Statement(f"{buf}[{dst}] = 0")]))])
            for d in range(len(sizes) - 2, -1, -1):
                copy = cgen.For(f"int64_t {its[d]} = 0", f"{its[d]} < ({sizes[d]})",
                                f"{its[d]}++", cgen.Block([copy]))
            copies.append((C_TYPE[arr.dtype], buf, total, copy, sizes))
            self.packed[array] = Copy(buf, offsets, strides, scale=scale)
        try:
            if not st.in_parallel and st.team is None and copies and \
                    region_body(n.node, self.locals.writers):
                return self._pack_region(n, copies)
            return [cgen.Block([*self._pack_copies(copies, st), *self.node(n.node, st)])]
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

    def _pack_region(self, n: Node, copies: list[PackCopy]) -> list[cgen.Generable]:
        """One parallel region around a pack and its body, whose loops share out their
        iterations without forks of their own (``emit.CEmitter.region_loop``). Every thread
        copies the tile into a buffer of its own: reading a tile that another core copied
        cost 4-6% of a 2-thread 1024^3 matmul (its lines move between the cores' caches at
        every tile), more than copying it twice."""
        child = n.node
        body = self.node(child, LoopState(region=True))
        work = self.work_expr(u.name for u in ast_users(child, self))
        own: list[cgen.Generable] = []  # each thread's buffers and copies
        for ctype, buf, total, copy, _ in copies:
            own += [*self._buffer(ctype, buf, total), copy]
        return [cgen.Pragma(f"omp parallel if({work} >= {PACKED_PARALLEL_MIN_WORK})"),
                cgen.Block([*own, *body])]
