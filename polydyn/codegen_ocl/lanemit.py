"""Printing lane kernels (mapping.py): a work-group per value of the one mapped member, or per
``columns`` consecutive values, whose loops outside all others are dealt out to the lanes.
Each lane reduces its iterations into its own copy of each local scalar, and into its own
accumulator ``pd_cell<k>`` for each cell the loop sums into (``lanes.cell_reductions``); the
copies are combined (``combine.py``) and lane 0 stores the cells.

With ``columns`` (a kernel reading along the mapped member with stride 1: ``x @ B``'s
``B[k, j]``), local id ``l`` is lane ``l / columns`` of value ``l % columns``: a warp reads 32
neighbouring values of one row. A work-item past the last value computes the last value's
work again (so every work-item reaches every barrier) and stores nothing (``pd_live``).
``LaneLoops`` is a part of ``emit.OpenCLEmitter``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cgen

from ..codegen_c.astnodes import LoopState, strip_parens
from ..lowering.tree import Instance, Loop, Node
from ..schedule.reductions import REDUCE_LOOP
from ..scop.exprs import C_TYPE, replace_subexpr
from ..scop.ir import Load, Scalar
from .combine import BARRIER, column_combine, lane_combine
from .lanes import CellReduction, cell_reductions
from .plan import GROUP, LOCAL, OFFSET, KernelSpec

LIVE = "pd_live"  # a lane kernel with columns: this work-item's value exists
COMBINE = {"+": "{{}} + {{}}", "max": "pd_max_{t}({{}}, {{}})", "min": "pd_min_{t}({{}}, {{}})"}


class LaneLoops:
    """The lane-kernel part of the OpenCL emitter (``_spec``: the kernel being printed)."""

    _spec: KernelSpec | None
    _in_lane_loop = False
    _lane_types: set[str]
    _cells: dict[str, tuple[str, CellReduction]]  # a lane loop's statement -> accumulator
    scop: Any

    def _assigns_local(self, statement: str) -> bool:
        target = self.scop.statement(statement).target
        return isinstance(target, Scalar) and self.scop.array(target.name).kind == "local"

    def _private_scalars(self) -> bool:
        """A lane kernel keeps every local scalar in the lanes' own copies, even one that
        another variant spills: none of its values leaves the kernel (``lane_body``)."""
        return self._spec is not None and self._spec.lanes > 0

    def _lanes_free(self) -> bool:
        """A lane kernel's loop outside all others: the lanes share it."""
        return self._private_scalars() and not self._in_lane_loop

    def _only_live(self, test: str = "") -> str:
        """``test``, and ``pd_live`` where a work-item may run a value past the last."""
        if not self._spec.columns:
            return test
        return f"{test} && {LIVE}" if test else LIVE

    def lane_statement(self, n: Node, st: LoopState, name: str,
                       plain: Callable[[], list[cgen.Generable]]) -> list[cgen.Generable] | None:
        """A statement of a lane kernel (None: print it as usual). Outside the loops, one
        that does not assign a local scalar runs in lane 0, once per value, between
        barriers: every lane has done the reads before it (the statements that assign local
        scalars run in every lane and may read what it overwrites), and the code after it
        sees what it wrote. In a loop, a cell reduction updates the lane's accumulator, and
        any other store happens only for a value that exists. ``plain``: the statement as
        the C emitter prints it."""
        if self._lanes_free() and not self._assigns_local(name):
            barrier = cgen.Statement("barrier(CLK_GLOBAL_MEM_FENCE)")
            return [barrier, cgen.If(self._only_live("pd_lane == 0"),
                                     cgen.Block(plain())), barrier]
        if not self._in_lane_loop:
            return None
        if name in self._cells:
            acc, cell = self._cells[name]
            stmt = self.scop.statement(name)
            value = replace_subexpr(stmt.rhs(), stmt.target, Scalar(stmt.target.dtype, acc))
            return [self.at_cell(n, f"{acc} = "
                                 f"{self.cast_to(value, self.scop.array(cell.array).dtype)}",
                                 every=True)]
        if self._spec.columns and not self._assigns_local(name):
            return [cgen.If(LIVE, cgen.Block(plain()))]
        return None

    def at_cell(self, call: Instance, line: str, every: bool = False) -> cgen.Generable:
        """``{ const int64_t i = ..; ...; line }`` with the iterators of the target cell of
        the statement of ``call`` declared (``every``: all its iterators)."""
        stmt = self.scop.statement(call.name)
        used = set().union(*(i.vars() for i in stmt.target.index)) \
            if isinstance(stmt.target, Load) else set()
        decls = [cgen.Statement(f"const int64_t {it} = {self.ast_expr(arg)}")
                 for it, arg in zip(stmt.iters, call.args, strict=True)
                 if every or it in used]
        return cgen.Block([*decls, cgen.Statement(line)])

    def lane_loop(self, n: Loop, st: LoopState) -> list[cgen.Generable]:
        """``for (c = init + step * pd_lane; cond; c += lanes * step)``: lane ``pd_lane`` runs
        every ``lanes``-th iteration (neighbouring lanes, neighbouring elements). Each lane
        reduces its own iterations into its copy of the scalar (a ``+`` starts from 0 except
        in lane 0: every lane holds the scalar's value from before the loop) or into its
        accumulator of the cell (from the cell's value the same way), the copies are
        combined, lane 0 stores the cells, and a barrier lets the next loop read what any
        lane wrote."""
        carry = n.carry
        reductions = [(op, name, self.scop.array(name).dtype) for op, name in carry.reductions]
        cells = [] if carry.parallel or carry.kind == REDUCE_LOOP else \
            cell_reductions(self.scop, n) or []
        names = {c.statement: (f"pd_cell{k}", c) for k, c in enumerate(cells)}
        it = n.iterator
        init = self.ast_expr(n.init)
        cond = strip_parens(self.ast_expr(n.cond))
        inc = self.ast_expr(n.inc)
        self._in_lane_loop, self._cells = True, names
        try:
            body = self.node(n.body, st)
        finally:
            self._in_lane_loop, self._cells = False, {}
        lanes = self._spec.lanes
        out: list[cgen.Generable] = [cgen.If("pd_lane != 0", cgen.Statement(f"{name} = 0"))
                                     for op, name, _ in reductions if op == "+"]
        for acc, c in names.values():
            dtype = self.scop.array(c.array).dtype
            reductions.append((c.op, acc, dtype))
            start = "(pd_lane == 0) ? {} : 0" if c.op == "+" else "{}"
            out += [cgen.Statement(f"{C_TYPE[dtype]} {acc}"),
                    self.at_cell(c.call, f"{acc} = " + start.format(self.cell(c)))]
        step = str(lanes * int(inc)) if inc.isdigit() else f"{lanes} * ({inc})"
        first = "pd_lane" if inc == "1" else f"({inc}) * pd_lane"
        start = first if init == "0" else f"{init} + {first}"
        out.append(cgen.For(f"int64_t {it} = {start}", cond, f"{it} += {step}",
                            cgen.Block(body)))
        for k, (op, name, dtype) in enumerate(reductions):
            if k:  # every lane has read the last result before the buffer is reused
                out.append(cgen.Statement(BARRIER))
            out += self.lane_combine(op, name, dtype)
        stores = [self.at_cell(c.call, f"{self.cell(c)} = {acc}") for acc, c in names.values()]
        if stores:
            out.append(cgen.If(self._only_live("pd_lane == 0"), cgen.Block(stores)))
        out.append(cgen.Statement("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)"))
        return [cgen.Block(out)] if names else out

    def cell(self, c: CellReduction) -> str:
        """The cell of ``c``'s statement, as printed among its iterators (``at_cell``)."""
        target = self.scop.statement(c.statement).target
        assert isinstance(target, Load)
        return self.expr(target)

    def lane_combine(self, op: str, name: str, dtype: str) -> list[cgen.Generable]:
        """The lanes' copies of ``name`` combined by ``op`` (``combine.py``), the result in
        every lane's copy (a barrier must follow before the buffer is written again)."""
        self._lane_types.add(dtype)
        combine = COMBINE[op].format(t=dtype)
        if self._spec.columns:
            return column_combine(name, dtype, combine, self._spec.lanes, self._spec.columns)
        return lane_combine(name, dtype, combine, self._spec.lanes)

    def lane_ids(self, spec: KernelSpec) -> list[cgen.Generable]:
        """``pd_g0`` (the value of the group, or of the work-item's column ``pd_col``), ``pd_l0``
        and ``pd_lane``; with columns, ``pd_live``."""
        if not spec.columns:
            return [cgen.Statement(f"const int64_t {GROUP}0 = {self.group_id(0)}"),
                    cgen.Statement(f"const int64_t {LOCAL}0 = 0"),
                    cgen.Statement(f"const int64_t pd_lane = {self.local_id(0)}")]
        c = spec.columns
        last = self.ast_expr(spec.last)
        return [cgen.Statement(f"const int64_t pd_lane = {self.local_id(0)} / {c}"),
                cgen.Statement(f"const int64_t pd_col = {self.local_id(0)} % {c}"),
                cgen.Statement(f"const int64_t pd_v = {c} * {self.group_id(0)} + pd_col"),
                cgen.Statement(f"const int64_t pd_n = {last} - {OFFSET}0"),
                cgen.Statement(f"const int {LIVE} = pd_v <= pd_n"),
                cgen.Statement(f"const int64_t {GROUP}0 = {LIVE} ? pd_v : pd_n"),
                cgen.Statement(f"const int64_t {LOCAL}0 = 0")]
