"""Sums split among threads in C (rfactor): under an ``rfactor`` loop mark, one parallel
region in which every thread runs that loop, shares out the iterations of the ``split``
loop below it and adds into a private copy of the sums' targets; the copies are then added
into the targets. ``SplitSums`` is a part of ``emit.CEmitter``, which reads the marks.

The schedule (``schedule.point_bands.strip_mine_vector``) places the marks on the strips of a row
vector times a matrix, ``C[0, j] += A[0, k] * B[k, j]``: each thread then reads whole rows
of its share of ``B``, one stream, where sharing out the strips of ``j`` had each thread
read pieces of every row. The code chooses at run time: the split region where there are
threads and enough terms per cell for each, else the loops as they are (the strips the
threads' loop)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cgen
import islpy as isl

from ..errors import InternalError
from ..lowering.openmp import PARALLEL_MIN_WORK, prints_plain
from ..lowering.tree import Block, If, Loop, MarkNode, Node, children
from ..schedule.reductions import sum_targets
from ..schedule.tree import SPLIT
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE, Load
from .astnodes import LoopState, ast_users, strip_parens
from .repack import Copy
from .tiles import dtype_bytes

# Terms of each cell's sum that a thread adds, at least, for the split to run: the private
# copies cost a zeroing and an addition per cell and thread (bench/HISTORY.md, point 5d).
SPLIT_MIN_TERMS = 64


@dataclass
class Copies:
    """The threads' private copies of one sum's target: the box of cells the split loop
    writes (C: its smallest index and its number of indices per dimension) and the
    buffer's name (``buf``: all copies; ``buf_t``: this thread's; ``buf_n``: cells of one
    copy; ``buf_s``: elements from one copy to the next)."""

    array: str
    ctype: str
    buf: str
    offsets: list[str]
    extents: list[str]


class SplitSums:
    """The rfactor region (mixed into ``emit.CEmitter``)."""

    def split_sum(self, n: Node, st: LoopState, is_par: bool) -> list[cgen.Generable]:
        """The ``rfactor`` loop ``n``: the split region, chosen at run time, else the loop as
        it is. The region's private copies cover the box of cells the loop's statements
        write, each thread's a whole number of cache lines (no line shared between two
        threads' copies)."""
        plain = self.loop(n, st, parallel=is_par)
        if st.in_parallel or st.team is not None or st.region or \
                not self._splittable(n.body):
            return plain
        names = {u.name for u in ast_users(n, self)}
        targets = sum_targets(self.scop, names)
        if targets is None:
            raise InternalError(f"rfactor mark above statements that are not sums: {names}")
        self.split_count += 1
        saved = dict(self.packed)
        copies: list[Copies] = []
        try:
            for k, array in enumerate(sorted(targets)):
                offsets, extents = self._written_box(array, names)
                copy = Copies(array, C_TYPE[self.scop.array(array).dtype],
                              f"pd_rf{self.split_count}_{k}", offsets, extents)
                copies.append(copy)
                self.packed[array] = Copy(f"{copy.buf}_t", offsets, _strides(extents))
            region = self._split_region(n, copies)
        finally:
            self.packed = saved
        work = self.work_expr(names)
        cells = " + ".join(f"{c.buf}_n" for c in copies)
        wanted = (f"pd_threads() > 1 && {work} >= {PARALLEL_MIN_WORK} && "
                  f"{work} >= {SPLIT_MIN_TERMS} * pd_threads() * ({cells})")
        decls: list[cgen.Generable] = []
        for c in copies:
            line = 64 // dtype_bytes(self.scop.array(c.array).dtype)
            size = " * ".join(f"({e})" for e in c.extents) or "1"
            decls += [cgen.Statement(f"const int64_t {c.buf}_n = {size}"),
                      cgen.Statement(f"const int64_t {c.buf}_s = ({c.buf}_n + {line - 1}) / "
                                     f"{line} * {line}"),
                      cgen.Statement(f"void *{c.buf}_b = NULL"),
                      cgen.Statement(
                          f"{c.ctype} *{c.buf} = {wanted} ? ({c.ctype} *)pd_alloc_like(sizeof("
                          f"{c.ctype}) * (size_t)pd_threads() * (size_t){c.buf}_s, 0, "
                          f"{self._copy_place(c.array, names)}, &{c.buf}_b) : NULL")]
        ready = " && ".join(c.buf for c in copies)
        frees = [cgen.Statement(f"free({c.buf}_b)") for c in copies]
        return [cgen.Block([*decls, cgen.If(ready, cgen.Block(region), cgen.Block(plain)),
                            *frees])]

    def _copy_place(self, array: str, names: set[str]) -> str:
        """``pd_alloc_like``'s ``like`` for the copies of ``array``: half a page past an
        array the sums read along the target's last subscript (matmul's ``B``), so a copy's
        cells and that array's rows at the same column lie in other L1 sets and differ in
        their low 12 address bits. With ``M = 1024`` the eight rows of B a step reads at
        column j fill the eight ways of one L1 set; a copy there too was a ninth line.
        NULL (page-aligned) without such an array."""
        for name in sorted(names):
            stmt = self.scop.statement(name)
            if not isinstance(stmt.target, Load) or stmt.target.array != array or \
                    not stmt.target.index:
                continue
            along = stmt.target.index[-1].vars()
            for ref in stmt.value.walk():
                if isinstance(ref, Load) and ref.array != array and ref.index and \
                        along and ref.index[-1].vars() == along:
                    return f"(const char *){ref.array} + 2048"
        return "NULL"

    def _written_box(self, array: str, names: set[str]) -> tuple[list[str], list[str]]:
        """C expressions of the smallest and the number of indices per dimension of the
        cells of ``array`` that the named statements write, in this variant's region."""
        writes = self.scop.accesses("write")
        domain = isl.UnionSet.empty(writes.get_space().params())
        for name in names:
            domain = domain.union(isl.UnionSet.from_set(
                self.scop.statement(name).domain.intersect_params(self.region)))
        cells: list[isl.Set] = []
        writes.intersect_domain(domain).range().foreach_set(cells.append)
        box = self.box_exprs(next(c for c in cells if c.get_tuple_name() == array))
        return [low for low, _ in box], [extent for _, extent in box]

    def _split_region(self, n: Loop, copies: list[Copies]) -> list[cgen.Generable]:
        """The parallel region: each thread zeroes its copies, runs the loop ``n`` (its
        share of the split loop's iterations), then, after a barrier, the threads share out
        the cells, each adding every copy into the target."""
        own: list[cgen.Generable] = [cgen.Statement("const int64_t pd_nt = pd_team_size()")]
        for c in copies:
            mine = f"{c.buf}_t"
            own += [cgen.Statement(f"{c.ctype} *{self.restrict} {mine} = {c.buf} + "
                                   f"pd_team_id() * {c.buf}_s"),
                    cgen.Pragma("omp simd"),
                    cgen.For("int64_t pd_q = 0", f"pd_q < {c.buf}_n", "pd_q++",
                             cgen.Block([cgen.Statement(f"{mine}[pd_q] = 0")]))]
        it = n.iterator
        init = self.ast_expr(n.init)
        body = self._split_loop_body(n.body)
        loop: cgen.Generable = cgen.Block([cgen.Statement(f"const int64_t {it} = {init}"),
                                           *body]) if n.degenerate else \
            cgen.For(f"int64_t {it} = {init}", strip_parens(self.ast_expr(n.cond)),
                     f"{it} += {self.ast_expr(n.inc)}", cgen.Block(body))
        return [cgen.Pragma("omp parallel"), cgen.Block(
            [*own, loop, cgen.Pragma("omp barrier"), *(self._add_copies(c) for c in copies)])]

    def _add_copies(self, c: Copies) -> cgen.Generable:
        """``T[box] += the sum of the threads' copies``: the threads share out the box's
        outermost dimension of more than one index, the innermost runs as a vector loop
        (a dimension of one index stays at its offset)."""
        its = [f"pd_q{d}" for d in range(len(c.extents))]
        cell = " + ".join(f"{q} * {w}" for q, w in zip(its, _strides(c.extents), strict=True))
        index = [Aff.var(f"({o})") + Aff.var(q) for o, q in zip(c.offsets, its, strict=True)]
        target = f"{c.array}[{self.flat_index(c.array, index)}]"
        inner: cgen.Generable = cgen.Block([
            cgen.Statement(f"{c.ctype} pd_s = {target}"),
            cgen.For("int64_t pd_u = 0", "pd_u < pd_nt", "pd_u++", cgen.Block(
                [cgen.Statement(f"pd_s += {c.buf}[pd_u * {c.buf}_s + {cell}]")])),
            cgen.Statement(f"{target} = pd_s")])
        loops = [d for d, e in enumerate(c.extents) if e != "1"]
        for d in range(len(c.extents) - 1, -1, -1):
            if d not in loops:
                inner = cgen.Block([cgen.Statement(f"const int64_t {its[d]} = 0"), inner])
                continue
            inner = cgen.For(f"int64_t {its[d]} = 0", f"{its[d]} < {c.extents[d]}",
                             f"{its[d]}++", cgen.Block([inner]))
            if d == loops[0]:
                inner = cgen.Block([cgen.Pragma("omp for schedule(static)"), inner])
            elif d == loops[-1]:
                inner = cgen.Block([cgen.Pragma("omp simd"), inner])
        return inner

    def _splittable(self, n: Node) -> bool:
        """Whether the split region can hold ``n``, the ``rfactor`` loop's body: every thread
        runs it through blocks, ifs, plain marks and loops of one iteration down to the
        ``split`` mark (work elsewhere every thread would repeat); below it, a loop that
        shares out its iterations prints as a plain loop (``omp for`` goes on it) and no
        statement assigns a local scalar (it would need private copies); at least one loop
        is shared out (with K < 8 only the partial step is there)."""
        return self._split_shape(n, False) is True

    def _split_shape(self, n: Node, shared: bool) -> bool | None:
        """None where the region cannot hold ``n``, else whether a loop below it is shared."""
        if isinstance(n, Block | If):
            parts = [self._split_shape(c, shared) for c in children(n)]
            return None if None in parts else any(parts)
        if not shared:
            if isinstance(n, MarkNode) and n.role == SPLIT:
                return self._split_shape(n.node, True)
            if isinstance(n, MarkNode) and not getattr(n.loop, "role", ""):
                return self._split_shape(n.node, False)
            if isinstance(n, Loop) and n.degenerate:
                return self._split_shape(n.body, False)
            return None
        if self.locals.assigned(n):
            return None
        if isinstance(n, Loop) and not n.degenerate:
            return True if prints_plain(n, self.scop, self.locals) else None
        return False

    def _each_branch(self, n: Block | If,
                     part: Callable[[Node], list[cgen.Generable]]) -> list[cgen.Generable]:
        """A block's children or an if's branches, each printed by ``part``."""
        if isinstance(n, Block):
            return [g for c in n.children for g in part(c)]
        orelse = cgen.Block(part(n.orelse)) if n.orelse is not None else None
        return [cgen.If(self.ast_expr(n.cond), cgen.Block(part(n.then)), orelse)]

    def _split_loop_body(self, n: Node) -> list[cgen.Generable]:
        """The body of the ``rfactor`` loop, which every thread runs: through blocks, ifs,
        plain marks and loops of one iteration down to the ``split`` mark
        (``_splittable``)."""
        if isinstance(n, Block | If):
            return self._each_branch(n, self._split_loop_body)
        if isinstance(n, MarkNode):
            role = getattr(n.loop, "role", "")
            if role == SPLIT:
                return self._shared(n.node)
            return self._split_loop_body(n.node)
        if isinstance(n, Loop) and n.degenerate:
            it = n.iterator
            return [cgen.Block([
                cgen.Statement(f"const int64_t {it} = {self.ast_expr(n.init)}"),
                *self._split_loop_body(n.body)])]
        raise InternalError("work outside the split loop")

    def _shared(self, n: Node) -> list[cgen.Generable]:
        """Under the ``split`` mark: its loops share out their iterations (static blocks, no
        barrier: each thread adds into its own copies); what runs outside them (the last,
        partial step of an isolated band) runs in the last thread, whose block is the
        shortest."""
        if isinstance(n, Block | If):
            return self._each_branch(n, self._shared)
        inner = LoopState(in_parallel=True)
        if isinstance(n, Loop) and not n.degenerate:
            code = self.loop(n, inner, parallel=False)
            if len(code) != 1 or not isinstance(code[0], cgen.For):
                raise InternalError(f"the split loop {n.iterator} printed with a pragma")
            code = [cgen.Pragma("omp for schedule(static) nowait"), *code]
        else:
            code = [cgen.If("pd_team_id() == pd_team_size() - 1",
                            cgen.Block(self.marked(n, inner, False, "")))]
        return code


def _strides(extents: list[str]) -> list[str]:
    """Row-major strides (C) of a box with the given extents (C)."""
    strides = ["1"] * len(extents)
    for d in range(len(extents) - 2, -1, -1):
        strides[d] = f"{strides[d + 1]} * ({extents[d + 1]})"
    return strides
