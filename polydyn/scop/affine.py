"""Affine expressions and conditions over syms and loop variables: loop bounds, subscripts,
shapes and ``if`` guards. ``Aff`` is an integer (quasi-)affine expression, ``Cond`` an affine
condition; both print to isl text, C and Python."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
        return EVAL_OPS[op](*vals)

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

    def to_numpy(self) -> str:
        """Python source that also takes NumPy arrays for variables (the interpreter's
        lanes): ``min``/``max`` element by element."""
        return self._print(_NUMPY)

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


# the operators of Aff trees as Python functions (min/max of any number of values)
EVAL_OPS = {
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
_NUMPY = {**_PY, "min": "np.minimum({}, {})", "max": "np.maximum({}, {})"}


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

    def to_numpy(self) -> str:
        """Python source that also takes NumPy arrays for variables, giving an array of
        bools (``Aff.to_numpy``)."""
        return self._print("to_numpy", " & ", " | ", "np.logical_not", "(True)")

    def __str__(self) -> str:
        return self.to_py()

    def vars(self) -> set[str]:
        out: set[str] = set()
        for a in self.args:
            out |= a.vars()
        return out
