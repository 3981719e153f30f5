"""C expressions -> Scop IR: affine expressions and conditions (bounds, subscripts, `if`s) and
typed statement-body values, with C's own typing (usual arithmetic conversions, truncating
integer division, double literals, math.h calls).

Each value is built as ``(Expr, ctype)``: ``ctype`` is the C type of the expression (one of
``i32 i64 f32 f64``). Operands are converted to C's common type with explicit casts, so the IR's
NumPy-style promotion meets equal types and computes exactly what the C program computes.
"""

from __future__ import annotations

import abc
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import islpy as isl
from pycparser import c_ast, c_generator

from ..errors import FrontendError, SourceLoc
from .affine import Aff, Cond
from .domains import conds_text, loop_constraints, make_domain
from .exprs import (
    WEAK_INT,
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
    binary,
    join_dtypes,
)
from .ir import Array, Loop

INT_TYPES = ("i32", "i64")
_ARITH = ("+", "-", "*", "/", "%")
_CMP = ("<", "<=", ">", ">=", "==", "!=")
INT_LITERAL = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)[uUlL]*")

# math.h (and stdlib.h abs) -> (IR function or binary op, argument/result ctype, arity)
MATH = {
    **{f: (f, "f64", 1) for f in ("sqrt", "exp", "log", "tanh", "sin", "cos", "floor", "ceil",
                                  "erf")},
    **{f + "f": (f, "f32", 1) for f in ("sqrt", "exp", "log", "tanh", "sin", "cos", "floor",
                                        "ceil", "erf")},
    "fabs": ("abs", "f64", 1), "fabsf": ("abs", "f32", 1),
    "abs": ("abs", "i32", 1), "labs": ("abs", "i64", 1), "llabs": ("abs", "i64", 1),
    "pow": ("pow", "f64", 2), "powf": ("pow", "f32", 2),
    "fmax": ("max", "f64", 2), "fmaxf": ("max", "f32", 2),
    "fmin": ("min", "f64", 2), "fminf": ("min", "f32", 2),
}
# Constants glibc's macros expand to (INFINITY, HUGE_VAL, NAN).
BUILTIN_CONSTS = {
    "__builtin_inff": ("f32", float("inf")), "__builtin_huge_valf": ("f32", float("inf")),
    "__builtin_inf": ("f64", float("inf")), "__builtin_huge_val": ("f64", float("inf")),
    "__builtin_nanf": ("f32", float("nan")), "__builtin_nan": ("f64", float("nan")),
}


@dataclass
class ScalarInfo:
    """A local scalar in the IR: created at its first assignment (as in the Python frontend)."""

    name: str  # unique IR name
    depth: int  # loop depth of its first assignment
    scope: tuple[str, ...]


@dataclass
class Decl:
    """A C variable declared in the function body (a block-scoped name).

    ``kind``: ``scalar`` (a local scalar, ``info`` set once assigned), ``alias`` (an integer
    never reassigned whose initializer is affine: it stands for ``alias``), ``array`` (a
    temporary array).
    """

    name: str
    ctype: str
    kind: str = "scalar"
    info: ScalarInfo | None = None
    alias: Aff | None = None
    counted: bool = False  # was a loop counter: its exit value is not modelled


@dataclass
class Ctx:
    loops: tuple[Loop, ...] = ()
    conds: tuple[tuple[Cond, bool], ...] = ()
    assigned: set[str] = field(default_factory=set)

    def with_cond(self, cond: Cond, positive: bool) -> Ctx:
        return Ctx(self.loops, (*self.conds, (cond, positive)), set(self.assigned))


class NotAffineError(Exception):
    def __init__(self, node: c_ast.Node, reason: str):
        super().__init__(reason)
        self.node, self.reason = node, reason


def common_type(a: str, b: str) -> str:
    """C's usual arithmetic conversions over i32 < i64 < f32 < f64."""
    order = ("i32", "i64", "f32", "f64")
    return max(a, b, key=order.index)


