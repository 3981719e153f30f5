"""Python expressions -> Scop IR: affine expressions and conditions (bounds, subscripts,
``if``s), typed statement-body values and name resolution against the operator's globals,
for the Python frontend (``from_python.py``). Anything outside the subset raises a located
FrontendError."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..errors import FrontendError, SourceLoc
from . import dsl
from .affine import Aff, Cond
from .exprs import (
    WEAK_FLOAT,
    WEAK_INT,
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
)
from .ir import Array, Loop

_BIN_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "pow"}
_CMP_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!="}


@dataclass
class ScalarInfo:
    """A local scalar of the body: its unique name and the loops of its first assignment."""

    name: str  # unique internal name
    depth: int  # loop depth of its first assignment
    scope: tuple[str, ...]


@dataclass
class Ctx:
    """Where a statement or expression is: its enclosing loops, guards and assigned names."""

    loops: tuple[Loop, ...] = ()
    conds: tuple[tuple[Cond, bool], ...] = ()
    assigned: set[str] = field(default_factory=set)


class PyExprs:
    """The expression half of the Python frontend; ``PythonFrontend`` sets the attributes below
    and adds the statements."""

    fn: Callable[..., Any]
    file: str
    first_line: int
    lines: list[str]
    indent: int
    ns: dict[str, Any]
    syms: dict[str, None]
    arrays: dict[str, Array]
    index_syms: list[str]
    loop_vars: set[str]
    scalars: dict[str, ScalarInfo]

    # --- locations and errors -------------------------------------------------------------
    def loc(self, node: ast.AST) -> SourceLoc:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None)
        end = end_col + self.indent if end_col is not None and end_line == line else None
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceLoc(self.file, self.first_line + line - 1, col, text, end)

    def error(self, node: ast.AST, message: str) -> NoReturn:
        raise FrontendError(message, self.loc(node)) from None

    def src(self, node: ast.AST) -> str:
        return ast.unparse(node)


    # --- affine expressions ------------------------------------------------------------------
    def _aff(self, node: ast.expr, ctx: Ctx, what: str = "expression",
             within: ast.expr | None = None) -> Aff:
        try:
            return self._aff_rec(node, ctx)
        except _NotAffine as exc:
            bad = exc.node or node
            where = f" in `{self.src(within)}`" if within is not None else ""
            self.error(bad, f"non-affine {what} `{self.src(node)}`{where}: {exc.reason}")

    def _aff_rec(self, node: ast.expr, ctx: Ctx) -> Aff:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int):
                raise _NotAffine(node, "only integer constants may appear here")
            return Aff.const(node.value)
        if isinstance(node, ast.Name | ast.Attribute):
            if isinstance(node, ast.Name):
                name = node.id
                if name in self.loop_vars:
                    return Aff.var(name)
                if name in self.index_syms:
                    return Aff.var(name)
                if name in self.scalars:
                    raise _NotAffine(node, f"`{name}` is a local scalar (a value); bounds and "
                                           "subscripts must be affine in loop variables and syms")
                if name in self.arrays:
                    raise _NotAffine(node, f"`{name}` is an array")
            obj = self._resolve(node)
            if isinstance(obj, dsl.Sym):
                self.syms.setdefault(obj.name, None)
                return Aff.var(obj.name)
            if isinstance(obj, int) and not isinstance(obj, bool):
                return Aff.const(obj)
            raise _NotAffine(node, f"`{self.src(node)}` is not a loop variable, sym or integer")
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return -self._aff_rec(node.operand, ctx)
            if isinstance(node.op, ast.UAdd):
                return self._aff_rec(node.operand, ctx)
        if isinstance(node, ast.BinOp):
            a, b = self._aff_rec(node.left, ctx), self._aff_rec(node.right, ctx)
            op = type(node.op)
            if op is ast.Add:
                return a + b
            if op is ast.Sub:
                return a - b
            if op is ast.Mult:
                if not (a.is_const() or b.is_const()):
                    raise _NotAffine(node, "subscripts and bounds must be affine in loop "
                                           "variables and syms (a product needs a constant)")
                return a * b
            if op in (ast.FloorDiv, ast.Mod):
                if not b.is_const() or b.args[0] <= 0:
                    raise _NotAffine(node, "`//` and `%` need a positive integer constant "
                                           "divisor")
                return a // b.args[0] if op is ast.FloorDiv else a % b.args[0]
        if isinstance(node, ast.Call) and not node.keywords:
            fn = self._resolve_quiet(node.func)
            if fn in (min, max) and len(node.args) >= 2:
                args = [self._aff_rec(x, ctx) for x in node.args]
                return Aff.min(*args) if fn is min else Aff.max(*args)
        if isinstance(node, ast.Subscript):
            raise _NotAffine(node, "an array element is a value, not an affine expression "
                                   "(indirect access is not supported)")
        raise _NotAffine(node, "expected an affine expression of loop variables and syms")

    def _int_const(self, node: ast.expr) -> int:
        try:
            aff = self._aff_rec(node, Ctx())
        except _NotAffine:
            aff = None
        if aff is None or aff.vars():
            self.error(node, "range() step must be an integer constant")
        return aff.eval({})

    def _cond(self, node: ast.expr, ctx: Ctx) -> Cond:
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return Cond(op, tuple(self._cond(v, ctx) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Cond("not", (self._cond(node.operand, ctx),))
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return Cond("true" if node.value else "false", ())
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            affs = []
            for p in parts:
                try:
                    affs.append(self._aff_rec(p, ctx))
                except _NotAffine as exc:
                    self.error(exc.node or p, f"`if {self.src(node)}`: conditions must be affine "
                                              "in loop variables and syms; to choose a value "
                                              "from array data write `a if c else b`")
            conds = []
            for i, cmp in enumerate(node.ops):
                op = _CMP_OPS.get(type(cmp))
                if op is None:
                    self.error(node, f"unsupported comparison `{self.src(node)}`")
                conds.append(Cond(op, (affs[i], affs[i + 1])))
            return conds[0] if len(conds) == 1 else Cond("and", tuple(conds))
        self.error(node, f"`if {self.src(node)}`: conditions must be affine comparisons of "
                         "loop variables and syms (==, !=, <, <=, >, >=, and, or, not); to "
                         "choose a value from array data write `a if c else b`")

    # --- value expressions -------------------------------------------------------------------
    def _load(self, node: ast.Subscript, ctx: Ctx) -> Load:
        if not isinstance(node.value, ast.Name) or node.value.id not in self.arrays \
                or not self.arrays[node.value.id].is_tensor:
            self.error(node.value, f"`{self.src(node.value)}` is not an array of this operator")
        arr = self.arrays[node.value.id]
        idx = node.slice
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if any(isinstance(e, ast.Slice) for e in elts):
            self.error(node, "slices are not supported; index every dimension with an "
                             "affine expression")
        if len(elts) != arr.rank:
            self.error(node, f"`{arr.name}` has {arr.rank} dimension(s), but "
                             f"`{self.src(node)}` gives {len(elts)} subscript(s)")
        index = tuple(self._aff(e, ctx, what="subscript", within=node) for e in elts)
        return Load(arr.dtype, arr.name, index)

    def _value(self, node: ast.expr, ctx: Ctx) -> Expr:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return Const("bool", int(v))
            if isinstance(v, int):
                return Const(WEAK_INT, v)
            if isinstance(v, float):
                return Const(WEAK_FLOAT, v)
            self.error(node, f"unsupported constant {v!r}")
        if isinstance(node, ast.Subscript):
            return self._load(node, ctx)
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.loop_vars or name in self.index_syms:
                return Index(WEAK_INT, Aff.var(name))
            if name in self.scalars:
                info = self.scalars[name]
                if info.name not in ctx.assigned:
                    self.error(node, f"local scalar `{name}` is read before it is assigned in "
                                     "this iteration")
                return Scalar("?", info.name)
            if name in self.arrays:
                arr = self.arrays[name]
                if arr.kind == "value":
                    return Scalar(arr.dtype, name)
                if arr.kind == "local":
                    self.error(node, f"local scalar `{name}` is read outside the loop iteration "
                                     "that assigns it (a local scalar is private to that "
                                     "iteration); store it in an array to use it later")
                self.error(node, f"`{name}` is an array; index it")
        if isinstance(node, ast.Name | ast.Attribute):
            obj = self._resolve(node)
            return self._object_value(node, obj)
        if isinstance(node, ast.BinOp):
            op = _BIN_OPS.get(type(node.op))
            if op is None:
                self.error(node, f"operator `{type(node.op).__name__}` is not supported")
            a, b = self._value(node.left, ctx), self._value(node.right, ctx)
            if op in ("//", "%", "/") and isinstance(b, Const) and b.value == 0:
                self.error(node, f"division by zero in `{self.src(node)}`")
            if isinstance(a, Index | Const) and isinstance(b, Index | Const) and op != "/":
                folded = self._fold_index(node, ctx)
                if folded is not None:
                    return folded
            return binary(op, a, b)
        if isinstance(node, ast.UnaryOp):
            a = self._value(node.operand, ctx)
            if isinstance(node.op, ast.USub):
                return Un(a.dtype, "neg", a)
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.Not):
                return Un("bool", "not", a)
            self.error(node, "bitwise operators are not supported")
        if isinstance(node, ast.Compare):
            parts = [self._value(p, ctx) for p in [node.left, *node.comparators]]
            out: Expr | None = None
            for i, cmp in enumerate(node.ops):
                op = _CMP_OPS.get(type(cmp))
                if op is None:
                    self.error(node, f"unsupported comparison in `{self.src(node)}`")
                c = binary(op, parts[i], parts[i + 1])
                out = c if out is None else binary("and", out, c)
            return out
        if isinstance(node, ast.BoolOp):
            vals = [self._value(v, ctx) for v in node.values]
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = vals[0]
            for v in vals[1:]:
                out = binary(op, out, v)
            return out
        if isinstance(node, ast.IfExp):
            c = self._value(node.test, ctx)
            a, b = self._value(node.body, ctx), self._value(node.orelse, ctx)
            return Select("?", c, a, b)
        if isinstance(node, ast.Call):
            return self._call(node, ctx)
        self.error(node, f"`{self.src(node)}` is not supported in operator expressions")

    def _fold_index(self, node: ast.expr, ctx: Ctx) -> Expr | None:
        try:
            return Index(WEAK_INT, self._aff_rec(node, ctx))
        except _NotAffine:
            return None

    def _object_value(self, node: ast.expr, obj: Any) -> Expr:
        if isinstance(obj, dsl.Sym):
            self.syms.setdefault(obj.name, None)
            return Index(WEAK_INT, Aff.var(obj.name))
        if isinstance(obj, bool):
            return Const("bool", int(obj))
        if isinstance(obj, int):
            return Const(WEAK_INT, obj)
        if isinstance(obj, float):
            return Const(WEAK_FLOAT, obj)
        self.error(node, f"`{self.src(node)}` is not a value usable in an operator "
                         "(expected a loop variable, sym, local scalar, array element or "
                         "number)")

    def _call(self, node: ast.Call, ctx: Ctx) -> Expr:
        if node.keywords:
            self.error(node, f"keyword arguments are not supported in `{self.src(node)}`")
        fn = self._resolve(node.func)
        name = _math_name(fn)
        is_cast = isinstance(fn, dsl.DType) or fn in (float, int)
        if name is None and not is_cast and fn not in (min, max):
            self.error(node.func, f"call to unknown function `{self.src(node.func)}` in "
                                  f"`{self.src(node)}`; operators may call {dsl.ALLOWED_CALLS}")
        args = [self._value(a, ctx) for a in node.args]
        if fn in (min, max):
            if len(args) < 2:
                self.error(node, f"{fn.__name__}() needs at least two arguments here")
            if all(isinstance(a, Index | Const) for a in args):
                folded = self._fold_index(node, ctx)
                if folded is not None:
                    return folded
            out = args[0]
            for a in args[1:]:
                out = binary(fn.__name__, out, a)
            return out
        if is_cast:
            if len(args) != 1:
                self.error(node, "a cast takes one argument")
            dtype = fn.name if isinstance(fn, dsl.DType) else ("f64" if fn is float else "i64")
            return Cast(dtype, args[0])
        if len(args) != 1:
            self.error(node, f"{name}() takes one argument")
        return Call("?", name, tuple(args))

    # --- name resolution ---------------------------------------------------------------------
    def _resolve(self, node: ast.expr) -> Any:
        try:
            return self._resolve_quiet(node, strict=True)
        except _Unresolved as exc:
            self.error(node, str(exc))

    def _resolve_quiet(self, node: ast.expr, strict: bool = False) -> Any:
        if isinstance(node, ast.Name):
            if node.id in self.ns:
                return self.ns[node.id]
            if strict:
                raise _Unresolved(f"unknown name `{node.id}`")
            return None
        if isinstance(node, ast.Attribute):
            base = self._resolve_quiet(node.value, strict)
            if base is None:
                return None
            if not hasattr(base, node.attr):
                if strict:
                    raise _Unresolved(f"unknown name `{ast.unparse(node)}`")
                return None
            return getattr(base, node.attr)
        if strict:
            raise _Unresolved(f"`{ast.unparse(node)}` is not a name")
        return None


class _NotAffine(Exception):
    def __init__(self, node: ast.AST | None, reason: str):
        self.node, self.reason = node, reason


class _Unresolved(Exception):
    pass


def _math_name(fn: Any) -> str | None:
    try:
        return dsl.MATH_OBJECTS.get(fn)
    except TypeError:  # unhashable object
        return None


