"""Typed statement-body expressions (loads, arithmetic, math calls, selects, casts) and their
dtypes, with NumPy 2 promotion of weak Python literals."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace

from .affine import Aff

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


def reads_array(e: Expr, array: str) -> bool:
    """Whether ``e`` loads from ``array``."""
    return any(isinstance(x, Load) and x.array == array for x in e.walk())


def reads_scalar(e: Expr, name: str) -> bool:
    """Whether ``e`` reads the scalar ``name``."""
    return any(isinstance(x, Scalar) and x.name == name for x in e.walk())


def substitute_scalar(e: Expr, name: str, by: Expr) -> Expr:
    """``e`` with every read of the scalar ``name`` replaced by ``by`` (a cell, say)."""
    if isinstance(e, Scalar) and e.name == name:
        return by
    return map_children(e, lambda x: substitute_scalar(x, name, by))


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


def replace_subexpr(e: Expr, part: Expr, by: Expr) -> Expr:
    """``e`` with every sub-expression equal to ``part`` (``part`` itself included) ``by``."""
    if e == part:
        return by
    return map_children(e, lambda x: replace_subexpr(x, part, by))


def map_children(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """``e`` with ``fn`` applied to each of its direct sub-expressions (fields that hold an
    expression or a tuple of them); ``e`` itself where none changes. A rewrite recurses by
    calling itself from ``fn``."""
    changes = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if isinstance(value, Expr):
            changes[f.name] = fn(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], Expr):
            changes[f.name] = tuple(fn(x) for x in value)
    return replace(e, **changes) if changes else e
