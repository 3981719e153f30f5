"""The Scop IR: syms, arrays, statements with isl domains and accesses, and the original loop tree.

Three small expression languages live here:
- ``Aff``: integer (quasi-)affine expressions of syms and loop variables (bounds, subscripts,
  shapes); they print to isl text, C and Python.
- ``Cond``: affine conditions (``if`` guards), printable to isl text, C and Python.
- ``Expr``: typed statement-body expressions (loads, arithmetic, math calls, selects).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import islpy as isl

from ..errors import InternalError, SourceLoc

# --------------------------------------------------------------------------------------------
# dtypes

DTYPES = ("f32", "f64", "i32", "i64")
C_TYPE = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "bool": "int"}
NUMPY_NAME = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "bool": "bool"}
# Python literals are "weak" (NumPy NEP 50): they take the type of the other operand.
WEAK_FLOAT, WEAK_INT = "float", "int"


def is_float(dtype: str) -> bool:
    return dtype in ("f32", "f64", WEAK_FLOAT)


def join_dtypes(a: str, b: str) -> str:
    """Result type of a binary arithmetic operation (NumPy 2 promotion with weak literals)."""
    if a == b or b == "?":
        return a
    if a == "?":
        return b
    if a == "bool":
        a = WEAK_INT
    if b == "bool":
        b = WEAK_INT
    order = {"int": 0, "i32": 1, "i64": 2, "float": 3, "f32": 4, "f64": 5}
    lo, hi = sorted((a, b), key=order.__getitem__)
    if hi == WEAK_FLOAT:
        return WEAK_FLOAT
    if lo in (WEAK_INT,) or (lo == WEAK_FLOAT and hi in ("f32", "f64")):
        return hi
    if hi in ("f32", "f64") and lo in ("i32", "i64"):
        return "f64"  # NumPy: int32/int64 with float32 promotes to float64
    if lo == WEAK_FLOAT:  # weak float with a strong int
        return "f64"
    return hi


def concrete(dtype: str) -> str:
    """The storage type of a possibly weak type (a lone Python float is f64, an int i64)."""
    return {WEAK_FLOAT: "f64", WEAK_INT: "i64", "bool": "i32"}.get(dtype, dtype)


# --------------------------------------------------------------------------------------------
# Affine expressions


@dataclass(frozen=True)
class Aff:
    """An integer expression: ``var``, ``const``, ``+ - * // %``, ``neg``, ``min``, ``max``.

    ``*`` needs a constant on one side and ``//``/``%`` a positive constant divisor, so every
    Aff is quasi-affine (checked where Affs are built: ``Aff.__mul__`` and the frontends).
    """

    op: str
    args: tuple[Any, ...]

    # construction -------------------------------------------------------------------------
    @staticmethod
    def var(name: str) -> Aff:
        return Aff("var", (name,))

    @staticmethod
    def const(value: int) -> Aff:
        return Aff("const", (int(value),))

    @staticmethod
    def lift(x: Aff | int) -> Aff:
        if isinstance(x, Aff):
            return x
        if isinstance(x, bool) or not isinstance(x, int):
            return Aff.bad(f"`{x!r}` is not an integer or a sym expression")
        return Aff.const(x)

    @staticmethod
    def bad(reason: str) -> Aff:
        """A dimension written with arithmetic outside the affine subset (``N * M``): kept
        so that the frontend can report it with the annotation's location."""
        return Aff("bad", (reason,))

    def bad_reason(self) -> str | None:
        if self.op == "bad":
            return self.args[0]
        if self.op in ("var", "const"):
            return None
        for a in self.args:
            reason = a.bad_reason()
            if reason:
                return reason
        return None

    def __add__(self, other: Aff | int) -> Aff:
        other = Aff.lift(other)
        if other.is_const() and other.args[0] == 0:
            return self
        return Aff("+", (self, other))

    def __radd__(self, other: int) -> Aff:
        return Aff.lift(other) + self

    def __sub__(self, other: Aff | int) -> Aff:
        other = Aff.lift(other)
        if other.is_const() and other.args[0] == 0:
            return self
        return Aff("-", (self, other))

    def __rsub__(self, other: int) -> Aff:
        return Aff.lift(other) - self

    def __neg__(self) -> Aff:
        return Aff("neg", (self,))

    def __mul__(self, other: Aff | int) -> Aff:
        other = Aff.lift(other)
        if not (self.is_const() or other.is_const()):
            return Aff.bad(f"`{self} * {other}` is not affine (a product needs a constant)")
        return Aff("*", (self, other))

    def __rmul__(self, other: int) -> Aff:
        return Aff.lift(other) * self

    def __floordiv__(self, other: int) -> Aff:
        if not _good_divisor(other):
            return Aff.bad(f"`{self} // {other}`: // needs a positive integer constant divisor")
        return Aff("//", (self, Aff.const(other)))

    def __mod__(self, other: int) -> Aff:
        if not _good_divisor(other):
            return Aff.bad(f"`{self} % {other}`: % needs a positive integer constant divisor")
        return Aff("%", (self, Aff.const(other)))

    @staticmethod
    def min(*xs: Aff | int) -> Aff:
        return Aff("min", tuple(Aff.lift(x) for x in xs))

    @staticmethod
    def max(*xs: Aff | int) -> Aff:
        return Aff("max", tuple(Aff.lift(x) for x in xs))

    # queries ---------------------------------------------------------------------------------
    def is_const(self) -> bool:
        return self.op == "const"

    def vars(self) -> set[str]:
        if self.op == "var":
            return {self.args[0]}
        if self.op == "const":
            return set()
        out: set[str] = set()
        for a in self.args:
            out |= a.vars()
        return out

    def eval(self, env: Mapping[str, int]) -> int:
        op, a = self.op, self.args
        if op == "var":
            return int(env[a[0]])
        if op == "const":
            return a[0]
        vals = [x.eval(env) for x in a]
        return _EVAL[op](*vals)

    def subst(self, env: Mapping[str, Aff]) -> Aff:
        if self.op == "var":
            return env.get(self.args[0], self)
        if self.op == "const":
            return self
        return Aff(self.op, tuple(x.subst(env) for x in self.args))

    def linear(self) -> tuple[dict[str, int], int] | None:
        """``(coefficients, constant)`` when the expression is purely affine, else None."""
        op, a = self.op, self.args
        if op == "var":
            return {a[0]: 1}, 0
        if op == "const":
            return {}, a[0]
        if op in ("+", "-", "neg", "*"):
            parts = [x.linear() for x in a]
            if any(p is None for p in parts):
                return None
            if op == "neg":
                c, k = parts[0]
                return {v: -x for v, x in c.items()}, -k
            if op == "*":
                (c1, k1), (c2, k2) = parts
                if not c1:
                    c1, k1, c2, k2 = c2, k2, c1, k1
                return {v: x * k2 for v, x in c1.items()}, k1 * k2
            (c1, k1), (c2, k2) = parts
            sign = 1 if op == "+" else -1
            coef = dict(c1)
            for v, x in c2.items():
                coef[v] = coef.get(v, 0) + sign * x
            return {v: x for v, x in coef.items() if x}, k1 + sign * k2
        return None

    # printing --------------------------------------------------------------------------------
    def to_isl(self) -> str:
        return self._print(_ISL)

    def to_c(self) -> str:
        return self._print(_C)

    def to_py(self) -> str:
        return self._print(_PY)

    def __str__(self) -> str:
        return self._print(_PY)

    def text(self) -> str:
        """The expression as a user writes it, for messages: no outer parentheses."""
        printed = self._print(_PY)
        depth = 0
        for pos, ch in enumerate(printed):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and pos < len(printed) - 1:
                return printed  # the first parenthesis closes before the end
        return printed[1:-1] if printed.startswith("(") else printed

    def _print(self, table: Mapping[str, str]) -> str:
        op, a = self.op, self.args
        if op == "var":
            return a[0]
        if op == "const":
            return str(a[0]) if a[0] >= 0 else f"({a[0]})"
        if op == "bad":
            return "<invalid>"
        if op in ("min", "max"):
            parts = [x._print(table) for x in a]
            out = parts[0]
            for p in parts[1:]:
                out = table[op].format(out, p)
            return out
        return table[op].format(*(x._print(table) for x in a))


