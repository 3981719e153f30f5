"""Stage 5a: isl AST -> C (OpenMP and simd pragmas), plus the dispatcher and the header.

One emitter class; the OpenCL emitter subclasses it and overrides a small table (qualifiers,
loop pragmas). Expression operators print through one table each: ``astgen.AST_OPS`` for
isl AST expressions, ``_BIN_C`` for statement bodies.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

import cgen
import islpy as isl

from ..astgen import ast_expr_c, condition_expr
from ..errors import InternalError
from ..parametric.variants import Variant
from ..schedule.reductions import parse_reduce_role
from ..schedule.tree import INIT, PROMOTE, RFACTOR, RROW, RVEC, packed_arrays, parse_mark
from ..scop.affine import Aff
from ..scop.exprs import (
    C_TYPE,
    Bin,
    Call,
    Cast,
    Const,
    Expr,
    Index,
    Load,
    Scalar,
    Select,
    Un,
    concrete,
    is_float,
    join_dtypes,
)
from ..scop.ir import Array, Scop, Statement
from .astnodes import (
    PARALLEL_MIN_WORK,
    SEPARATE_PARALLEL_MIN_WORK,
    TILED_PARALLEL_MIN_WORK,
    LoopState,
    UnsharedWorkError,
    ast_users,
    has_loop,
    loop_annotation,
    role_loops,
    strip_parens,
)
from .prelude import PRELUDE
from .split import SplitSums
from .tiles import HeldCell, Padded, RegisterTiles, Repack, loops_below, mark_role
from .toolchain import UNIT_BREAK

_T = isl.ast_expr_op_type
_MATH_F32 = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "erf": "erff",
             "abs": "fabsf", "sin": "sinf", "cos": "cosf", "floor": "floorf", "ceil": "ceilf",
             "pow": "powf"}
_MATH_F64 = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "erf": "erf",
             "abs": "fabs", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
             "pow": "pow"}


class CEmitter(RegisterTiles, SplitSums):
    """Prints one operator's variants, its dispatcher and its header as C."""

    restrict = "restrict"
    parallel_pragma = "omp parallel for schedule(static)"
    simd_pragma = "omp simd"

    def __init__(self, scop: Scop, zero_init: frozenset[str] = frozenset(),
                 planned_for: str = ""):
        self.scop = scop
        self.zero_init = zero_init
        self.planned_for = planned_for  # the CPU the schedule was planned for, in words
        self.stmt_locals = {s.name: _locals_of(scop, s) for s in scop.statements}
        # every statement that touches each local scalar (reads or writes it)
        self.local_users: dict[str, set[str]] = {}
        for s in scop.statements:
            touched = {e.name for e in s.value.walk() if isinstance(e, Scalar)}
            if isinstance(s.target, Scalar):
                touched.add(s.target.name)
            for name in touched:
                if scop.array(name).kind == "local":
                    self.local_users.setdefault(name, set()).add(s.name)
        self.region: isl.Set = scop.context
        # while emitting a register tile: array -> (row iterator, vector iterator, base names)
        self.promoted: dict[str, tuple[str, str, str, str]] = {}
        # arrays read from a pack buffer here: (buffer, box offsets as C, buffer strides)
        self.packed: dict[str, tuple[str, list[str], list[int]]] = {}
        self.pack_count = 0
        # the function's repacked copies, by array, dimension order and padding (see
        # RegisterTiles.repack)
        self.repacks: dict[tuple[str, tuple[int, ...], int], Repack] = {}
        self.tile_count = 0
        self.team_count = 0
        self.split_count = 0
        self.split_shared = False  # while emitting a split region: a loop was shared out
        # while emitting a partial register tile as a full one
        self.padded: Padded | None = None
        # while emitting the register tile that an init statement's loops (this AST node,
        # under an INIT mark) precede: the tile starts from the init's values
        self.init: isl.AstNode | None = None
        # while emitting an unrolled loop whose statement updates one cell: the cell and the
        # local that holds it (RegisterTiles.held_cell)
        self.held: HeldCell | None = None
        self.held_count = 0

    def work_expr(self, names: Iterable[str]) -> str:
        """C expression: the statement instances under a loop, the sum of the named
        statements' bounding-box sizes (a row loop of softmax or layernorm holds three or
        four passes over the row: each counts)."""
        terms = []
        for name in sorted(set(names)):
            domain = self.scop.statement(name).domain.intersect_params(self.region)
            if domain.is_empty():
                continue
            terms.append(" * ".join(f"({extent})" for _, extent in self.box_exprs(domain))
                         or "1")
        return " + ".join(terms) if terms else "0"

    def box_exprs(self, s: isl.Set) -> list[tuple[str, str]]:
        """Per dimension of ``s``'s bounding box, C expressions of its smallest index and of
        its number of indices, in this variant's region."""
        build = isl.AstBuild.from_context(self.region)
        out = []
        for d in range(s.dim(isl.dim_type.set)):
            low = s.dim_min(d).coalesce()
            extent = s.dim_max(d).sub(low).add_constant_val(isl.Val.one(s.get_ctx()))
            out.append((self.ast_expr(build.expr_from_pw_aff(low)),
                        self.ast_expr(build.expr_from_pw_aff(extent.coalesce()))))
        return out

    # --- isl AST expressions -------------------------------------------------------------
    def ast_expr(self, e: isl.AstExpr) -> str:
        return ast_expr_c(e)

    # --- statement bodies ----------------------------------------------------------------
    def flat_index(self, array: str, index: Iterable[Aff]) -> str:
        arr = self.scop.array(array)
        subs = [i.to_c() for i in index]
        if not subs:
            return "0"
        out = subs[0]
        for dim, sub in zip(arr.shape[1:], subs[1:]):
            out = f"({out}) * {dim.to_c()} + {sub}"
        return out

    def const(self, value: float | int, dtype: str) -> str:
        dtype = concrete(dtype)
        if is_float(dtype):
            v = float(value)
            if math.isnan(v):
                text = "NAN"
            elif math.isinf(v):
                text = "INFINITY" if v > 0 else "(-INFINITY)"
            else:
                text = repr(v)
                if "e" not in text and "." not in text:
                    text += ".0"
                if dtype == "f32":
                    text += "f"
            return text if dtype == "f32" or not math.isinf(v) else f"((double){text})"
        return f"((int64_t){int(value)})" if dtype == "i64" else f"((int32_t){int(value)})"

    def cast_to(self, e: Expr, dtype: str) -> str:
        """``e`` printed as a value of ``dtype`` (weak literals are printed in that type)."""
        if isinstance(e, Const) and e.dtype in ("float", "int", "bool"):
            return self.const(e.value, dtype)
        text = self.expr(e)
        if concrete(e.dtype) == concrete(dtype) or e.dtype == "bool":
            return text
        return f"(({C_TYPE[concrete(dtype)]}){text})"

    def load(self, e: Load) -> str:
        """An array element: from the register tile's accumulators, a packed copy of the
        array, or the array itself."""
        if self.held is not None and (e.array, e.index) == (self.held.array, self.held.index):
            return self.held.local
        if e.array in self.promoted:
            if self.padded is not None:  # cells of the tile's box, rows and vector
                return f"{self.promoted[e.array][0]}[pd_r][pd_v]"
            acc, row, vec, base_row, base_vec = self._promoted_ref(e)
            return f"{acc}[{row} - {base_row}][{vec} - {base_vec}]"
        if e.array in self.packed:
            buf, offsets, strides = self.packed[e.array]
            cell = " + ".join(f"(({i.to_c()}) - ({o})) * {w}"
                              for i, o, w in zip(e.index, offsets, strides, strict=True))
            return f"{buf}[{cell}]"
        return f"{e.array}[{self.flat_index(e.array, e.index)}]"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return self.const(e.value, e.dtype)
        if isinstance(e, Index):
            return f"({e.aff.to_c()})"
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Scalar):
            return e.name
        if isinstance(e, Bin):
            return self.binary(e)
        if isinstance(e, Un):
            return f"(-{self.expr(e.a)})" if e.op == "neg" else f"(!{self.expr(e.a)})"
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Select):
            return (f"({self.expr(e.cond)} ? {self.cast_to(e.a, e.dtype)} : "
                    f"{self.cast_to(e.b, e.dtype)})")
        if isinstance(e, Cast):
            return f"(({C_TYPE[e.dtype]}){self.expr(e.a)})"
        raise InternalError(f"unknown expression node {e!r}")

    def binary(self, e: Bin) -> str:
        if e.op in ("and", "or"):
            sep = " && " if e.op == "and" else " || "
            return f"({self.expr(e.a)}{sep}{self.expr(e.b)})"
        if e.op in ("<", "<=", ">", ">=", "==", "!="):
            t = concrete(join_dtypes(e.a.dtype, e.b.dtype))
            return f"({self.cast_to(e.a, t)} {e.op} {self.cast_to(e.b, t)})"
        t = concrete(e.dtype)
        a, b = self.cast_to(e.a, t), self.cast_to(e.b, t)
        if e.op in ("min", "max"):
            return f"pd_{e.op}_{t}({a}, {b})"
        if e.op == "pow":
            return f"{(_MATH_F32 if t == 'f32' else _MATH_F64)['pow']}({a}, {b})"
        if e.op == "//":
            return f"{'floorf' if t == 'f32' else 'floor'}({a} / {b})" if is_float(t) \
                else f"pd_floord_{t}({a}, {b})"
        if e.op == "%":
            return f"pd_fmod_{t}({a}, {b})" if is_float(t) else f"pd_mod_{t}({a}, {b})"
        return f"({a} {e.op} {b})"

    def call(self, e: Call) -> str:
        t = concrete(e.dtype)
        if e.fn == "abs" and not is_float(t):
            return f"(({self.expr(e.args[0])}) < 0 ? -({self.expr(e.args[0])}) : " \
                   f"({self.expr(e.args[0])}))"
        table = _MATH_F32 if t == "f32" else _MATH_F64
        return f"{table[e.fn]}({self.cast_to(e.args[0], t)})"

    def statement(self, stmt: Statement, args: list[str]) -> cgen.Generable:
        """``{ const int64_t i = c0; ...; target = value; }``"""
        lines: list[cgen.Generable] = [
            cgen.Statement(f"const int64_t {it} = {a}") for it, a in zip(stmt.iters, args)]
        target = self.expr(stmt.target)
        dtype = self.scop.array(stmt.target.name if isinstance(stmt.target, Scalar)
                                else stmt.target.array).dtype
        lines.append(cgen.Statement(f"{target} = {self.cast_to(stmt.rhs(), dtype)}"))
        return cgen.Block(lines)

    # --- AST nodes ----------------------------------------------------------------------------
    def node(self, n: isl.AstNode, st: LoopState) -> list[cgen.Generable]:
        t = n.get_type()
        if t == isl.ast_node_type.block:
            children = n.block_get_children()
            kids = [children.get_at(i) for i in range(children.n_ast_node())]
            out: list[cgen.Generable] = []
            i = 0
            while i < len(kids):
                if i + 1 < len(kids) and mark_role(kids[i]) == INIT and \
                        mark_role(kids[i + 1]) == PROMOTE and \
                        loops_below(kids[i + 1].mark_get_node()) == 1:
                    # an init fused before a register tile (one loop: the tile's cells are
                    # the init's): the tile starts from its values, or the code that runs
                    # instead runs the init first (marked, register_tile)
                    self.init = kids[i].mark_get_node()
                    try:
                        out.extend(self.node(kids[i + 1], st))
                    finally:
                        self.init = None
                    i += 2
                    continue
                out.extend(self.node(kids[i], st))
                i += 1
            return out
        if t == isl.ast_node_type.for_:
            return self.loop(n, st, parallel=False)
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.node(n.if_get_then_node(), st))
            orelse = cgen.Block(self.node(n.if_get_else_node(), st)) \
                if n.if_has_else_node() else None
            return [cgen.If(self.ast_expr(n.if_get_cond()), then, orelse)]
        if t == isl.ast_node_type.user:
            call = n.user_get_expr()
            name = call.get_op_arg(0).get_id().get_name()
            args = [self.ast_expr(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg())]
            if st.region:
                raise UnsharedWorkError(name)
            stmt = self.scop.statement(name)
            st.used_locals |= self.stmt_locals[name]
            return [self.statement(stmt, args)]
        if t == isl.ast_node_type.mark:
            child = n.mark_get_node()
            if packed_arrays(n.mark_get_id().get_name()) is not None:
                return self.pack(n, st)
            is_par, role = parse_mark(n.mark_get_id().get_name())
            return self.marked(child, st, is_par, role,
                               loop_annotation(n) if role == PROMOTE else "")
        raise InternalError(f"unexpected isl AST node type {t}")

    def marked(self, n: isl.AstNode, st: LoopState, is_par: bool, role: str, box: str = ""
               ) -> list[cgen.Generable]:
        """The code of a loop mark's subtree: the mark applies to the loops of its band, the
        for nodes reached through blocks and ifs (an isolated band is one loop for its full
        tiles and others for the partial ones, side by side). ``box``: a promote mark's
        annotation (astgen), for the register tile's partial form."""
        t = n.get_type()
        if st.region and role:
            raise UnsharedWorkError(role)
        if t == isl.ast_node_type.for_:
            if role == PROMOTE:
                promoted = self.register_tile(n, st, box)
                if promoted is not None:
                    return promoted
            if role == RROW and self.padded is not None:
                return self.padded_rows(st)
            if role == RFACTOR:
                return self.split_sum(n, st, is_par)
            return [*self.init_loops(st, role), *self.loop(n, st, parallel=is_par, role=role)]
        if t == isl.ast_node_type.block:
            children = n.block_get_children()
            return [g for i in range(children.n_ast_node())
                    for g in self.marked(children.get_at(i), st, is_par, role, box)]
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.marked(n.if_get_then_node(), st, is_par, role, box))
            orelse = cgen.Block(self.marked(n.if_get_else_node(), st, is_par, role, box)) \
                if n.if_has_else_node() else None
            return [cgen.If(self.ast_expr(n.if_get_cond()), then, orelse)]
        return [*self.init_loops(st, role), *self.node(n, st)]

    def loop(self, n: isl.AstNode, st: LoopState, parallel: bool,
             role: str = "") -> list[cgen.Generable]:
        it = n.for_get_iterator().get_id().get_name()
        init = self.ast_expr(n.for_get_init())
        if n.for_is_degenerate():
            body = self.node(n.for_get_body(), st)
            return [cgen.Block([cgen.Statement(f"const int64_t {it} = {init}"), *body])]
        cond = strip_parens(self.ast_expr(n.for_get_cond()))  # OpenMP's canonical loop form
        inc = self.ast_expr(n.for_get_inc())
        trips = _trip_count(n, init, inc, self)
        if st.team is not None:  # a parallel loop of a team region's outer loop body
            return self.team_member(n, st, it, init, cond, inc)
        if st.region:
            return self.region_loop(n, parallel, it, init, cond, inc, trips)
        inner = LoopState(st.in_parallel or parallel)
        self.held = self.held_cell(n, it) if role.startswith("unroll") else None
        try:
            body = self.node(n.for_get_body(), inner)
        finally:
            held, self.held = self.held, None
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))
        if role == RROW:  # the rows of a register tile: unrolled, so each row has registers
            return [cgen.Pragma("GCC unroll 16"), loop]
        if role.startswith("unroll"):
            unrolled = [cgen.Pragma(f"GCC unroll {int(role[len('unroll'):])}"), loop]
            return unrolled if held is None else self.held_loop(n, held, unrolled, it, init,
                                                                  cond)
        # Locals the loop writes are private to it when every use of them (every AST
        # instance of the statements touching them) is inside it. One also used outside
        # keeps a single value across the iterations: then the loop gets no pragma, unless
        # that local is a reduction of the loop (reduction clause).
        kind = loop_annotation(n)
        if kind == "sequential" and role != "vector":  # a carried dependence the band's
            return [loop]  # coincidence misses: a local scalar's value crosses iterations
        reductions = {name for _, name in parse_reduce_role(kind)} \
            if kind.startswith("reduce(") else set()
        under = Counter(name for name, _ in ast_users(n.for_get_body(), self))
        owned = {v for v in inner.used_locals
                 if all(under[x] == self.user_counts[x] for x in self.local_users[v])}
        if inner.used_locals - owned - reductions:
            return [loop]
        clause = f" private({', '.join(sorted(owned - reductions))})" \
            if owned - reductions else ""
        if role == "vector" or (role == RVEC and self.promoted):
            # a user's vectorize(): checked free of dependences; a register tile's vector
            # (coincident), with its accumulators and operands along it contiguous
            return [cgen.Pragma(self.simd_pragma + clause), loop]
        innermost = not has_loop(n.for_get_body())
        if not parallel and kind == "parallel" and innermost and self._unit_stride(n, it):
            return [cgen.Pragma(self.simd_pragma + clause), loop]
        if reductions and innermost and self._unit_stride(n, it):
            clauses = " ".join(f"reduction({op}:{name})" for op, name in parse_reduce_role(kind))
            return [cgen.Pragma(f"{self.simd_pragma}{clause} {clauses}"), loop]
        pragma = self.loop_pragma(n, it, parallel, st, owned, trips)
        if pragma is None:
            return [loop]
        if trips is not None and pragma.startswith(self.parallel_pragma) and \
                not inner.used_locals and self._team_body(n.for_get_body()):
            return self.team_loop(n, st, it, init, inc, trips)
        return [cgen.Pragma(pragma), loop]

    def _team_body(self, n: isl.AstNode, role: str | None = None) -> bool:
        """Whether every statement under ``n`` (a parallel loop's body) lies inside a
        parallel loop (with loops inside) reached through blocks, ifs and plain loop marks
        only: the loops a team region shares out when the outer loop has too few
        iterations. ``role``: the loop mark above, while inside one."""
        t = n.get_type()
        if t == isl.ast_node_type.block:
            ch = n.block_get_children()
            return all(self._team_body(ch.get_at(i), role) for i in range(ch.n_ast_node()))
        if t == isl.ast_node_type.if_:
            return self._team_body(n.if_get_then_node(), role) and (
                not n.if_has_else_node() or self._team_body(n.if_get_else_node(), role))
        if t == isl.ast_node_type.mark:
            is_par, mark_role = parse_mark(n.mark_get_id().get_name())
            return is_par and mark_role == "" and self._team_body(n.mark_get_node(), "")
        if t == isl.ast_node_type.for_ and role is not None:
            if n.for_is_degenerate():
                return False
            return loop_annotation(n) == "parallel" and has_loop(n.for_get_body())
        return False

    def region_loop(self, n: isl.AstNode, parallel: bool, it: str, init: str, cond: str,
                    inc: str, trips: str | None) -> list[cgen.Generable]:
        """A parallel loop (with loops inside) that shares its iterations among the threads
        of the region around it: a team loop without a fork, or an ``omp for``; then a
        barrier, as the end of a region of its own had."""
        if not (parallel and loop_annotation(n) == "parallel" and has_loop(n.for_get_body())):
            raise UnsharedWorkError(it)
        inner = LoopState()
        if trips is not None and self._team_body(n.for_get_body()):
            out = self.team_loop(n, inner, it, init, inc, trips, fork=False)
            out.append(cgen.Pragma("omp barrier"))
        else:
            inner.in_parallel = True
            body = self.node(n.for_get_body(), inner)
            out = [cgen.Pragma("omp for schedule(static)"),
                   cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]
        if inner.used_locals:  # locals need private copies: not handled in a region
            raise UnsharedWorkError(it)
        return out

    def team_loop(self, n: isl.AstNode, st: LoopState, it: str, init: str, inc: str,
                  trips: str, fork: bool = True) -> list[cgen.Generable]:
        """One parallel region around a parallel loop whose trip count may be below the
        number of threads or not a multiple of it (one row tile of a skinny matmul; 21 row
        tiles on 2 threads): the threads share out whole iterations while every thread has
        one, in blocks of consecutive ones (cyclically: up to 19% slower, 288 x 64 x 256
        matmul); every thread runs each of the rest (fewer than the threads), whose parallel
        loops share out theirs (cyclically, a barrier after each), so no thread waits a
        whole iteration at the end. Never nested parallel constructs: libgomp creates fresh
        threads for every nested team, even under a region made inactive by its ``if``
        clause (an 8 x 1024 x 1024 matmul ran 50x slower with two threads than with one).
        ``fork``: False inside a region opened around it (RegisterTiles.pack)."""
        self.team_count += 1
        flag = f"pd_w{self.team_count}"
        count, whole, end, step = (f"pd_{x}{self.team_count}" for x in ("n", "s", "e", "t"))
        region = f"omp parallel if({self._work_test(n)} && {trips} >= 1)"
        inner = LoopState(True, team=flag)
        body = self.node(n.for_get_body(), inner)
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

    def team_member(self, n: isl.AstNode, st: LoopState, it: str, init: str, cond: str,
                    inc: str) -> list[cgen.Generable]:
        """A parallel loop in a team region's outer loop body (``_team_body``): its
        iterations shared out cyclically unless the outer loop shares out its own."""
        flag = st.team
        inner = LoopState(True)
        body = self.node(n.for_get_body(), inner)
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init} + ({flag} ? 0 : pd_team_id()) * {inc}", cond,
                        f"{it} += ({flag} ? 1 : pd_team_size()) * {inc}", cgen.Block(body))
        # the next part of the outer iteration may read what this loop wrote
        return [loop, cgen.If(f"!{flag}", cgen.Block([cgen.Pragma("omp barrier")]))]

    def _work_test(self, n: isl.AstNode) -> str:
        """C: the statements under loop ``n`` are worth threads."""
        users = ast_users(n, self)
        minimum = PARALLEL_MIN_WORK
        if role_loops(n, PROMOTE, through_ifs=True):  # register tiles: cheaper instances
            minimum = SEPARATE_PARALLEL_MIN_WORK if self._shares_nothing(n, users) else \
                TILED_PARALLEL_MIN_WORK
        return f"{self.work_expr(name for name, _ in users)} >= {minimum}"

    def _shares_nothing(self, n: isl.AstNode, users: list[tuple[str, list[str]]]) -> bool:
        """Every access of the statements under loop ``n`` moves with its iterator (a batch
        loop: each iteration reads and writes arrays of its own)."""
        word = re.compile(rf"\b{n.for_get_iterator().get_id().get_name()}\b")
        for name, args in users:
            stmt = self.scop.statement(name)
            values = dict(zip(stmt.iters, args, strict=True))
            refs = [r for r in stmt.value.walk() if isinstance(r, Load)]
            for ref in [*refs, stmt.target]:
                if not isinstance(ref, Load) or not any(
                        word.search(values.get(v, "")) for sub in ref.index for v in sub.vars()):
                    return False
        return bool(users)

    def loop_pragma(self, n: isl.AstNode, it: str, parallel: bool, st: LoopState,
                    used_locals: set[str], trips: str | None = None) -> str | None:
        """Threads for the outermost parallel loop (with a run-time test of its work and,
        where the trip count is known, of having as many iterations as threads), SIMD for
        an innermost stride-1 one."""
        if not parallel:
            return None
        in_parallel = st.in_parallel
        private = f" private({', '.join(sorted(used_locals))})" if used_locals else ""
        when = [self._work_test(n)]
        if trips is not None and has_loop(n.for_get_body()):
            when.append(f"{trips} >= pd_threads()")
        threads = f"{self.parallel_pragma}{private} if({' && '.join(when)})"
        if has_loop(n.for_get_body()) and not in_parallel:
            return threads
        if not has_loop(n.for_get_body()):
            if self._unit_stride(n, it):
                return self.simd_pragma + private
            if not in_parallel:
                return threads
        return None

    def _unit_stride(self, n: isl.AstNode, it: str) -> bool:
        """Every access of the loop's statements moves by 0 or 1 element per iteration."""
        pattern = re.compile(rf"\b{re.escape(it)}\b")
        for name, args in ast_users(n.for_get_body(), self):
            stmt = self.scop.statement(name)
            moving = {v for v, a in zip(stmt.iters, args) if pattern.search(a)}
            refs = [stmt.target, *(x for x in stmt.value.walk() if isinstance(x, Load))]
            for ref in refs:
                if not isinstance(ref, Load):
                    continue
                for d, sub in enumerate(ref.index):
                    hit = sub.vars() & moving
                    if not hit:
                        continue
                    lin = sub.linear()
                    if d != len(ref.index) - 1 or lin is None or \
                            any(abs(lin[0].get(v, 0)) != 1 for v in hit) or len(hit) > 1:
                        return False
        return True

    # --- functions ----------------------------------------------------------------------------
    def params(self, with_restrict: bool) -> list[str]:
        out = [f"int64_t {s}" for s in self.scop.syms]
        for a in self.scop.arg_arrays:
            out.append(self.param(a, with_restrict))
        return out

    def param(self, a: Array, with_restrict: bool) -> str:
        ctype = C_TYPE[a.dtype]
        if a.kind == "value":
            return f"{ctype} {a.name}"
        const = "const " if a.kind == "in" else ""
        restrict = f"{self.restrict} " if with_restrict and self.restrict else ""
        return f"{const}{ctype} *{restrict}{a.name}"

    def call_args(self) -> str:
        return ", ".join([*self.scop.syms, *self.scop.args])

    def size_expr(self, a: Array) -> str:
        prod = " * ".join(f"(size_t)({d.to_c()})" for d in a.shape) or "1"
        return f"sizeof({C_TYPE[a.dtype]}) * {prod}"

    def variant_function(self, fname: str, variant: Variant, ast: isl.AstNode) -> str:
        self.region = variant.region
        self.user_counts = Counter(name for name, _ in ast_users(ast, self))
        st = LoopState()
        self.repacks = {}
        body = self.node(ast, st)
        decls: list[cgen.Generable] = []
        for a in self.scop.arrays:
            if a.kind == "local":
                decls.append(cgen.Statement(f"{C_TYPE[a.dtype]} {a.name}"))
        temps = [a for a in self.scop.arrays if a.kind == "temp"]
        for a in temps:  # each at its partner's offset in a page (page-aligned without one)
            ctype, zero = C_TYPE[a.dtype], int(a.name in self.zero_init)
            partner = alloc_partner(self.scop, a) or "NULL"
            decls += [cgen.Statement(f"void *pd_tb_{a.name} = NULL"), cgen.Statement(
                f"{ctype} *{self.restrict} {a.name} = ({ctype} *)pd_alloc_like("
                f"{self.size_expr(a)}, {zero}, {partner}, &pd_tb_{a.name})")]
        frees = [cgen.Statement(f"free(pd_tb_{a.name})") for a in temps] + \
            [r.release for r in self.repacks.values()]
        failed = [f"!{a.name}" for a in temps] + [r.fail for r in self.repacks.values()]
        for r in self.repacks.values():
            decls += r.alloc
        tail = [cgen.Statement("return 0")]
        if frees:
            decls.append(cgen.If(" || ".join(failed),
                                 cgen.Block([*frees, cgen.Statement("return -2")])))
            tail = [*frees, *tail]
        decls += [r.copy for r in self.repacks.values()]
        block = cgen.Block([*decls, *body, *tail])
        return f"/* variant {variant.name}: {variant.region} */\n{self.signature(fname)}\n{block}\n"

    def signature(self, fname: str) -> str:
        return f"PD_VARIANT int {fname}({', '.join(self.params(True))})"

    def dispatcher(self, variants: list[Variant]) -> str:
        name = self.scop.name
        syms = ", ".join(f"int64_t {s}" for s in self.scop.syms) or "void"
        lines = [f"int {name}_select({syms}) {{"]
        lines.append(f"  if (!{self.region_test(self.scop.context)}) return -1;")
        for k, v in enumerate(variants):
            lines.append(f"  if ({self.region_test(v.region.gist(self.scop.context))}) "
                         f"return {k};")
        lines.append("  return -1;")
        lines.append("}")
        params = ", ".join(self.params(False))
        lines.append(f"int {name}_run(int variant, {params}) {{")
        lines.extend(self.zero_fill())
        lines.append("  switch (variant) {")
        for k, _ in enumerate(variants):
            lines.append(f"    case {k}: return {name}_v{k}({self.call_args()});")
        lines.append("    default: return -1;")
        lines.append("  }")
        lines.append("}")
        sym_args = ", ".join(self.scop.syms)
        lines.append(f"int {name}({params}) {{")
        lines.append(f"  int variant = {name}_select({sym_args});")
        lines.append("  if (variant < 0) return -1;")
        lines.append(f"  return {name}_run(variant, {self.call_args()});")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def zero_fill(self) -> list[str]:
        return [f"  memset({a.name}, 0, {self.size_expr(a)});" for a in self.scop.arg_arrays
                if a.kind == "out" and a.name in self.zero_init]

    def region_test(self, region: isl.Set) -> str:
        if region.is_params() and region.plain_is_universe():
            return "1"
        return self.ast_expr(condition_expr(region))

    def header(self, variants: list[Variant]) -> str:
        name = self.scop.name
        guard = f"POLYDYN_{name.upper()}_H"
        syms = ", ".join(f"int64_t {s}" for s in self.scop.syms) or "void"
        params = ", ".join(self.params(False))
        doc = [f"/* {name}: generated by polydyn. Sizes: {', '.join(self.scop.syms) or '-'}.",
               f" * Context: {self.scop.context}",
               " * Arrays are dense row-major. Returns 0, or -1 when the sizes are outside",
               " * the context, or -2 when a temporary could not be allocated.",
               *([f" * Tiles planned for: {self.planned_for}."] if self.planned_for else []),
               " * Variants (first match runs):"]
        doc += [f" *   {k}: {v.name}  {v.region}" for k, v in enumerate(variants)]
        doc.append(" */")
        return "\n".join([
            f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", *doc,
            f"int {name}({params});",
            f"int {name}_select({syms});",
            f"int {name}_run(int variant, {params});",
            f"#endif /* {guard} */", ""])

    def module(self, variants: list[Variant], asts: list[isl.AstNode]) -> str:
        planned = f" (tiles planned for {self.planned_for})" if self.planned_for else ""
        parts = [f"/* generated by polydyn for operator {self.scop.name}{planned} */", PRELUDE]
        names = [f"{self.scop.name}_v{k}" for k in range(len(variants))]
        for fname, v, ast in zip(names, variants, asts, strict=True):
            parts += [UNIT_BREAK, self.variant_function(fname, v, ast)]
        parts += [UNIT_BREAK, *(f"{self.signature(f)};" for f in names),
                  self.dispatcher(variants)]
        return "\n".join(parts)


