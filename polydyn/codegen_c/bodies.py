"""Statement bodies as C: body expressions with C's types and math.h names, array subscripts
flattened over the array's shape, and one statement instance. ``BodyEmitter`` is a part of
``emit.CEmitter``."""

from __future__ import annotations

import math
from collections.abc import Iterable

import cgen

from ..errors import InternalError
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
from ..scop.ir import Statement

_MATH_F32 = {"exp": "pd_exp_f32", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "erf": "erff",
             "abs": "fabsf", "sin": "sinf", "cos": "cosf", "floor": "floorf", "ceil": "ceilf",
             "pow": "powf"}
_MATH_F64 = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "erf": "erf",
             "abs": "fabs", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
             "pow": "pow"}


class BodyEmitter:
    """The statement-body methods of ``emit.CEmitter``."""

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
        if (copy := self.copy_of(e)) is not None:
            cell = " + ".join(f"(({i.to_c()}) - ({o})) * {w}"
                              for i, o, w in zip(e.index, copy.offsets, copy.strides,
                                                 strict=True))
            return f"{copy.buf}[{cell}]"
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
        if e.op == "*":  # a factor that a packed copy's cells already hold
            for x, y in ((e.a, e.b), (e.b, e.a)):
                if isinstance(y, Load) and (copy := self.copy_of(y)) is not None and \
                        copy.scale == x:
                    return self.load(y)
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
        if table[e.fn].startswith("pd_"):
            self.helpers.add(table[e.fn])  # printed before the function (prelude.EXP_F32)
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