def _good_divisor(d: object) -> bool:
    return isinstance(d, int) and not isinstance(d, bool) and d > 0


_EVAL = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "//": lambda x, y: x // y,
    "%": lambda x, y: x % y,
    "neg": lambda x: -x,
    "min": min,
    "max": max,
}
_ISL = {"+": "({} + {})", "-": "({} - {})", "*": "({} * {})", "//": "floor(({}) / {})",
        "%": "(({}) mod {})", "neg": "(-{})", "min": "min({}, {})", "max": "max({}, {})"}
_C = {"+": "({} + {})", "-": "({} - {})", "*": "({} * {})", "//": "pd_floord({}, {})",
      "%": "pd_mod({}, {})", "neg": "(-{})", "min": "pd_min({}, {})", "max": "pd_max({}, {})"}
_PY = {"+": "({} + {})", "-": "({} - {})", "*": "({} * {})", "//": "({} // {})",
       "%": "({} % {})", "neg": "(-{})", "min": "min({}, {})", "max": "max({}, {})"}


# --------------------------------------------------------------------------------------------
# Affine conditions


@dataclass(frozen=True)
class Cond:
    """``op`` in ``< <= > >= == !=`` over two Affs, or ``and``/``or``/``not`` over Conds,
    or ``true``/``false``."""

    op: str
    args: tuple[Any, ...]

    def to_isl(self) -> str:
        op, a = self.op, self.args
        if op in ("true", "false"):
            return "1 = 1" if op == "true" else "1 = 0"
        if op in ("and", "or"):
            return "(" + f" {op} ".join(c.to_isl() for c in a) + ")"
        if op == "not":
            return f"(not {a[0].to_isl()})"
        isl_op = {"==": "="}.get(op, op)
        return f"({a[0].to_isl()} {isl_op} {a[1].to_isl()})"

    def _print(self, aff_print: str, and_: str, or_: str, not_: str, true: str) -> str:
        op, a = self.op, self.args
        if op in ("true", "false"):
            return true if op == "true" else f"{not_}{true}"
        if op in ("and", "or"):
            sep = and_ if op == "and" else or_
            return "(" + sep.join(c._print(aff_print, and_, or_, not_, true) for c in a) + ")"
        if op == "not":
            return f"({not_}{a[0]._print(aff_print, and_, or_, not_, true)})"
        return f"({getattr(a[0], aff_print)()} {op} {getattr(a[1], aff_print)()})"

    def to_c(self) -> str:
        return self._print("to_c", " && ", " || ", "!", "1")

    def to_py(self) -> str:
        return self._print("to_py", " and ", " or ", "not ", "True")

    def __str__(self) -> str:
        return self.to_py()

    def vars(self) -> set[str]:
        out: set[str] = set()
        for a in self.args:
            out |= a.vars()
        return out


