"""Tiles of transposing copies in C (``schedule/transposes.py``): under a ``transpose`` mark, a
full tile (both point loops from 0 to 15 over one copy) is one call of ``pd_tr16_f32``
(``prelude.TRANSPOSE16``), 16 rows of the source loaded, transposed in registers and stored
as 16 rows of the target; any other tile runs its loops. ``TransposeBlocks`` is a part of
``emit.CEmitter``, which reads the marks."""

from __future__ import annotations

import cgen

from ..lowering.tree import Instance, Loop, MarkNode, Node, constant_trip
from ..schedule.transposes import TRANSPOSE_BLOCK
from ..scop.exprs import Load


class TransposeBlocks:
    """The register-transposed tiles (mixed into ``emit.CEmitter``)."""

    def transpose_block(self, n: Loop) -> list[cgen.Generable] | None:
        """The call that copies the full tile whose outer point loop is ``n``; None where
        ``n`` is not such a tile's loop (a partial tile) or the copy does not run along
        each array's rows, one element apart, in one of the two loops."""
        inner, inst = _unmarked(n.body), None
        if isinstance(inner, Loop):
            inst = _unmarked(inner.body)
        if not isinstance(inst, Instance) or constant_trip(n) != TRANSPOSE_BLOCK or \
                constant_trip(inner) != TRANSPOSE_BLOCK:
            return None
        stmt = self.scop.statement(inst.name)
        steps = [inst.steps(loop.iterator) for loop in (n, inner)]
        if steps[0] is None or steps[1] is None or not isinstance(stmt.value, Load) or \
                not isinstance(stmt.target, Load):
            return None
        moves = [dict(zip(stmt.iters, s, strict=True)) for s in steps]
        src = [self._element_step(stmt.value, m) for m in moves]
        dst = [self._element_step(stmt.target, m) for m in moves]
        # pd_tr16_f32(src, ls, dst, ld): dst[c * ld + r] = src[r * ls + c]
        if src[1] == "1" and dst[0] == "1":
            ls, ld = src[0], dst[1]
        elif src[0] == "1" and dst[1] == "1":
            ls, ld = src[1], dst[0]
        else:
            return None
        self.helpers.add("pd_tr16_f32")
        return [cgen.Block([
            cgen.Statement(f"const int64_t {n.iterator} = 0"),
            cgen.Statement(f"const int64_t {inner.iterator} = 0"),
            *(cgen.Statement(f"const int64_t {it} = {self.ast_expr(a)}")
              for it, a in zip(stmt.iters, inst.args, strict=True)),
            cgen.Statement(f"pd_tr16_f32({self._address(stmt.value)}, {ls}, "
                           f"{self._address(stmt.target)}, {ld})")])]

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
