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
from dataclasses import dataclass, field

import cgen
import islpy as isl

from ..astgen import ITERATOR, PACK_FIELD, PACK_ITEM, PACK_SEP, ast_expr_c, condition_expr
from ..errors import InternalError
from ..parametric.variants import Variant
from ..schedule.auto import REG_VECTOR_BYTES
from ..schedule.reductions import parse_reduce_role
from ..schedule.tree import PROMOTE, RROW, RVEC, packed_arrays, parse_mark
from ..scop.ir import (
    C_TYPE,
    Aff,
    Array,
    Bin,
    Call,
    Cast,
    Const,
    Expr,
    Index,
    Load,
    Scalar,
    Scop,
    Select,
    Statement,
    Un,
    concrete,
    is_float,
    join_dtypes,
)

_T = isl.ast_expr_op_type
_MATH_F32 = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "erf": "erff",
             "abs": "fabsf", "sin": "sinf", "cos": "cosf", "floor": "floorf", "ceil": "ceilf",
             "pow": "powf"}
_MATH_F64 = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "erf": "erf",
             "abs": "fabs", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
             "pow": "pow"}

# Integer helpers both targets print (C and OpenCL C): floor division and modulo with
# Python's signs, min/max per type, and element-level // and % with NumPy's semantics.
INT_HELPERS = r"""static inline int64_t pd_floord(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pd_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t pd_min(int64_t a, int64_t b) { return b < a ? b : a; }
static inline int64_t pd_max(int64_t a, int64_t b) { return b > a ? b : a; }
#define PD_MINMAX(T, S) \
  static inline T pd_min_##S(T a, T b) { return b < a ? b : a; } \
  static inline T pd_max_##S(T a, T b) { return b > a ? b : a; }
PD_MINMAX(float, f32)
PD_MINMAX(int32_t, i32)
PD_MINMAX(int64_t, i64)
/* element-level integer // and % (NumPy semantics: division by zero gives 0, no trap) */
static inline int32_t pd_floord_i32(int32_t a, int32_t b) {
  return b ? (int32_t)pd_floord(a, b) : 0;
}
static inline int64_t pd_floord_i64(int64_t a, int64_t b) { return b ? pd_floord(a, b) : 0; }
static inline int32_t pd_mod_i32(int32_t a, int32_t b) { return b ? (int32_t)pd_mod(a, b) : 0; }
static inline int64_t pd_mod_i64(int64_t a, int64_t b) { return b ? pd_mod(a, b) : 0; }
"""


def fmod_helper(ctype: str, suffix: str, fmod: str) -> str:
    """``pd_fmod_<suffix>``: floating-point % with Python's sign (of the divisor)."""
    return (f"static inline {ctype} pd_fmod_{suffix}({ctype} a, {ctype} b) {{\n"
            f"  {ctype} r = {fmod}(a, b);\n"
            "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n")


PRELUDE = r"""#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
static inline int64_t pd_threads(void) { return omp_get_max_threads(); }
static inline int64_t pd_team_size(void) { return omp_get_num_threads(); }
static inline int64_t pd_team_id(void) { return omp_get_thread_num(); }
#else
static inline int64_t pd_threads(void) { return 1; }
static inline int64_t pd_team_size(void) { return 1; }
static inline int64_t pd_team_id(void) { return 0; }
#endif
#if defined(__GLIBC__) && defined(__x86_64__) && defined(PD_LIBMVEC)
/* glibc's vector math library (libmvec) has SIMD variants of these: declaring them lets the
   vectorizer call them in simd loops (<= 4 ulp, as glibc documents) */
#define PD_SIMD __attribute__((__simd__("notinbranch")))
float expf(float) PD_SIMD; double exp(double) PD_SIMD;
float logf(float) PD_SIMD; double log(double) PD_SIMD;
float sinf(float) PD_SIMD; double sin(double) PD_SIMD;
float cosf(float) PD_SIMD; double cos(double) PD_SIMD;
float tanhf(float) PD_SIMD; double tanh(double) PD_SIMD;
float erff(float) PD_SIMD; double erf(double) PD_SIMD;
#endif

""" + INT_HELPERS + "PD_MINMAX(double, f64)\n" + fmod_helper("float", "f32", "fmodf") + \
    fmod_helper("double", "f64", "fmod") + r"""
static inline void *pd_alloc(size_t bytes, int zero) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  if (zero) memset(p, 0, bytes);
  return p;
}
"""