# --------------------------------------------------------------------------------------------
# Statement-body expressions


@dataclass(frozen=True)
class Expr:
    """Base of body expressions; ``dtype`` is one of DTYPES, ``bool``, or a weak literal type."""

    dtype: str

    def children(self) -> tuple[Expr, ...]:
        return ()

    def walk(self) -> Iterator[Expr]:
        yield self
        for c in self.children():
            yield from c.walk()


@dataclass(frozen=True)
class Const(Expr):
    value: float | int


@dataclass(frozen=True)
class Index(Expr):
    """The value of an affine expression of loop variables and syms (an int64)."""

    aff: Aff


@dataclass(frozen=True)
class Load(Expr):
    array: str
    index: tuple[Aff, ...]


@dataclass(frozen=True)
class Scalar(Expr):
    """A local scalar (private to its scope's iteration) or a runtime value argument."""

    name: str


@dataclass(frozen=True)
class Bin(Expr):
    """``+ - * / // % min max pow``, comparisons ``< <= > >= == !=``, logical ``and or``."""

    op: str
    a: Expr
    b: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Un(Expr):
    """``neg`` or ``not``."""

    op: str
    a: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


MATH_FUNCS = ("exp", "log", "sqrt", "tanh", "erf", "abs", "sin", "cos", "floor", "ceil")


@dataclass(frozen=True)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True)
class Select(Expr):
    """``a if cond else b``; only the chosen branch is evaluated."""

    cond: Expr
    a: Expr
    b: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.a, self.b)


@dataclass(frozen=True)
class Cast(Expr):
    a: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)


ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max", "pow")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


def binary(op: str, a: Expr, b: Expr) -> Bin:
    """A typed binary node: arithmetic joins types, ``/`` of integers is f64 (Python)."""
    if op in CMP_OPS or op in ("and", "or"):
        return Bin("bool", op, a, b)
    dtype = join_dtypes(a.dtype, b.dtype)
    if op == "/" and not is_float(dtype):
        dtype = "f64"
    if op == "pow" and not is_float(dtype):
        dtype = "f64"
    return Bin(dtype, op, a, b)


# --------------------------------------------------------------------------------------------
# Arrays, statements, the loop tree


@dataclass(frozen=True)
class Array:
    """``kind``: in, out, inout, temp (tensors); local (private scalar); value (runtime scalar).

    A local scalar is modelled, for dependences, as an array indexed by ``scope``: the loop
    variables enclosing its first assignment (scalar expansion), so that iterations of those
    loops stay independent.
    """

    name: str
    dtype: str
    shape: tuple[Aff, ...] = ()
    kind: str = "in"
    scope: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_tensor(self) -> bool:
        return self.kind in ("in", "out", "inout", "temp")