def alloc_partner(scop: Scop, temp: Array) -> str | None:
    """The argument array a temporary is placed against (``pd_alloc_like``): the first one
    of its element type that a statement touching the temporary also touches (jacobi-2d's
    ``A`` for ``B``), so corresponding cells share their offset within a page; None if
    there is none."""
    for stmt in scop.statements:
        touched = [e.array for e in (stmt.target, *stmt.value.walk()) if isinstance(e, Load)]
        if temp.name not in touched:
            continue
        for name in touched:
            other = scop.array(name)
            if other.kind in ("in", "out", "inout") and other.dtype == temp.dtype:
                return name
    return None


def _locals_of(scop: Scop, stmt: Statement) -> set[str]:
    """The local scalars ``stmt`` assigns: private to a parallel loop around it. A local it
    only reads was assigned before that loop and stays shared (a private copy would start
    uninitialized)."""
    if isinstance(stmt.target, Scalar) and scop.array(stmt.target.name).kind == "local":
        return {stmt.target.name}
    return set()


def _trip_count(n: isl.AstNode, init: str, inc: str, em: CEmitter) -> str | None:
    """The iterations of ``for (c = init; c < ub or c <= ub; c += inc)`` as C (at most 0
    when there is none), else None."""
    cond = n.for_get_cond()
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2 or \
            cond.get_op_type() not in (_T.lt, _T.le):
        return None
    ub = em.ast_expr(cond.get_op_arg(1))
    if cond.get_op_type() == _T.le:  # <= 0 when there is none (C's division truncates)
        return f"((({ub}) - ({init}) + ({inc})) / ({inc}))"
    return f"((({ub}) - ({init}) + ({inc}) - 1) / ({inc}))"

