"""Loops as C: a loop of the loop tree with the OpenMP form ``lowering/openmp.py`` chooses for
it (``parallel for``, a team region, ``simd``), or the unrolling its role asks for, or its form
inside a team region or a pack's region. ``LoopEmitter`` is a part of ``emit.CEmitter``."""

from __future__ import annotations

import cgen
import islpy as isl

from ..errors import InternalError
from ..lowering.openmp import Around, Blocks, Lanes, Simd, Team, Threads, loop_form
from ..lowering.teams import team_body
from ..lowering.tree import Loop, Node, expr_ids, has_loop, instances, role_loops
from ..schedule.reductions import Selection
from ..schedule.tree import RROW, RVEC
from ..scop.exprs import C_TYPE
from .astnodes import LoopState, strip_parens
from .tiles import dtype_bytes

_T = isl.ast_expr_op_type


class LoopEmitter:
    """The loop methods of ``emit.CEmitter``."""

    def loop(self, n: Loop, st: LoopState, parallel: bool,
             role: str = "", bound: str | None = None) -> list[cgen.Generable]:
        """``bound``: the loop runs to it instead (the inner loop of a collapsed pair)."""
        it = n.iterator
        init = self.ast_expr(n.init)
        if n.degenerate:
            body = self.node(n.body, st)
            return [cgen.Block([cgen.Statement(f"const int64_t {it} = {init}"), *body])]
        inc = self.ast_expr(n.inc)
        # OpenMP's canonical loop form
        cond, trips = (strip_parens(self.ast_expr(n.cond)),
                       _trip_count(n, init, inc, self)) if bound is None else \
            (f"{it} < {bound}", f"({bound})")
        if st.team is not None:  # a loop of a team region's outer loop body
            shared = parallel and n.carry.parallel and has_loop(n.body)
            return (self.team_member if shared else self.team_passage)(n, st, it, init, cond,
                                                                      inc)
        if st.region:
            return self.region_loop(n, parallel, it, init, cond, inc, trips)
        form = None if role == RROW or role.startswith("unroll") else loop_form(
            n, parallel, role, Around(st.in_parallel, trips is not None, bool(self.promoted),
                                      self.blocks), self.scop, self.locals)
        if isinstance(form, Team):
            return self.team_loop(n, it, init, inc, trips, form.minimum)
        if isinstance(form, Blocks):
            return self.blocks_loop(n, form, it, init, inc, trips)
        if isinstance(form, Lanes):
            return self.lanes_loop(n, form, st, it, init, cond, inc, trips)
        self.held = self.held_cell(n, it) if role.startswith("unroll") else None
        try:
            body = self.node(n.body, LoopState(st.in_parallel or parallel))
        finally:
            held, self.held = self.held, None
        loop = cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))
        if role == RROW:  # the rows of a register tile: unrolled, so each row has registers
            return [cgen.Pragma("GCC unroll 16"), loop] if _rows_share_vectors(n) else [loop]
        if role.startswith("unroll"):
            unrolled = [cgen.Pragma(f"GCC unroll {int(role[len('unroll'):])}"), loop]
            return unrolled if held is None else self.held_loop(n, held, unrolled, it, init)
        if form is None:
            return [loop]
        return [cgen.Pragma(self.pragma(n, form, trips)), loop]

    def pragma(self, n: Loop, form: Simd | Threads, trips: str | None) -> str:
        """The text of a ``Simd`` or ``Threads`` form's pragma for the loop ``n``."""
        private = f" private({', '.join(form.private)})" if form.private else ""
        if isinstance(form, Simd):
            reductions = "".join(f" reduction({op}:{name})" for op, name in form.reductions)
            return f"{self.simd_pragma}{private}{reductions}"
        when = [self.work_test(n, form.minimum)]
        if form.per_thread:
            when.append(f"{trips} >= pd_threads()")
        head = self.cyclic_pragma if form.cyclic else self.parallel_pragma
        return f"{head}{private} if({' && '.join(when)})"

    def blocks_loop(self, n: Loop, form: Blocks, it: str, init: str, inc: str,
                    trips: str) -> list[cgen.Generable]:
        """The loop ``n`` as a parallel region (``Blocks``): thread t of T runs iterations
        [count t / T, count (t + 1) / T) into its own copies of the reduced locals, which
        start at the reduction's identity and, after the region, are combined in t's order
        into the locals. A selection's copies start at the locals' values and are combined
        as its lanes' are (``lanes_loop``). Each copy lies on a cache line of its own."""
        self.team_count += 1
        k = self.team_count
        count, size, first, last = (f"pd_{x}{k}" for x in ("rn", "rs", "rb", "re"))
        selections = form.lanes.selections if form.lanes else ()
        chosen = [v for sel in selections for v in (sel.value, sel.index)]
        dtype = {v: self.scop.array(v).dtype for v in (*form.private, *chosen,
                                                        *(v for _, v in form.reductions))}
        parts = {v: f"pd_rp{k}_{j}" for j, v in
                 enumerate([*(v for _, v in form.reductions), *chosen])}
        line = {v: 64 // dtype_bytes(dtype[v]) for v in parts}  # elements a cache line holds
        start, end = f"({init}) + {first} * ({inc})", f"({init}) + {last} * ({inc})"
        if form.lanes is not None:
            loop = self.lanes_loop(n, form.lanes, LoopState(True), it, start, f"{it} < {end}",
                                   inc, f"({last} - {first})")
        else:
            loop = [cgen.For(f"int64_t {it} = {start}", f"{it} < {end}", f"{it} += {inc}",
                             cgen.Block(self.node(n.body, LoopState(True))))]
        region = cgen.Block([
            *(cgen.Statement(f"{C_TYPE[dtype[v]]} {v}") for v in form.private),
            *(cgen.Statement(f"{C_TYPE[dtype[v]]} {v} = {_identity(op, C_TYPE[dtype[v]])}")
              for op, v in form.reductions),
            *(cgen.Statement(f"{C_TYPE[dtype[v]]} {v} = pd_ri{k}_{v}") for v in chosen),
            cgen.Statement(f"const int64_t {first} = {count} * pd_team_id() / pd_team_size()"),
            cgen.Statement(
                f"const int64_t {last} = {count} * (pd_team_id() + 1) / pd_team_size()"),
            *([cgen.Pragma(self.pragma(n, form.simd, trips))] if form.simd else []), *loop,
            *(cgen.Statement(f"{parts[v]}[pd_team_id() * {line[v]}] = {v}") for v in parts),
            cgen.If("pd_team_id() == 0",
                    cgen.Block([cgen.Statement(f"{size} = pd_team_size()")]))])
        combine: list[cgen.Generable] = [cgen.Statement(
            f"{v} = {v} + {parts[v]}[pd_t * {line[v]}]" if op == "+" else
            f"{v} = pd_{op}_{dtype[v]}({v}, {parts[v]}[pd_t * {line[v]}])")
            for op, v in form.reductions]
        combine += [_choose(sel, f"{parts[sel.value]}[pd_t * {line[sel.value]}]",
                            f"{parts[sel.index]}[pd_t * {line[sel.index]}]")
                    for sel in selections]
        return [cgen.Block([
            cgen.Statement(f"const int64_t {count} = {trips}"),
            cgen.Statement(f"int64_t {size} = 1"),
            *(cgen.Statement(f"const {C_TYPE[dtype[v]]} pd_ri{k}_{v} = {v}") for v in chosen),
            *(cgen.Statement(f"{C_TYPE[dtype[v]]} {parts[v]}[pd_threads() * {line[v]}]")
              for v in parts),
            cgen.Pragma(f"omp parallel if({self.work_test(n, form.minimum)} && "
                        f"{count} >= 2)"),
            region,
            cgen.For("int64_t pd_t = 0", f"pd_t < {size}", "pd_t += 1",
                     cgen.Block(combine))])]

    def lanes_loop(self, n: Loop, form: Lanes, st: LoopState, it: str, init: str, cond: str,
                   inc: str, trips: str) -> list[cgen.Generable]:
        """The loop ``n`` split into lanes (``Lanes``): groups of ``form.width`` iterations,
        an ``omp simd`` loop over a group's lanes, each lane reading and writing its own
        copies of the selections' scalars (declared in the lane's body, so they shadow the
        scalars), then the copies combined in lane order into the scalars, then the
        iterations past the last whole group, as the loop prints them."""
        self.team_count += 1
        k, w = self.team_count, form.width
        group, end = f"pd_lg{k}", f"pd_le{k}"
        ctype = {name: C_TYPE[self.scop.array(name).dtype]
                 for sel in form.selections for name in (sel.value, sel.index)}
        copy = {name: f"pd_l{k}_{name}" for name in ctype}
        state = LoopState(st.in_parallel)
        lane = cgen.For("int64_t pd_l = 0", f"pd_l < {w}", "pd_l++", cgen.Block([
            cgen.Statement(f"const int64_t {it} = {group} + pd_l * ({inc})"),
            *(cgen.Statement(f"{ctype[v]} {v} = {copy[v]}[pd_l]") for v in ctype),
            *self.node(n.body, state),
            *(cgen.Statement(f"{copy[v]}[pd_l] = {v}") for v in ctype)]))
        combine = [_choose(sel, f"{copy[sel.value]}[pd_l]", f"{copy[sel.index]}[pd_l]")
                   for sel in form.selections]
        rest = cgen.For(f"int64_t {it} = {end}", cond, f"{it} += {inc}",
                        cgen.Block(self.node(n.body, state)))
        return [cgen.Block([
            cgen.Statement(f"const int64_t {end} = ({init}) + ({trips}) / {w} * {w} * ({inc})"),
            *(cgen.Statement(f"{ctype[v]} {copy[v]}[{w}]") for v in ctype),
            cgen.For("int64_t pd_l = 0", f"pd_l < {w}", "pd_l++", cgen.Block([
                cgen.Statement(f"{copy[v]}[pd_l] = {v}") for v in ctype])),
            cgen.For(f"int64_t {group} = {init}", f"{group} < {end}",
                     f"{group} += {w} * ({inc})",
                     cgen.Block([cgen.Pragma(self.simd_pragma), lane])),
            cgen.For("int64_t pd_l = 0", f"pd_l < {w}", "pd_l++", cgen.Block(combine)),
            rest])]

    def region_loop(self, n: Loop, parallel: bool, it: str, init: str, cond: str,
                    inc: str, trips: str | None) -> list[cgen.Generable]:
        """A parallel loop (with loops inside) that shares its iterations among the threads
        of the region around it: a team loop without a fork, or an ``omp for``; then a
        barrier, as the end of a region of its own had."""
        if not (parallel and n.carry.parallel and has_loop(n.body)):
            raise InternalError(f"loop {it} of a pack's region shares nothing out")
        if self.locals.assigned(n.body):  # locals need private copies: not in a region
            raise InternalError(f"local scalars under loop {it} of a pack's region")
        if trips is not None and team_body(n.body):
            return [*self.team_loop(n, it, init, inc, trips, None), cgen.Pragma("omp barrier")]
        body = self.node(n.body, LoopState(True))
        return [cgen.Pragma("omp for schedule(static)"),
                cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]

    def team_loop(self, n: Loop, it: str, init: str, inc: str, trips: str,
                  minimum: int | None) -> list[cgen.Generable]:
        """One parallel region around a parallel loop whose trip count may be below the
        number of threads or not a multiple of it (one row tile of a skinny matmul; 21 row
        tiles on 2 threads): the threads share out whole iterations while every thread has
        one, in blocks of consecutive ones (cyclically was slower); every thread runs each
        of the rest (fewer than the threads), whose parallel loops share out theirs
        (cyclically, a barrier after each), so no thread waits a whole iteration at the
        end. Never nested parallel constructs: libgomp creates fresh threads for every
        nested team, even under a region made inactive by its ``if`` clause
        (bench/HISTORY.md, point 7). ``minimum``: the instances from which the region forks
        its threads; None inside a region opened around it (``PackedTiles.pack``)."""
        self.team_count += 1
        flag = f"pd_w{self.team_count}"
        count, whole, end, step = (f"pd_{x}{self.team_count}" for x in ("n", "s", "e", "t"))
        body = self.node(n.body, LoopState(True, team=flag))
        # iteration t < whole: this thread's own (its block ends at ``end``, then it jumps to
        # the rest); t >= whole: every thread's
        block = f"({whole} / pd_team_size())"
        loop = cgen.For(
            f"int64_t {step} = {end} - {block}", f"{step} < {count}",
            f"{step} = {step} + 1 == {end} ? {whole} : {step} + 1",
            cgen.Block([cgen.Statement(f"const int {flag} = {step} < {whole}"),
                        cgen.Statement(f"const int64_t {it} = {init} + {step} * {inc}"),
                        *body]))
        fork = [] if minimum is None else \
            [cgen.Pragma(f"omp parallel if({self.work_test(n, minimum)} && {trips} >= 1)")]
        return [*fork, cgen.Block([
            cgen.Statement(f"const int64_t {count} = {trips}"),
            cgen.Statement(f"const int64_t {whole} = {count} - pd_mod({count}, pd_team_size())"),
            cgen.Statement(f"const int64_t {end} = (pd_team_id() + 1) * {block}"),
            loop])]

    def team_passage(self, n: Loop, st: LoopState, it: str, init: str, cond: str,
                     inc: str) -> list[cgen.Generable]:
        """A sequential loop in a team region's outer loop body (``team_body``): every
        thread runs all of it; the parallel loops inside share out theirs."""
        body = self.node(n.body, LoopState(True, team=st.team))
        return [cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]

    def team_member(self, n: Loop, st: LoopState, it: str, init: str, cond: str,
                    inc: str) -> list[cgen.Generable]:
        """A parallel loop in a team region's outer loop body (``team_body``): its
        iterations shared out cyclically unless the outer loop shares out its own."""
        flag = st.team
        body = self.node(n.body, LoopState(True))
        loop = cgen.For(f"int64_t {it} = {init} + ({flag} ? 0 : pd_team_id()) * {inc}", cond,
                        f"{it} += ({flag} ? 1 : pd_team_size()) * {inc}", cgen.Block(body))
        # the next part of the outer iteration may read what this loop wrote
        return [loop, cgen.If(f"!{flag}", cgen.Block([cgen.Pragma("omp barrier")]))]

    def work_test(self, n: Node, minimum: int) -> str:
        """C: the statements under loop ``n`` are worth threads (``minimum`` instances)."""
        return f"{self.work_expr(i.name for i in instances(n))} >= {minimum}"


def _choose(sel: Selection, value: str, index: str) -> cgen.If:
    """A selection's scalars take a lane's or a thread's copies (C) where they hold the
    larger value (smaller for ``min``), or the same value at a smaller index."""
    better = ">" if sel.op == "max" else "<"
    return cgen.If(f"{value} {better} {sel.value} || ({value} == {sel.value} && "
                   f"{index} < {sel.index})",
                   cgen.Block([cgen.Statement(f"{sel.value} = {value}"),
                               cgen.Statement(f"{sel.index} = {index}")]))


def _identity(op: str, ctype: str) -> str:
    """The value a reduction's copy starts from: nothing added, or below (above) every
    value of ``ctype`` for a maximum (minimum)."""
    if op == "+":
        return "0"
    low = {"float": "-INFINITY", "double": "-INFINITY", "int32_t": "INT32_MIN",
           "int64_t": "INT64_MIN"}[ctype]
    return low if op == "max" else low.lstrip("-").replace("MIN", "MAX")


def _rows_share_vectors(n: Loop) -> bool:
    """The vector loops in the rows loop ``n`` run the same iterations in every row: unrolling
    the rows then gives each row its registers. Where a vector loop's bounds move with the row
    (a triangle's diagonal tiles) the copies share nothing, and the C compiler would vectorize
    each of the sixteen with its own remainder loop."""
    return not any(v is not None and n.iterator in expr_ids(v.init) | expr_ids(v.cond)
                   for v in role_loops(n.body, RVEC, through_ifs=True))


def _trip_count(n: Node, init: str, inc: str, em: LoopEmitter) -> str | None:
    """The iterations of ``for (c = init; c < ub or c <= ub; c += inc)`` as C (at most 0
    when there is none), else None."""
    cond = n.cond
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2 or \
            cond.get_op_type() not in (_T.lt, _T.le):
        return None
    ub = em.ast_expr(cond.get_op_arg(1))
    if cond.get_op_type() == _T.le:  # <= 0 when there is none (C's division truncates)
        return f"((({ub}) - ({init}) + ({inc})) / ({inc}))"
    return f"((({ub}) - ({init}) + ({inc}) - 1) / ({inc}))"