@dataclass(frozen=True)
class Statement:
    """``target op= value`` executed for each point of ``domain`` (named ``name``).

    ``target`` is a Load (array element) or a Scalar (local scalar). ``iters`` are the
    enclosing loop variables, outermost first, which are the domain's dimensions.
    """

    name: str
    iters: tuple[str, ...]
    target: Load | Scalar
    op: str  # "=", "+=", "-=", "*=", "/="
    value: Expr
    domain: isl.Set = field(compare=False)
    loc: SourceLoc | None = field(default=None, compare=False)

    def replace(self, **kw: Any) -> Statement:
        return replace(self, **kw)

    def rhs(self) -> Expr:
        """The value stored, with a compound assignment expanded (``x += e`` -> ``x + e``)."""
        if self.op == "=":
            return self.value
        return binary(self.op[:-1], self.target, self.value)


@dataclass(frozen=True)
class Loop:
    """``for var in range(lo, hi, step)`` (``step`` a nonzero constant)."""

    var: str
    lo: Aff
    hi: Aff
    step: int
    body: tuple[Node, ...]


@dataclass(frozen=True)
class Guard:
    cond: Cond
    then: tuple[Node, ...]
    orelse: tuple[Node, ...] = ()


@dataclass(frozen=True)
class StmtRef:
    name: str


Node = Loop | Guard | StmtRef


def rename_statements(nodes: tuple[Node, ...], rename: Mapping[str, str]) -> tuple[Node, ...]:
    """The loop tree with the statements named in ``rename`` renamed."""
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Loop):
            out.append(replace(n, body=rename_statements(n.body, rename)))
        elif isinstance(n, Guard):
            out.append(replace(n, then=rename_statements(n.then, rename),
                               orelse=rename_statements(n.orelse, rename)))
        else:
            out.append(StmtRef(rename.get(n.name, n.name)))
    return tuple(out)


@dataclass(frozen=True)
class Scop:
    """A static control part: the unit every later stage works on.

    ``syms`` are the isl parameters in a fixed order (shape syms first, then index syms);
    ``args`` names the callable's arguments in declaration order (arrays and value scalars);
    ``index_syms`` are the syms no input shape carries, passed as keywords.
    """

    name: str
    syms: tuple[str, ...]
    context: isl.Set = field(compare=False)
    arrays: tuple[Array, ...]
    args: tuple[str, ...]
    index_syms: tuple[str, ...]
    statements: tuple[Statement, ...]
    tree: tuple[Node, ...]
    source_file: str = ""
    assume: str = ""
    user_names: tuple[tuple[str, str], ...] = ()  # (name here, the user's) where they differ

    def replace(self, **kw: Any) -> Scop:
        return replace(self, **kw)

    def user_name(self, name: str) -> str:
        """The user's spelling of a sym or array name (see ``scop/names.py``)."""
        for here, user in self.user_names:
            if here == name:
                return user
        return name

    # lookups -----------------------------------------------------------------------------------
    def array(self, name: str) -> Array:
        for a in self.arrays:
            if a.name == name:
                return a
        raise InternalError(f"no array {name!r} in scop {self.name}")

    def statement(self, name: str) -> Statement:
        for s in self.statements:
            if s.name == name:
                return s
        raise InternalError(f"no statement {name!r} in scop {self.name}")

    @property
    def arg_arrays(self) -> tuple[Array, ...]:
        return tuple(self.array(n) for n in self.args)

    @property
    def outputs(self) -> tuple[Array, ...]:
        return tuple(a for a in self.arg_arrays if a.kind == "out")

    def param_space_text(self) -> str:
        return "[" + ", ".join(self.syms) + "]"

    # isl views --------------------------------------------------------------------------------
    def domain(self) -> isl.UnionSet:
        """``{ S[i,...] : ... }`` for every statement."""
        out = isl.UnionSet.empty(self.context.get_space())
        for s in self.statements:
            out = out.union(isl.UnionSet.from_set(s.domain))
        return out

    def accesses(self, kind: str, expand_locals: bool = True) -> isl.UnionMap:
        """``{ S[i] -> A[f(i)] }`` reads or writes, each intersected with its domain.

        Local scalars are expanded over their scope (``{ S[i, j] -> acc[i] }``); with
        ``expand_locals=False`` they are single cells (``{ S[i, j] -> acc[] }``).
        """
        from .access import statement_accesses

        out = isl.UnionMap.empty(self.context.get_space())
        for s in self.statements:
            out = out.union(statement_accesses(self, s, kind, expand_locals))
        return out

    def original_schedule(self) -> isl.UnionMap:
        """``{ S[i,j] -> [b0, i, b1, j, b2, ...] }``: the program order (2d+1 form)."""
        from .access import original_schedule

        return original_schedule(self)

    def __str__(self) -> str:
        from .printer import format_scop

        return format_scop(self)