# The largest packed tile (a stack buffer; half of the L2 the tiles are sized for).
PACK_MAX_BYTES = 512 * 1024

# Statement instances under a parallel loop below which threads cost more than they save
# (an OpenMP fork/join is a few microseconds on this class of machine).
PARALLEL_MIN_WORK = 32768


@dataclass
class _Padded:
    """A partial register tile run as a full one (``CEmitter._padded_plan``)."""

    stmt: Statement
    args: dict[str, str]  # C values of the statement's iterators (rows, vector: set later)
    lo: dict[str, str]  # the box: smallest value and extent of each iterator
    size: dict[str, str]
    rows: int
    width: int
    checks: list[str]  # run-time conditions (C): the box is not empty, reads stay in rows
    shift: bool = False  # the vector ends at the box's top (it starts below the box)


@dataclass
class _LoopState:
    in_parallel: bool = False
    used_locals: set[str] = field(default_factory=set)
    # inside a team region (see CEmitter.team_loop): the C flag that is true when the
    # outer loop shares out its iterations, false when the parallel loops here do
    team: str | None = None


class CEmitter:
    """Prints one operator's variants, its dispatcher and its header as C."""

    restrict = "restrict"
    parallel_pragma = "omp parallel for schedule(static)"
    simd_pragma = "omp simd"

    def __init__(self, scop: Scop, zero_init: frozenset[str] = frozenset()):
        self.scop = scop
        self.zero_init = zero_init
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
        self.tile_count = 0
        self.team_count = 0
        # while emitting a partial register tile as a full one
        self.padded: _Padded | None = None

    def work_expr(self, names: Iterable[str]) -> str:
        """C expression: the largest bounding-box size of the named statements' domains."""
        build = isl.AstBuild.from_context(self.region)
        terms = []
        for name in sorted(set(names)):
            domain = self.scop.statement(name).domain.intersect_params(self.region)
            if domain.is_empty():
                continue
            factors = []
            for d in range(domain.dim(isl.dim_type.set)):
                extent = domain.dim_max(d).sub(domain.dim_min(d)).add_constant_val(
                    isl.Val.one(domain.get_ctx()))
                factors.append(f"({self.ast_expr(build.expr_from_pw_aff(extent.coalesce()))})")
            term = " * ".join(factors) or "1"
            if term not in terms:
                terms.append(term)
        if not terms:
            return "0"
        out = terms[0]
        for t in terms[1:]:
            out = f"pd_max({out}, {t})"
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
    def node(self, n: isl.AstNode, st: _LoopState) -> list[cgen.Generable]:
        t = n.get_type()
        if t == isl.ast_node_type.block:
            children = n.block_get_children()
            out: list[cgen.Generable] = []
            for i in range(children.n_ast_node()):
                out.extend(self.node(children.get_at(i), st))
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
            stmt = self.scop.statement(name)
            st.used_locals |= self.stmt_locals[name]
            return [self.statement(stmt, args)]
        if t == isl.ast_node_type.mark:
            child = n.mark_get_node()
            if packed_arrays(n.mark_get_id().get_name()) is not None:
                return self.pack(n, st)
            is_par, role = parse_mark(n.mark_get_id().get_name())
            return self.marked(child, st, is_par, role,
                               _annotation(n) if role == PROMOTE else "")
        raise InternalError(f"unexpected isl AST node type {t}")

    def marked(self, n: isl.AstNode, st: _LoopState, is_par: bool, role: str, box: str = ""
               ) -> list[cgen.Generable]:
        """The code of a loop mark's subtree: the mark applies to the loops of its band, the
        for nodes reached through blocks and ifs (an isolated band is one loop for its full
        tiles and others for the partial ones, side by side). ``box``: a promote mark's
        annotation (astgen), for the register tile's partial form."""
        t = n.get_type()
        if t == isl.ast_node_type.for_:
            if role == PROMOTE:
                promoted = self.register_tile(n, st, box)
                if promoted is not None:
                    return promoted
            if role == RROW and self.padded is not None:
                return self.padded_rows(st)
            return self.loop(n, st, parallel=is_par, role=role)
        if t == isl.ast_node_type.block:
            children = n.block_get_children()
            return [g for i in range(children.n_ast_node())
                    for g in self.marked(children.get_at(i), st, is_par, role, box)]
        if t == isl.ast_node_type.if_:
            then = cgen.Block(self.marked(n.if_get_then_node(), st, is_par, role, box))
            orelse = cgen.Block(self.marked(n.if_get_else_node(), st, is_par, role, box)) \
                if n.if_has_else_node() else None
            return [cgen.If(self.ast_expr(n.if_get_cond()), then, orelse)]
        return self.node(n, st)

    def loop(self, n: isl.AstNode, st: _LoopState, parallel: bool,
             role: str = "") -> list[cgen.Generable]:
        it = n.for_get_iterator().get_id().get_name()
        init = self.ast_expr(n.for_get_init())
        if n.for_is_degenerate():
            body = self.node(n.for_get_body(), st)
            return [cgen.Block([cgen.Statement(f"const int64_t {it} = {init}"), *body])]
        cond = _strip_parens(self.ast_expr(n.for_get_cond()))  # OpenMP's canonical loop form
        inc = self.ast_expr(n.for_get_inc())
        trips = _trip_count(n, init, inc, self)
        if st.team is not None:  # a parallel loop of a team region's outer loop body
            return self.team_member(n, st, it, init, cond, inc)
        inner = _LoopState(st.in_parallel or parallel)
        body = self.node(n.for_get_body(), inner)
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))
        if role == RROW:  # the rows of a register tile: unrolled, so each row has registers
            return [cgen.Pragma("GCC unroll 16"), loop]
        if role.startswith("unroll"):
            return [cgen.Pragma(f"GCC unroll {int(role[len('unroll'):])}"), loop]
        # Locals the loop writes are private to it when every use of them (every AST
        # instance of the statements touching them) is inside it. One also used outside
        # keeps a single value across the iterations: then the loop gets no pragma, unless
        # that local is a reduction of the loop (reduction clause).
        kind = _annotation(n)
        if kind == "sequential" and role != "vector":  # a carried dependence the band's
            return [loop]  # coincidence misses: a local scalar's value crosses iterations
        reductions = {name for _, name in parse_reduce_role(kind)} \
            if kind.startswith("reduce(") else set()
        under = Counter(name for name, _ in _users(n.for_get_body(), self))
        owned = {v for v in inner.used_locals
                 if all(under[x] == self.user_counts[x] for x in self.local_users[v])}
        if inner.used_locals - owned - reductions:
            return [loop]
        clause = f" private({', '.join(sorted(owned - reductions))})" \
            if owned - reductions else ""
        if role == "vector":  # a user's vectorize(): checked free of dependences
            return [cgen.Pragma(self.simd_pragma + clause), loop]
        innermost = not _has_loop(n.for_get_body())
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
            return self.team_loop(n, st, it, init, cond, inc, trips)
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
        if t == isl.ast_node_type.mark and role is None:
            is_par, mark_role = parse_mark(n.mark_get_id().get_name())
            return is_par and mark_role == "" and self._team_body(n.mark_get_node(), "")
        if t == isl.ast_node_type.for_ and role is not None:
            if n.for_is_degenerate():
                return False
            return _annotation(n) == "parallel" and _has_loop(n.for_get_body())
        return False

    def team_loop(self, n: isl.AstNode, st: _LoopState, it: str, init: str, cond: str,
                  inc: str, trips: str) -> list[cgen.Generable]:
        """One parallel region around a parallel loop whose trip count may be below the
        number of threads (one row tile of a skinny matmul): the loop shares out its
        iterations when it has as many as there are threads; otherwise every thread runs
        it and the parallel loops in its body share out theirs (cyclically, a barrier
        after each). Never nested parallel constructs: libgomp creates fresh threads for
        every nested team, even under a region made inactive by its ``if`` clause (an
        8 x 1024 x 1024 matmul ran 50x slower with two threads than with one)."""
        self.team_count += 1
        flag = f"pd_w{self.team_count}"
        region = f"omp parallel if({self._work_test(n)} && {trips} >= 1)"
        inner = _LoopState(True, team=flag)
        body = self.node(n.for_get_body(), inner)
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init} + ({flag} ? pd_team_id() : 0) * {inc}", cond,
                        f"{it} += ({flag} ? pd_team_size() : 1) * {inc}", cgen.Block(body))
        return [cgen.Pragma(region), cgen.Block([
            cgen.Statement(f"const int {flag} = {trips} >= pd_team_size()"), loop])]

    def team_member(self, n: isl.AstNode, st: _LoopState, it: str, init: str, cond: str,
                    inc: str) -> list[cgen.Generable]:
        """A parallel loop in a team region's outer loop body (``_team_body``): its
        iterations shared out cyclically unless the outer loop shares out its own."""
        flag = st.team
        inner = _LoopState(True)
        body = self.node(n.for_get_body(), inner)
        st.used_locals |= inner.used_locals
        loop = cgen.For(f"int64_t {it} = {init} + ({flag} ? 0 : pd_team_id()) * {inc}", cond,
                        f"{it} += ({flag} ? 1 : pd_team_size()) * {inc}", cgen.Block(body))
        # the next part of the outer iteration may read what this loop wrote
        return [loop, cgen.If(f"!{flag}", cgen.Block([cgen.Pragma("omp barrier")]))]

    # --- register tiles --------------------------------------------------------------------
    def _promoted_ref(self, e: Load) -> tuple[str, str, str, str, str]:
        """The accumulator cell of a target access: its row and vector iterators minus
        their values at the tile's origin (``C[i, k + 1]`` -> ``acc[i - i0][k - k0]``)."""
        acc, row_dim, vec_dim, base_row, base_vec = self.promoted[e.array]
        (row,) = e.index[int(row_dim)].vars()
        (vec,) = e.index[int(vec_dim)].vars()
        return acc, f"({row})", f"({vec})", base_row, base_vec

    def register_tile(self, n: isl.AstNode, st: _LoopState, box: str = ""
                      ) -> list[cgen.Generable] | None:
        """Around the reduction loop ``n`` of a register tile: copy the target's rows x
        vector footprint into a local array, accumulate there, copy it back. A partial tile
        runs as a full one over its instance box (``box``, see ``_padded_plan``) where that
        is safe; otherwise (None) the plain loops run."""
        body_node = n.for_get_body()
        row = _find_role_loop(body_node, RROW, through_ifs=True)
        vec = _find_role_loop(body_node, RVEC, through_ifs=True)
        if row is None or vec is None:
            return None
        extents = [_constant_trip(x) for x in (row, vec)]
        full = None not in extents and _find_role_loop(body_node, RROW) is not None and \
            _find_role_loop(body_node, RVEC) is not None
        if not full and (not box or _count_role_loops(body_node, RROW) != 1):
            return None
        row_it, vec_it = (x.for_get_iterator().get_id().get_name() for x in (row, vec))
        users = _users(body_node, self)
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
        padded = None
        if not full:
            padded = self._padded_plan(stmts, users, box, row_var, vec_var, row_it, vec_it)
            if padded is None:
                return None
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
                return None
        env = {v: Aff.var(bases[v]) for v in bases}
        env[row_var] = Aff.var(bases[row_var]) + Aff.var("pd_r")
        env[vec_var] = Aff.var(bases[vec_var]) + Aff.var("pd_v")
        cell_index = self.flat_index(target.array, [i.subst(env) for i in target.index])
        cell = f"{target.array}[{cell_index}]"
        if padded is None:
            rows, width = extents
            copy_in = [self._tile_copy(f"{acc}[pd_r][pd_v] = {cell}", rows, width)]
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
                       self._tile_copy(f"{acc}[pd_r][pd_v] = {cell}", nr, nv if not
                                       padded.shift else width, first)]
            copy_out = self._tile_copy(f"{cell} = {acc}[pd_r][pd_v]", nr,
                                       nv if not padded.shift else width, first)
            padded.args[row_var] = f"{bases[row_var]} + pd_min(pd_r, {nr} - 1)"
            padded.args[vec_var] = f"{bases[vec_var]} + pd_v"
        self.promoted[target.array] = (acc, str(row_dim), str(vec_dim), bases[row_var],
                                       bases[vec_var])
        self.padded = padded
        try:
            body = self.loop(n, st, parallel=False)
        finally:
            del self.promoted[target.array]
            self.padded = None
        tile = cgen.Block([*decl, cgen.Block([*zero, *assign]),
                           cgen.Statement(f"{ctype} {acc}[{rows}][{width}]"),
                           *copy_in, *body, copy_out])
        if padded is None or not padded.checks:
            return [tile]
        # where the box is empty, or where the vector's cells outside the box would read
        # past the end of a packed row (a tile not aligned to the vector in the packed
        # box), the plain loops run
        cond = " && ".join(padded.checks)
        return [cgen.If(cond, tile, cgen.Block(self.loop(n, st, parallel=False)))]

    def _padded_plan(self, stmts: list[Statement], users: list[tuple[str, list[str]]],
                     box: str, row_var: str, vec_var: str, row_it: str, vec_it: str
                     ) -> _Padded | None:
        """How a partial register tile runs as a full one. ``box`` (astgen) gives, per
        iterator of the tile's one statement, its smallest value, its extent and its largest
        extent, and says that the instances form that box: every cell of the target in it
        takes the same reduction iterations. The tile then computes all rows x width cells:
        a row outside the box reads the last row in it (its loads stay in bounds) and the
        cells outside are never stored. Columns outside the box read past the box's end, so
        a partial vector needs every load that moves along it to come from a packed buffer
        (rows padded and zero-filled, see ``pack``), checked at run time to stay in its row.
        None when that does not hold."""
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
        elem = 8 if self.scop.array(stmt.target.array).dtype in ("f64", "i64") else 4
        if not top[row_var] or not top[vec_var]:  # unbounded
            return None
        # the rows the box can have; its width rounded up to whole vectors: one xmm or ymm
        # register for a narrow tier's tile (auto.NARROW_REGISTERS), else zmm registers
        lanes = next(b for b in (16, 32, 64) if int(top[vec_var]) * elem <= b or b == 64) // elem
        rows, width = int(top[row_var]), -(-int(top[vec_var]) // lanes) * lanes
        if rows * width > 4096:  # not a register tile
            return None
        inner = re.compile(rf"\b({row_it}|{vec_it})\b")
        others = {v: a for v, a in zip(stmt.iters, args, strict=True)
                  if v not in (row_var, vec_var)}
        if any(inner.search(a) for a in others.values()):
            return None
        checks = [] if where == "1" else [where]
        shift = False
        if size[vec_var] != str(width):  # a partial vector
            moving = [ref for ref in stmt.value.walk() if isinstance(ref, Load) and
                      ref.array != stmt.target.array and
                      any(vec_var in sub.vars() for sub in ref.index)]
            if all(ref.array in self.packed and ref.index[-1].vars() == {vec_var} and
                   vec_var not in set().union(*(sub.vars() for sub in ref.index[:-1]))
                   for ref in moving):
                for ref in moving:
                    _, offsets, strides = self.packed[ref.array]
                    top_cell = Aff.var(f"({lo[vec_var]} + {width - 1})")
                    last = ref.index[-1].subst({vec_var: top_cell})
                    checks.append(f"({last.to_c()}) - ({offsets[-1]}) < {strides[-2]}")
            elif room[0]:  # the tile moved down to end at the box's top, over instances
                shift = True
                checks.append(f"({lo[vec_var]}) + ({size[vec_var]}) - {width} >= ({room[0]})")
            else:
                return None
        return _Padded(stmt, dict(others), lo, size, rows, width, checks, shift)

    def padded_rows(self, st: _LoopState) -> list[cgen.Generable]:
        """The rows x vector loops of a partial register tile run as a full one."""
        padded = self.padded
        st.used_locals |= self.stmt_locals[padded.stmt.name]
        args = [padded.args[v] for v in padded.stmt.iters]
        vec = cgen.For("int64_t pd_v = 0", f"pd_v < {padded.width}", "pd_v++",
                       cgen.Block([self.statement(padded.stmt, args)]))
        rows = cgen.For("int64_t pd_r = 0", f"pd_r < {padded.rows}", "pd_r++",
                        cgen.Block([cgen.Pragma(self.simd_pragma), vec]))
        return [cgen.Pragma("GCC unroll 16"), rows]

    def pack(self, n: isl.AstNode, st: _LoopState) -> list[cgen.Generable]:
        """Under a pack mark whose footprint boxes astgen annotated: copy each box into a
        local buffer (of the box's largest size) whose rows are padded by 64 bytes, so that
        a power-of-two leading dimension does not map a tile's rows to a few cache sets,
        and read the array from the buffer below. Without boxes, the plain code."""
        boxes = _annotation(n)
        if not boxes:  # no box of bounded size (untiled code)
            return self.node(n.mark_get_node(), st)
        decls: list[cgen.Generable] = []
        saved = dict(self.packed)
        for box in boxes.split(PACK_SEP):
            array, bounds_text, sizes_text, offsets_text = box.split(PACK_FIELD)
            bounds = [int(x) for x in bounds_text.split(",")]
            sizes, offsets = sizes_text.split(PACK_ITEM), offsets_text.split(PACK_ITEM)
            arr = self.scop.array(array)
            elem = 4 if arr.dtype in ("f32", "i32") else 8
            # rows: a whole number of register-tile vectors (a partial register tile reads
            # them all), then 64 bytes more
            vector = REG_VECTOR_BYTES // elem
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
            decls += [cgen.Statement(f"{C_TYPE[arr.dtype]} {buf}[{total}] "
                                     "__attribute__((aligned(64)))"), copy]
            self.packed[array] = (buf, offsets, strides)
        try:
            body = self.node(n.mark_get_node(), st)
        finally:
            self.packed = saved
        return [cgen.Block([*decls, *body])]

    def _tile_copy(self, assignment: str, rows: int | str, width: int | str,
                   first: int | str = 0) -> cgen.Generable:
        inner = cgen.For(f"int64_t pd_v = {first}", f"pd_v < {width}", "pd_v++",
                         cgen.Block([cgen.Statement(assignment)]))
        return cgen.For("int64_t pd_r = 0", f"pd_r < {rows}", "pd_r++",
                        cgen.Block([cgen.Pragma("omp simd"), inner]))

    def _work_test(self, n: isl.AstNode) -> str:
        """C: the statements under loop ``n`` are worth threads."""
        return f"{self.work_expr(name for name, _ in _users(n, self))} >= {PARALLEL_MIN_WORK}"

    def loop_pragma(self, n: isl.AstNode, it: str, parallel: bool, st: _LoopState,
                    used_locals: set[str], trips: str | None = None) -> str | None:
        """Threads for the outermost parallel loop (with a run-time test of its work and,
        where the trip count is known, of having as many iterations as threads), SIMD for
        an innermost stride-1 one."""
        if not parallel:
            return None
        in_parallel = st.in_parallel
        private = f" private({', '.join(sorted(used_locals))})" if used_locals else ""
        when = [self._work_test(n)]
        if trips is not None and _has_loop(n.for_get_body()):
            when.append(f"{trips} >= pd_threads()")
        threads = f"{self.parallel_pragma}{private} if({' && '.join(when)})"
        if _has_loop(n.for_get_body()) and not in_parallel:
            return threads
        if not _has_loop(n.for_get_body()):
            if self._unit_stride(n, it):
                return self.simd_pragma + private
            if not in_parallel:
                return threads
        return None

    def _unit_stride(self, n: isl.AstNode, it: str) -> bool:
        """Every access of the loop's statements moves by 0 or 1 element per iteration."""
        pattern = re.compile(rf"\b{re.escape(it)}\b")
        for name, args in _users(n.for_get_body(), self):
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
        self.user_counts = Counter(name for name, _ in _users(ast, self))
        st = _LoopState()
        body = self.node(ast, st)
        decls: list[cgen.Generable] = []
        for a in self.scop.arrays:
            if a.kind == "local":
                decls.append(cgen.Statement(f"{C_TYPE[a.dtype]} {a.name}"))
        temps = [a for a in self.scop.arrays if a.kind == "temp"]
        for a in temps:
            decls.append(cgen.Statement(
                f"{C_TYPE[a.dtype]} *{self.restrict} {a.name} = ({C_TYPE[a.dtype]} *)"
                f"pd_alloc({self.size_expr(a)}, {int(a.name in self.zero_init)})"))
        if temps:
            fail = " || ".join(f"!{a.name}" for a in temps)
            frees = [cgen.Statement(f"free({a.name})") for a in temps]
            decls.append(cgen.If(fail, cgen.Block([*frees, cgen.Statement("return -2")])))
            tail = [*frees, cgen.Statement("return 0")]
        else:
            tail = [cgen.Statement("return 0")]
        header = f"static int {fname}({', '.join(self.params(True))})"
        block = cgen.Block([*decls, *body, *tail])
        return f"/* variant {variant.name}: {variant.region} */\n{header}\n{block}\n"

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
        parts = [f"/* generated by polydyn for operator {self.scop.name} */", PRELUDE]
        for k, (v, ast) in enumerate(zip(variants, asts)):
            parts.append(self.variant_function(f"{self.scop.name}_v{k}", v, ast))
        parts.append(self.dispatcher(variants))
        return "\n".join(parts)


def _locals_of(scop: Scop, stmt: Statement) -> set[str]:
    """The local scalars ``stmt`` assigns: private to a parallel loop around it. A local it
    only reads was assigned before that loop and stays shared (a private copy would start
    uninitialized)."""
    if isinstance(stmt.target, Scalar) and scop.array(stmt.target.name).kind == "local":
        return {stmt.target.name}
    return set()


def _has_loop(n: isl.AstNode) -> bool:
    t = n.get_type()
    if t == isl.ast_node_type.for_:
        return not n.for_is_degenerate() or _has_loop(n.for_get_body())
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return any(_has_loop(ch.get_at(i)) for i in range(ch.n_ast_node()))
    if t == isl.ast_node_type.if_:
        return _has_loop(n.if_get_then_node()) or (
            n.if_has_else_node() and _has_loop(n.if_get_else_node()))
    if t == isl.ast_node_type.mark:
        return _has_loop(n.mark_get_node())
    return False


def _users(n: isl.AstNode, em: CEmitter) -> list[tuple[str, list[str]]]:
    """``(statement name, printed iterator arguments)`` of every user node under ``n``."""
    t = n.get_type()
    if t == isl.ast_node_type.user:
        call = n.user_get_expr()
        return [(call.get_op_arg(0).get_id().get_name(),
                 [em.ast_expr(call.get_op_arg(i)) for i in range(1, call.get_op_n_arg())])]
    if t == isl.ast_node_type.for_:
        return _users(n.for_get_body(), em)
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return [u for i in range(ch.n_ast_node()) for u in _users(ch.get_at(i), em)]
    if t == isl.ast_node_type.if_:
        out = _users(n.if_get_then_node(), em)
        return out + (_users(n.if_get_else_node(), em) if n.if_has_else_node() else [])
    if t == isl.ast_node_type.mark:
        return _users(n.mark_get_node(), em)
    return []


def _strip_parens(text: str) -> str:
    """``(a < b)`` -> ``a < b`` when the outer parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]


def _annotation(n: isl.AstNode) -> str:
    """What the loop carries (astgen's annotation), or "" when the AST has none."""
    try:
        ann = n.get_annotation()
    except isl.Error:  # an AST built without annotations
        return ""
    return ann.get_name() if ann is not None else ""


def _role_loops(n: isl.AstNode, role: str, through_ifs: bool) -> list[isl.AstNode | None]:
    """The nodes under marks with ``role`` in the subtree ``n`` (None where such a mark's
    child is not a for node), looking into ifs only when ``through_ifs``."""
    t = n.get_type()
    if t == isl.ast_node_type.mark:
        if parse_mark(n.mark_get_id().get_name())[1] == role:
            child = n.mark_get_node()
            return [child if child.get_type() == isl.ast_node_type.for_ else None]
        return _role_loops(n.mark_get_node(), role, through_ifs)
    if t == isl.ast_node_type.for_:
        return _role_loops(n.for_get_body(), role, through_ifs)
    if t == isl.ast_node_type.block:
        ch = n.block_get_children()
        return [x for i in range(ch.n_ast_node())
                for x in _role_loops(ch.get_at(i), role, through_ifs)]
    if t == isl.ast_node_type.if_ and through_ifs:
        out = _role_loops(n.if_get_then_node(), role, through_ifs)
        if n.if_has_else_node():
            out += _role_loops(n.if_get_else_node(), role, through_ifs)
        return out
    return []


def _find_role_loop(n: isl.AstNode, role: str, through_ifs: bool = False
                    ) -> isl.AstNode | None:
    """The for node under the first mark with ``role`` in the subtree ``n``."""
    found = _role_loops(n, role, through_ifs)
    return found[0] if found else None


def _count_role_loops(n: isl.AstNode, role: str) -> int:
    return len(_role_loops(n, role, through_ifs=True))


def _target_dims(target: Load, row_var: str, vec_var: str) -> list[tuple[int, str]]:
    """``(subscript position, iterator)`` of the target's row and vector subscripts."""
    return [(d, v) for d, sub in enumerate(target.index) for v in (row_var, vec_var)
            if v in sub.vars()]


def _trip_count(n: isl.AstNode, init: str, inc: str, em: CEmitter) -> str | None:
    """The iterations of ``for (c = init; c < ub or c <= ub; c += inc)`` as C, else None."""
    cond = n.for_get_cond()
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2 or \
            cond.get_op_type() not in (_T.lt, _T.le):
        return None
    ub = em.ast_expr(cond.get_op_arg(1))
    if cond.get_op_type() == _T.le:
        return f"((({ub}) - ({init})) / ({inc}) + 1)"
    return f"((({ub}) - ({init}) + ({inc}) - 1) / ({inc}))"


def _constant_trip(n: isl.AstNode) -> int | None:
    """The trip count of ``for (c = 0; c <= K; c += 1)`` with constant K, else None."""
    init, cond, inc = n.for_get_init(), n.for_get_cond(), n.for_get_inc()
    if init.get_type() != isl.ast_expr_type.int or init.get_val().to_python() != 0:
        return None
    if inc.get_type() != isl.ast_expr_type.int or inc.get_val().to_python() != 1:
        return None
    if cond.get_type() != isl.ast_expr_type.op or cond.get_op_n_arg() != 2:
        return None
    bound = cond.get_op_arg(1)
    if bound.get_type() != isl.ast_expr_type.int:
        return None
    k = bound.get_val().to_python()
    op = cond.get_op_type()
    if op == _T.le:
        return k + 1
    if op == _T.lt:
        return k
    return None


def _mentions_inner(expr: str, n: isl.AstNode, row_it: str, vec_it: str) -> bool:
    """Whether an iterator expression uses loops inside the promoted loop other than the
    tile's rows and vector (then it has no single value at the copy-in point)."""
    inner = set(re.findall(rf"\b{ITERATOR}\d+\b", expr)) - {row_it, vec_it}
    outer_limit = int(n.for_get_iterator().get_id().get_name()[len(ITERATOR):])
    return any(int(c[len(ITERATOR):]) >= outer_limit for c in inner)
