"""Tiles of transposed statements in C (``schedule/transposes.py``): under a ``transpose``
mark, a full tile (both point loops from 0 to 15 over one statement) transposes its read of
16 x 16 f32 cells in registers (``pd_tr16_f32``, ``prelude.TRANSPOSE16``: 16 rows loaded,
transposed, 16 rows stored). A copy stores them into its target; any other statement has
them stored into a local tile, then runs its loops over the tile, the inner one along its
target's rows (vectorized), the read taken from the local tile. Any other tile runs its
loops. ``TransposeBlocks`` is a part of ``emit.CEmitter``, which reads the marks."""

from __future__ import annotations

from dataclasses import replace

import cgen

from ..lowering.tree import Instance, Loop, MarkNode, Node, constant_trip
from ..schedule.transposes import TRANSPOSE_BLOCK, transposed_read
from ..scop.affine import Aff
from ..scop.exprs import Load
from ..scop.ir import Statement
from .repack import Copy

T = TRANSPOSE_BLOCK


class TransposeBlocks:
    """The register-transposed tiles (mixed into ``emit.CEmitter``)."""

    def transpose_block(self, n: Loop) -> list[cgen.Generable] | None:
        """The code of the full tile whose outer point loop is ``n``; None where ``n`` is not
        such a tile's loop (a partial tile), where either loop carries a dependence, or where
        the read and the target do not each run along their rows, one element apart, in one
        of the two loops."""
        inner, inst = _unmarked(n.body), None
        if isinstance(inner, Loop):
            inst = _unmarked(inner.body)
        if not isinstance(inst, Instance) or constant_trip(n) != T or \
                constant_trip(inner) != T or not (n.carry.parallel and inner.carry.parallel):
            return None  # (a carried dependence: the tile's points run in their order)
        stmt = self.scop.statement(inst.name)
        read = transposed_read(stmt)
        steps = [inst.steps(loop.iterator) for loop in (n, inner)]
        if read is None or steps[0] is None or steps[1] is None:
            return None
        moves = [dict(zip(stmt.iters, s, strict=True)) for s in steps]
        src = [self._element_step(read, m) for m in moves]
        dst = [self._element_step(stmt.target, m) for m in moves]
        # pd_tr16_f32(src, ls, dst, ld): dst[c * ld + r] = src[r * ls + c], c the loop the
        # read runs along, r the one the target runs along
        if src[1] == "1" and dst[0] == "1":
            r, c = 0, 1
        elif src[0] == "1" and dst[1] == "1":
            r, c = 1, 0
        else:
            return None
        rows, cols = (n, inner)[r], (n, inner)[c]
        ls, ld = src[r], dst[c]
        self.helpers.add("pd_tr16_f32")
        origin = [cgen.Statement(f"const int64_t {n.iterator} = 0"),
                  cgen.Statement(f"const int64_t {inner.iterator} = 0")]
        if stmt.op == "=" and stmt.value is read and \
                self.scop.array(stmt.target.array).dtype == "f32":
            return [cgen.Block([
                *origin,
                *(cgen.Statement(f"const int64_t {it} = {self.ast_expr(a)}")
                  for it, a in zip(stmt.iters, inst.args, strict=True)),
                cgen.Statement(f"pd_tr16_f32({self._address(read)}, {ls}, "
                               f"{self._address(stmt.target)}, {ld})")])]
        return self._staged(stmt, inst, read, (rows, moves[r]), (cols, moves[c]), ls, origin)

    def _staged(self, stmt: Statement, inst: Instance, read: Load,
                rows: tuple[Loop, dict[str, int]], cols: tuple[Loop, dict[str, int]], ls: str,
                origin: list[cgen.Generable]) -> list[cgen.Generable]:
        """The tile of ``read`` transposed into ``pd_tt`` (``pd_tt[c * 16 + r]``, c along
        the ``cols`` loop, r along the ``rows`` loop, each given with how far the statement's
        iterators move along it), then the statement over the tile, ``rows`` the inner loop,
        reading ``read`` from ``pd_tt``."""
        (rows, row_moves), (cols, col_moves) = rows, cols
        used = set().union(*(sub.vars() for sub in read.index))
        at = {it: f"pd_tt_{it}" for it in stmt.iters if it in used}
        corner = replace(read, index=tuple(
            sub.subst({v: Aff.var(name) for v, name in at.items()}) for sub in read.index))
        strides: list[str | int] = []
        offsets = []
        for sub, origin_sub in zip(read.index, corner.index, strict=True):
            var = next(iter(sub.vars()))
            if row_moves[var] or col_moves[var]:
                strides.append(1 if row_moves[var] else T)
                offsets.append(origin_sub.to_c())
            else:  # a subscript the tile does not move: the read's own
                strides.append(0)
                offsets.append(sub.to_c())
        saved = dict(self.packed)
        self.packed[read.array] = Copy("pd_tt", offsets, strides,
                                       only=tuple(sub.to_c() for sub in read.index))
        try:
            args = [self.ast_expr(a) for a in inst.args]
            body = self.statement(stmt, args)
        finally:
            self.packed = saved
        loop = cgen.For(f"int64_t {cols.iterator} = 0", f"{cols.iterator} < {T}",
                        f"{cols.iterator} += 1", cgen.Block([
                            cgen.Pragma(self.simd_pragma),
                            cgen.For(f"int64_t {rows.iterator} = 0", f"{rows.iterator} < {T}",
                                     f"{rows.iterator} += 1", cgen.Block([body]))]))
        return [cgen.Block([
            cgen.Statement(f"float pd_tt[{T * T}] __attribute__((aligned(64)))"),
            *(cgen.Statement(f"int64_t {name}") for name in at.values()),
            cgen.Block([*origin,
                        *(cgen.Statement(f"{at[it]} = {self.ast_expr(a)}")
                          for it, a in zip(stmt.iters, inst.args, strict=True) if it in at),
                        cgen.Statement(f"pd_tr16_f32({self._address(corner)}, {ls}, pd_tt, "
                                       f"{T})")]),
            loop])]

    def _address(self, ref: Load) -> str:
        return f"&{ref.array}[{self.flat_index(ref.array, ref.index)}]"

    def _element_step(self, ref: Load, moves: dict[str, int]) -> str | None:
        """Elements between the cells ``ref`` reads at one point and at the next, where each
        statement iterator moves by ``moves``: "1" for the next element of a row, a C
        expression of the sizes otherwise; None where a subscript is not affine."""
        coeffs = []
        for sub in ref.index:
            linear = sub.linear()
            if linear is None:
                return None
            coeffs.append(sum(c * moves.get(v, 0) for v, c in linear[0].items()))
        if all(c == 0 for c in coeffs[:-1]):
            return str(coeffs[-1])
        shape = self.scop.array(ref.array).shape
        terms = [" * ".join([*([str(c)] if c != 1 else []),
                             *(f"({d.to_c()})" for d in shape[k + 1:])]) or "1"
                 for k, c in enumerate(coeffs) if c]
        return f"({' + '.join(terms)})"

def _unmarked(n: Node) -> Node:
    """``n`` below the plain loop marks over it (a member's mark without a role: the
    constant member of a tile band has one over the statement)."""
    while isinstance(n, MarkNode) and n.role == "":
        n = n.node
    return n