def convert(e: Expr, ctype: str, to: str) -> Expr:
    """``e`` (of C type ``ctype``) converted to ``to``, as C converts implicitly."""
    if ctype == to and e.dtype != "bool":
        return e
    if isinstance(e, Const) and (to in ("f32", "f64") or math.isfinite(e.value)):
        return Const(to, float(e.value) if to in ("f32", "f64") else int(e.value))
    return Cast(to, e)


def truth(e: Expr) -> Expr:
    """A C condition as an IR boolean (``x`` means ``x != 0``)."""
    return e if e.dtype == "bool" else binary("!=", e, Const(WEAK_INT, 0))


def parse_int(text: str) -> tuple[int, str]:
    """An integer literal's value and C type (``u`` suffixes are refused by the caller)."""
    body = text.rstrip("uUlL")
    suffix = text[len(body):].lower()
    if body.lower().startswith("0x"):
        value = int(body, 16)
    elif body.lower().startswith("0b"):
        value = int(body, 2)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        value = int(body)
    ctype = "i64" if "l" in suffix or value > 2**31 - 1 else "i32"
    return value, ("u" + ctype if "u" in suffix else ctype)


class CExprs(abc.ABC):
    """Symbol tables and expression translation; CBody adds statements."""

    def __init__(self, file: str, sources: dict[str, list[str]]):
        self.file = file
        self.sources = sources
        self.gen = c_generator.CGenerator()
        self.syms: dict[str, str] = {}  # int parameter -> ctype
        self.arrays: dict[str, Array] = {}
        self.loop_vars: dict[str, str] = {}  # active loop counters -> ctype
        self.scopes: list[dict[str, Decl]] = [{}]
        self.params = "[]"
        self.context: isl.Set = isl.Set("{ : }")

    # --- locations and errors ---------------------------------------------------------------
    def src(self, node: c_ast.Node) -> str:
        try:
            return self.gen.visit(node)
        except Exception:  # a node CGenerator cannot print alone
            return type(node).__name__

    def loc(self, node: c_ast.Node | None) -> SourceLoc:
        coord = getattr(node, "coord", None)
        if coord is None:
            return SourceLoc(self.file, 1)
        file = self.file if coord.file in ("", "<stdin>") else coord.file
        if file not in self.sources:  # a header the user's file includes
            try:
                self.sources[file] = Path(file).read_text().splitlines()
            except OSError:
                self.sources[file] = []
        lines = self.sources[file]
        text = lines[coord.line - 1] if 0 < coord.line <= len(lines) else ""
        col, end = max(0, (coord.column or 1) - 1), None
        found = _find(self.src(node), text) if text else None
        if found is not None:
            col, end = found
        return SourceLoc(file, coord.line, col, text, end)

    def error(self, node: c_ast.Node | None, message: str) -> NoReturn:
        raise FrontendError(message, self.loc(node)) from None

    # --- names --------------------------------------------------------------------------------
    def lookup(self, name: str) -> Decl | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _aff_name(self, node: c_ast.ID) -> Aff:
        name = node.name
        if name in self.loop_vars or name in self.syms:
            return Aff.var(name)
        decl = self.lookup(name)
        if decl is not None and decl.kind == "alias":
            return decl.alias
        if decl is not None and decl.kind == "scalar":
            self._check_readable(node, decl)
            raise NotAffineError(node, f"`{name}` is a local variable (a value); bounds and "
                                 "subscripts must be affine in loop counters and int parameters")
        if name in self.arrays:
            raise NotAffineError(node, f"`{name}` is an array or a scalar argument, not an int "
                                 "parameter")
        self.error(node, f"unknown name `{name}`")

    def _check_readable(self, node: c_ast.Node, decl: Decl) -> None:
        if decl.counted and decl.info is None:
            self.error(node, f"`{decl.name}` is read after the loop it counts; polydyn does not "
                             "model a counter's exit value: use the bound instead")

    # --- affine expressions -------------------------------------------------------------------
    def aff(self, node: c_ast.Node, ctx: Ctx, what: str = "expression", where: str = "") -> Aff:
        try:
            return self.aff_rec(node, ctx)
        except NotAffineError as exc:
            where = f" in `{where}`" if where else ""
            self.error(exc.node, f"non-affine {what} `{self.src(node)}`{where}: {exc.reason}")

    def aff_rec(self, node: c_ast.Node, ctx: Ctx) -> Aff:
        if isinstance(node, c_ast.Constant):
            if not INT_LITERAL.fullmatch(node.value):
                raise NotAffineError(node, "only integer constants may appear here")
            return Aff.const(parse_int(node.value)[0])
        if isinstance(node, c_ast.ID):
            return self._aff_name(node)
        if isinstance(node, c_ast.Cast):
            ctype = self.type_of(node.to_type.type, node)
            if ctype not in INT_TYPES:
                raise NotAffineError(node, "a cast to a floating type is not an integer expression")
            return self.aff_rec(node.expr, ctx)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            inner = self.aff_rec(node.expr, ctx)
            return -inner if node.op == "-" else inner
        if isinstance(node, c_ast.BinaryOp) and node.op in _ARITH:
            return self._aff_binary(node, ctx)
        if isinstance(node, c_ast.TernaryOp):
            return self._aff_minmax(node, ctx)
        if isinstance(node, c_ast.ArrayRef):
            raise NotAffineError(node, "an array element is a value, not an affine expression "
                                 "(indirect access is not supported)")
        raise NotAffineError(node, "expected an affine expression of loop counters and int "
                             "parameters")

    def _aff_binary(self, node: c_ast.BinaryOp, ctx: Ctx) -> Aff:
        a, b = self.aff_rec(node.left, ctx), self.aff_rec(node.right, ctx)
        if node.op == "+":
            return a + b
        if node.op == "-":
            return a - b
        if node.op == "*":
            if not (a.is_const() or b.is_const()):
                raise NotAffineError(node, "subscripts and bounds must be affine in loop counters "
                                     "and int parameters (a product needs a constant)")
            return a * b
        if not b.is_const() or b.args[0] <= 0:
            raise NotAffineError(node, "`/` and `%` need a positive integer constant divisor")
        if not self.nonnegative(a, ctx):
            raise NotAffineError(node, f"C's `{node.op}` truncates toward zero and polydyn cannot "
                                 f"prove `{self.src(node.left)}` >= 0 here (where floor "
                                 "division agrees)")
        return a // b.args[0] if node.op == "/" else a % b.args[0]

    def _aff_minmax(self, node: c_ast.TernaryOp, ctx: Ctx) -> Aff:
        """``a < b ? a : b`` (MIN) and ``a > b ? a : b`` (MAX), in either spelling."""
        cond = node.cond
        if isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=", ">", ">="):
            x, y = self.aff_rec(cond.left, ctx), self.aff_rec(cond.right, ctx)
            t, f = self.aff_rec(node.iftrue, ctx), self.aff_rec(node.iffalse, ctx)
            smaller_first = cond.op in ("<", "<=")
            if (t, f) == (x, y):
                return Aff.min(x, y) if smaller_first else Aff.max(x, y)
            if (t, f) == (y, x):
                return Aff.max(x, y) if smaller_first else Aff.min(x, y)
        raise NotAffineError(node, "a conditional expression in a bound or subscript must be a "
                             "min or max: `a < b ? a : b` or `a > b ? a : b`")

    def nonnegative(self, aff: Aff, ctx: Ctx) -> bool:
        """Whether isl proves ``aff >= 0`` wherever ``ctx`` executes."""
        iters = tuple(lp.var for lp in ctx.loops)
        cons = [loop_constraints(lp) for lp in ctx.loops] + conds_text(list(ctx.conds))
        cons.append(f"{aff.to_isl()} < 0")
        try:
            negative = make_domain(self.params, "D", iters, cons, self.context)
        except isl.Error:
            return False
        return negative.is_empty()

    # --- affine conditions --------------------------------------------------------------------
    def cond(self, node: c_ast.Node, ctx: Ctx) -> Cond:
        """An affine condition; raises NotAffineError for anything else (the caller decides)."""
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            left = self.cond(node.left, ctx)
            # C evaluates the right operand only when the left one does not decide.
            right = self.cond(node.right, ctx.with_cond(left, node.op == "&&"))
            return Cond("and" if node.op == "&&" else "or", (left, right))
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return Cond("not", (self.cond(node.expr, ctx),))
        if isinstance(node, c_ast.BinaryOp) and node.op in _CMP:
            return Cond(node.op, (self.aff_rec(node.left, ctx), self.aff_rec(node.right, ctx)))
        value = self.aff_rec(node, ctx)
        if value.is_const():
            return Cond("true" if value.args[0] else "false", ())
        return Cond("!=", (value, Aff.const(0)))

    # --- types --------------------------------------------------------------------------------
    def type_of(self, node: c_ast.Node, where: c_ast.Node, allow_unsigned: bool = False) -> str:
        """The ctype of a TypeDecl (``float``, ``long long``, a typedef of those)."""
        if not isinstance(node, c_ast.TypeDecl) or not isinstance(node.type,
                                                                   c_ast.IdentifierType):
            self.error(where, f"unsupported type in `{self.src(where)}`: use float, double, "
                              "int or long")
        names = [n for n in node.type.names if n not in ("signed", "const")]
        return self.base_type(names, where, allow_unsigned)

    @abc.abstractmethod
    def base_type(self, names: list[str], where: c_ast.Node, allow_unsigned: bool) -> str:
        """The dtype of a C type name (the frontend knows the file's typedefs)."""

    # --- values -------------------------------------------------------------------------------
    def value(self, node: c_ast.Node, ctx: Ctx) -> tuple[Expr, str]:
        if isinstance(node, c_ast.Constant):
            return self._constant(node)
        if isinstance(node, c_ast.ID):
            return self._name_value(node, ctx)
        if isinstance(node, c_ast.ArrayRef):
            load = self.load(node, ctx)
            return load, load.dtype
        if isinstance(node, c_ast.BinaryOp):
            return self._binary(node, ctx)
        if isinstance(node, c_ast.UnaryOp):
            return self._unary(node, ctx)
        if isinstance(node, c_ast.Cast):
            return self._cast(node, ctx)
        if isinstance(node, c_ast.TernaryOp):
            c, _ = self.value(node.cond, ctx)
            a, ta = self.value(node.iftrue, ctx)
            b, tb = self.value(node.iffalse, ctx)
            t = common_type(ta, tb)
            a, b = convert(a, ta, t), convert(b, tb, t)
            return Select(join_dtypes(a.dtype, b.dtype), truth(c), a, b), t
        if isinstance(node, c_ast.FuncCall):
            return self._call(node, ctx)
        if isinstance(node, c_ast.Assignment):
            self.error(node, f"assignment inside an expression `{self.src(node)}`; write it as "
                             "its own statement")
        self.error(node, f"`{self.src(node)}` is not supported in a static control part "
                         "(use arithmetic, array elements, local scalars, casts, `?:` and "
                         "math.h calls)")

    def _constant(self, node: c_ast.Constant) -> tuple[Expr, str]:
        text = node.value
        if node.type in ("char", "string") or text[:1] in ("'", '"'):
            self.error(node, f"character and string constants are not supported: `{text}`")
        if INT_LITERAL.fullmatch(text):
            value, ctype = parse_int(text)
            if ctype.startswith("u"):
                self.error(node, f"unsigned constant `{text}`: unsigned arithmetic is not "
                                 "supported; drop the `u` suffix")
            return Const(WEAK_INT, value), ctype
        body = text.rstrip("fFlL")
        suffix = text[len(body):].lower()
        if suffix == "l":
            self.error(node, f"long double constant `{text}` is not supported")
        value = float.fromhex(body) if body.lower().startswith("0x") else float(body)
        ctype = "f32" if suffix == "f" else "f64"
        return Const(ctype, value), ctype

    def _cast(self, node: c_ast.Cast, ctx: Ctx) -> tuple[Expr, str]:
        to = self.type_of(node.to_type.type, node)
        inner = node.expr
        if isinstance(inner, c_ast.Constant) and re.fullmatch(r"[0-9.eE+-]+[lL]", inner.value):
            # ((double)1.79...e+308L): how <float.h> spells DBL_MAX and DBL_EPSILON
            return convert(Const("f64", float(inner.value[:-1])), "f64", to), to
        e, t = self.value(inner, ctx)
        return convert(e, t, to), to

    def _name_value(self, node: c_ast.ID, ctx: Ctx) -> tuple[Expr, str]:
        name = node.name
        if name in self.loop_vars:
            return Index(WEAK_INT, Aff.var(name)), self.loop_vars[name]
        if name in self.syms:
            return Index(WEAK_INT, Aff.var(name)), self.syms[name]
        decl = self.lookup(name)
        if decl is not None and decl.kind == "alias":
            return Index(WEAK_INT, decl.alias), decl.ctype
        if decl is not None and decl.kind == "scalar":
            self._check_readable(node, decl)
            if decl.info is None or decl.info.name not in ctx.assigned:
                self.error(node, f"local variable `{name}` is read before it is assigned in "
                                 "this iteration")
            return Scalar(decl.ctype, decl.info.name), decl.ctype
        arr = self.arrays.get(name)
        if arr is not None and arr.kind == "value":
            return Scalar(arr.dtype, name), arr.dtype
        if arr is not None:
            self.error(node, f"`{name}` is an array; index every dimension: "
                             f"{name}{''.join('[..]' for _ in arr.shape)}")
        self.error(node, f"unknown name `{name}` (a global or undeclared variable); operators "
                         "use their parameters and variables declared in the region")

    def load(self, node: c_ast.ArrayRef, ctx: Ctx) -> Load:
        subs: list[c_ast.Node] = []
        base: c_ast.Node = node
        while isinstance(base, c_ast.ArrayRef):
            subs.insert(0, base.subscript)
            base = base.name
        if not isinstance(base, c_ast.ID) or base.name not in self.arrays \
                or not self.arrays[base.name].is_tensor:
            self.error(base, f"`{self.src(base)}` is not an array parameter or a local array")
        arr = self.arrays[base.name]
        if len(subs) != arr.rank:
            self.error(node, f"`{arr.name}` has {arr.rank} dimension(s), but `{self.src(node)}` "
                             f"gives {len(subs)} subscript(s)")
        index = tuple(self.aff(s, ctx, "subscript", self.src(node)) for s in subs)
        return Load(arr.dtype, arr.name, index)

    def _binary(self, node: c_ast.BinaryOp, ctx: Ctx) -> tuple[Expr, str]:
        op = node.op
        if op in ("&&", "||"):
            # C evaluates the right operand only when needed: a select says so (its branches
            # may then read what only the left operand makes valid, like ?:).
            a, _ = self.value(node.left, ctx)
            b, _ = self.value(node.right, ctx)
            a, b = truth(a), truth(b)
            if op == "&&":
                return Select("bool", a, b, Const("bool", 0)), "i32"
            return Select("bool", a, Const("bool", 1), b), "i32"
        if op not in _ARITH and op not in _CMP:
            self.error(node, f"operator `{op}` is not supported (bitwise and shift operators "
                             "are outside the supported subset)")
        a, ta = self.value(node.left, ctx)
        b, tb = self.value(node.right, ctx)
        t = common_type(ta, tb)
        if op in _CMP:
            return binary(op, convert(a, ta, t), convert(b, tb, t)), "i32"
        if t in INT_TYPES and isinstance(a, Index | Const) and isinstance(b, Index | Const):
            try:
                return Index(WEAK_INT, self.aff_rec(node, ctx)), t
            except (NotAffineError, FrontendError):
                pass
        a, b = convert(a, ta, t), convert(b, tb, t)
        if op in ("/", "%") and t in INT_TYPES:
            return truncating(op, a, b), t
        if op == "%":
            self.error(node, f"`%` of floating values `{self.src(node)}` is not C; use fmod")
        return binary(op, a, b), t

    def _unary(self, node: c_ast.UnaryOp, ctx: Ctx) -> tuple[Expr, str]:
        if node.op in ("-", "+", "!"):
            a, t = self.value(node.expr, ctx)
            if node.op == "+":
                return a, t
            if node.op == "!":
                return Un("bool", "not", truth(a)), "i32"
            if isinstance(a, Index):
                return Index(WEAK_INT, -a.aff), t
            if isinstance(a, Const):
                return Const(a.dtype, -a.value), t
            return Un(a.dtype, "neg", a), t
        if node.op in ("++", "--", "p++", "p--"):
            self.error(node, f"`{self.src(node)}` inside an expression: write the increment as "
                             "its own statement")
        if node.op in ("*", "&"):
            self.error(node, f"pointer operation `{self.src(node)}`: use C99 array parameters "
                             "(float A[N][M]) and subscripts")
        self.error(node, f"operator `{node.op}` is not supported in `{self.src(node)}`")

    def _call(self, node: c_ast.FuncCall, ctx: Ctx) -> tuple[Expr, str]:
        fname = node.name.name if isinstance(node.name, c_ast.ID) else None
        args = list(node.args.exprs) if node.args is not None else []
        if fname in BUILTIN_CONSTS:
            ctype, v = BUILTIN_CONSTS[fname]
            return Const(ctype, v), ctype
        if fname in ("__builtin_isnan", "isnan") and len(args) == 1:
            x, _ = self.value(args[0], ctx)
            return binary("!=", x, x), "i32"  # <math.h>'s isnan(x)
        if fname not in MATH:
            self.error(node, f"call to `{self.src(node.name)}`: a static control part may call "
                             f"only math.h functions ({', '.join(sorted(MATH))})")
        fn, t, arity = MATH[fname]
        if len(args) != arity:
            self.error(node, f"{fname}() takes {arity} argument(s)")
        vals = [convert(*self.value(a, ctx), t) for a in args]
        if arity == 2:
            return Bin(t, fn, vals[0], vals[1]), t
        return Call(t, fn, (vals[0],)), t


def truncating(op: str, a: Expr, b: Expr) -> Expr:
    """C's integer ``a / b`` or ``a % b`` (toward zero) from the IR's floor ``//`` and ``%``:
    they differ when the remainder is nonzero and the signs of ``a`` and ``b`` differ."""
    q, r = binary("//", a, b), binary("%", a, b)
    zero = Const(WEAK_INT, 0)
    if isinstance(b, Const) and b.value > 0:
        signs_differ = binary("<", a, zero)
    else:
        signs_differ = binary("!=", binary("<", a, zero), binary("<", b, zero))
    fix = binary("and", binary("!=", r, zero), signs_differ)
    if op == "/":
        return Select(q.dtype, fix, binary("+", q, Const(WEAK_INT, 1)), q)
    return Select(r.dtype, fix, binary("-", r, b), r)


def _find(text: str, line: str) -> tuple[int, int] | None:
    """Where ``text`` (printed by CGenerator) stands in the source ``line``, ignoring spaces."""
    chars = [re.escape(c) for c in text if not c.isspace()]
    if not chars:
        return None
    match = re.search(r"\s*".join(chars), line)
    return (match.start(), match.end()) if match else None
