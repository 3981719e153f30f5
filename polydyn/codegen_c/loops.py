"""Loops as C: a loop of the loop tree with its OpenMP (``parallel for``, team) and ``simd``
pragmas, chosen from the loop's marks, its work and its unit strides. ``LoopEmitter`` is a part
of ``emit.CEmitter``."""

from __future__ import annotations

from collections import Counter

import cgen
import islpy as isl

from ..astgen import expr_ids
from ..errors import InternalError
from ..lowering.teams import forms_team, team_body
from ..lowering.tree import Loop, Node, has_loop, instances, role_loops
from ..lowering.work import uneven_work
from ..schedule.reductions import SEQUENTIAL_LOOP
from ..schedule.tree import PROMOTE, RROW, RVEC
from ..scop.exprs import (
    Load,
)
from .astnodes import (
    PARALLEL_MIN_WORK,
    SEPARATE_PARALLEL_MIN_WORK,
    TILED_PARALLEL_MIN_WORK,
    LoopState,
    UserCall,
    ast_users,
    strip_parens,
)

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
        inner = LoopState(st.in_parallel or parallel)
        self.held = self.held_cell(n, it) if role.startswith("unroll") else None
        try:
            body = self.node(n.body, inner)
        finally:
            held, self.held = self.held, None
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))
        if role == RROW:  # the rows of a register tile: unrolled, so each row has registers
            return [cgen.Pragma("GCC unroll 16"), loop] if _rows_share_vectors(n) else [loop]
        if role.startswith("unroll"):
            unrolled = [cgen.Pragma(f"GCC unroll {int(role[len('unroll'):])}"), loop]
            return unrolled if held is None else self.held_loop(n, held, unrolled, it, init)
        # Locals the loop writes are private to it when every use of them (every AST
        # instance of the statements touching them) is inside it. One also used outside
        # keeps a single value across the iterations: then the loop gets no pragma, unless
        # that local is a reduction of the loop (reduction clause).
        if n.carry.kind == SEQUENTIAL_LOOP and role != "vector":  # a carried dependence the
            return [loop]  # band's coincidence misses: a local scalar's value crosses iterations
        owned = self._private_locals(n, inner.used_locals)
        if owned is None:
            return [loop]
        simd = self._simd_pragma(n, it, parallel, role, owned)
        if simd is not None:
            return [cgen.Pragma(simd), loop]
        pragma = self.loop_pragma(n, it, parallel, st, owned, trips)
        if pragma is None:
            return [loop]
        if trips is not None and pragma.startswith(self.parallel_pragma) and \
                not inner.used_locals and \
                forms_team(n, parallel, st.in_parallel, self.local_writers):
            return self.team_loop(n, st, it, init, inc, trips)
        return [cgen.Pragma(pragma), loop]

    def _private_locals(self, n: Loop, used: set[str]) -> set[str] | None:
        """The local scalars of ``used`` (those the statements under ``n`` assign) that are
        private to ``n``: every use of them (every instance of the statements touching them)
        is inside it. None where another one, not a reduction of the loop, keeps a single
        value across the iterations: the loop then gets no pragma."""
        reductions = {name for _, name in n.carry.reductions}
        under = Counter(u.name for u in ast_users(n.body, self))
        owned = {v for v in used
                 if all(under[x] == self.user_counts[x] for x in self.local_users[v])}
        return None if used - owned - reductions else owned

    def _simd_pragma(self, n: Loop, it: str, parallel: bool, role: str,
                     owned: set[str]) -> str | None:
        """``omp simd`` (with its private and reduction clauses) for a user's
        ``vectorize()`` (checked free of dependences), a register tile's vector (coincident,
        its accumulators and operands along it contiguous), or an innermost stride-1 loop that
        carries nothing or only reductions into local scalars; else None."""
        reductions = {name for _, name in n.carry.reductions}
        clause = f" private({', '.join(sorted(owned - reductions))})" \
            if owned - reductions else ""
        if role == "vector" or (role == RVEC and self.promoted):
            return self.simd_pragma + clause
        if has_loop(n.body) or not self._unit_stride(n, it):
            return None
        if not parallel and n.carry.parallel:
            return self.simd_pragma + clause
        if reductions:
            clauses = " ".join(f"reduction({op}:{name})" for op, name in n.carry.reductions)
            return f"{self.simd_pragma}{clause} {clauses}"
        return None

    def prints_plain(self, n: Loop) -> bool:
        """Whether the loop ``n``, not parallel and with no role, prints with no pragma
        inside a parallel loop or region: it carries a dependence, or a local scalar keeps
        one value across it, or it is no ``omp simd`` loop."""
        if n.carry.kind == SEQUENTIAL_LOOP:
            return True
        owned = self._private_locals(n, self.assigned_locals(n.body))
        return owned is None or self._simd_pragma(n, n.iterator, False, "", owned) is None

    def assigned_locals(self, n: Node) -> set[str]:
        """The local scalars that the statements under ``n`` assign."""
        return set().union(*(self.stmt_locals[i.name] for i in instances(n)))

    def region_loop(self, n: Loop, parallel: bool, it: str, init: str, cond: str,
                    inc: str, trips: str | None) -> list[cgen.Generable]:
        """A parallel loop (with loops inside) that shares its iterations among the threads
        of the region around it: a team loop without a fork, or an ``omp for``; then a
        barrier, as the end of a region of its own had."""
        if not (parallel and n.carry.parallel and has_loop(n.body)):
            raise InternalError(f"loop {it} of a pack's region shares nothing out")
        inner = LoopState()
        if trips is not None and team_body(n.body):
            out = self.team_loop(n, inner, it, init, inc, trips, fork=False)
            out.append(cgen.Pragma("omp barrier"))
        else:
            inner.in_parallel = True
            body = self.node(n.body, inner)
            out = [cgen.Pragma("omp for schedule(static)"),
                   cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]
        if inner.used_locals:  # locals need private copies: not handled in a region
            raise InternalError(f"local scalars under loop {it} of a pack's region")
        return out

    def team_loop(self, n: Loop, st: LoopState, it: str, init: str, inc: str,
                  trips: str, fork: bool = True) -> list[cgen.Generable]:
        """One parallel region around a parallel loop whose trip count may be below the
        number of threads or not a multiple of it (one row tile of a skinny matmul; 21 row
        tiles on 2 threads): the threads share out whole iterations while every thread has
        one, in blocks of consecutive ones (cyclically was slower); every thread runs each
        of the rest (fewer than the threads), whose parallel loops share out theirs
        (cyclically, a barrier after each), so no thread waits a whole iteration at the
        end. Never nested parallel constructs: libgomp creates fresh threads for every
        nested team, even under a region made inactive by its ``if`` clause
        (bench/HISTORY.md, point 7). ``fork``: False inside a region opened around it
        (RegisterTiles.pack)."""
        self.team_count += 1
        flag = f"pd_w{self.team_count}"
        count, whole, end, step = (f"pd_{x}{self.team_count}" for x in ("n", "s", "e", "t"))
        region = f"omp parallel if({self._work_test(n)} && {trips} >= 1)"
        inner = LoopState(True, team=flag)
        body = self.node(n.body, inner)
        st.used_locals |= inner.used_locals
        # iteration t < whole: this thread's own (its block ends at ``end``, then it jumps to
        # the rest); t >= whole: every thread's
        block = f"({whole} / pd_team_size())"
        loop = cgen.For(
            f"int64_t {step} = {end} - {block}", f"{step} < {count}",
            f"{step} = {step} + 1 == {end} ? {whole} : {step} + 1",
            cgen.Block([cgen.Statement(f"const int {flag} = {step} < {whole}"),
                        cgen.Statement(f"const int64_t {it} = {init} + {step} * {inc}"),
                        *body]))
        return [*([cgen.Pragma(region)] if fork else []), cgen.Block([
            cgen.Statement(f"const int64_t {count} = {trips}"),
            cgen.Statement(f"const int64_t {whole} = {count} - pd_mod({count}, pd_team_size())"),
            cgen.Statement(f"const int64_t {end} = (pd_team_id() + 1) * {block}"),
            loop])]

    def team_passage(self, n: Loop, st: LoopState, it: str, init: str, cond: str,
                     inc: str) -> list[cgen.Generable]:
        """A sequential loop in a team region's outer loop body (``team_body``): every
        thread runs all of it; the parallel loops inside share out theirs."""
        inner = LoopState(True, team=st.team)
        body = self.node(n.body, inner)
        st.used_locals |= inner.used_locals
        return [cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]

    def team_member(self, n: Loop, st: LoopState, it: str, init: str, cond: str,
                    inc: str) -> list[cgen.Generable]:
        """A parallel loop in a team region's outer loop body (``team_body``): its
        iterations shared out cyclically unless the outer loop shares out its own."""
        flag = st.team
        inner = LoopState(True)
        body = self.node(n.body, inner)
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init} + ({flag} ? 0 : pd_team_id()) * {inc}", cond,
                        f"{it} += ({flag} ? 1 : pd_team_size()) * {inc}", cgen.Block(body))
        # the next part of the outer iteration may read what this loop wrote
        return [loop, cgen.If(f"!{flag}", cgen.Block([cgen.Pragma("omp barrier")]))]

    def _work_test(self, n: Node) -> str:
        """C: the statements under loop ``n`` are worth threads."""
        users = ast_users(n, self)
        minimum = PARALLEL_MIN_WORK
        if role_loops(n, PROMOTE, through_ifs=True):  # register tiles: cheaper instances
            minimum = SEPARATE_PARALLEL_MIN_WORK if self._shares_nothing(n, users) else \
                TILED_PARALLEL_MIN_WORK
        return f"{self.work_expr(u.name for u in users)} >= {minimum}"

    def _shares_nothing(self, n: Loop, users: list[UserCall]) -> bool:
        """Every access of the statements under loop ``n`` moves with its iterator (a batch
        loop: each iteration reads and writes arrays of its own)."""
        loop = n.iterator
        for user in users:
            stmt = self.scop.statement(user.name)
            moving = user.moving(stmt.iters, loop)
            refs = [r for r in stmt.value.walk() if isinstance(r, Load)]
            for ref in [*refs, stmt.target]:
                if not isinstance(ref, Load) or not any(
                        sub.vars() & moving for sub in ref.index):
                    return False
        return bool(users)

    def loop_pragma(self, n: Loop, it: str, parallel: bool, st: LoopState,
                    used_locals: set[str], trips: str | None = None) -> str | None:
        """Threads for the outermost parallel loop (with a run-time test of its work and,
        where the trip count is known, of having as many iterations as threads), SIMD for
        an innermost stride-1 one."""
        if not parallel:
            return None
        in_parallel = st.in_parallel
        private = f" private({', '.join(sorted(used_locals))})" if used_locals else ""
        when = [self._work_test(n)]
        if trips is not None and has_loop(n.body):
            when.append(f"{trips} >= pd_threads()")
        threads = f"{self.parallel_pragma}{private} if({' && '.join(when)})"
        if has_loop(n.body) and not in_parallel:
            if uneven_work(n):  # a triangle: its iterations go round the threads
                return f"{self.cyclic_pragma}{private} if({' && '.join(when)})"
            return threads
        if not has_loop(n.body):
            if self._unit_stride(n, it):
                return self.simd_pragma + private
            if not in_parallel:
                return threads
        return None

    def _unit_stride(self, n: Loop, it: str) -> bool:
        """Every access of the loop's statements moves by 0 or 1 element per step of its
        iterator: only the last subscript moves, by -1 or 1. How far each statement iterator
        moves comes from isl's iterator map of each instance (``Instance.steps``)."""
        for inst in instances(n.body):
            stmt = self.scop.statement(inst.name)
            steps = inst.steps(it)
            if steps is None:
                return False
            step_of = dict(zip(stmt.iters, steps, strict=True))
            moving = {v for v, step in step_of.items() if step}
            refs = [stmt.target, *(x for x in stmt.value.walk() if isinstance(x, Load))]
            for ref in refs:
                if not isinstance(ref, Load):
                    continue
                for d, sub in enumerate(ref.index):
                    if not sub.vars() & moving:
                        continue
                    lin = sub.linear()
                    step = None if lin is None else \
                        sum(c * step_of.get(v, 0) for v, c in lin[0].items())
                    if d != len(ref.index) - 1 or step is None or abs(step) != 1:
                        return False
        return True


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

