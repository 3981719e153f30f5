"""Random expressions of the fuzzer's operators (loads, arithmetic, calls, selects), as a mixin
of ``generator.Generator``: the methods use its random source, arrays, syms and accesses.

Values stay tame so that rounding never turns into a mismatch: divisors are kept away from
zero, ``%`` and ``**`` apply only to exact values, products have one exact factor, integers
are clamped far from overflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tree import Arr, Ex

if TYPE_CHECKING:
    from .generator import Scope


class Exprs:
    """The expression half of ``Generator`` (it provides ``rng``, ``arrays``, ``syms``,
    ``fdtype``, ``_access``, ``_usable`` and ``_cond``)."""

    def _readable(self, kind: str) -> list[Arr]:
        arrs = [a for a in self.arrays.values() if a.kind != "value"]
        same = [a for a in arrs if a.is_int == (kind == "i")]
        return same if kind == "i" else arrs

    def _load(self, scope: Scope, kind: str) -> Ex:
        rng = self.rng
        cands = self._usable(self._readable(kind), scope)
        if not cands:
            return Ex(str(rng.choice((1, 2, 3))), kind="i")
        # prefer arrays that are written, so that reads create dependences
        weights = [3.0 if a.kind in ("out", "inout", "temp") else 1.0 for a in cands]
        arr = rng.choices(cands, weights=weights)[0]
        return Ex(self._access(arr, scope), kind="i" if arr.is_int else "f")

    def _leaf(self, scope: Scope, kind: str) -> Ex:
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            return self._load(scope, kind)
        scalars = [n for n, k in scope.scalars.items() if k == kind or kind == "f"]
        if r < 0.7 and scalars:
            name = rng.choice(scalars)
            return Ex(name, kind=scope.scalars[name])
        if r < 0.82 and scope.vars:
            v = rng.choice(scope.vars).name
            if kind == "i":
                return Ex(v, kind="i")
            forms = (f"({v} * 0.25)", f"pd.{self.fdtype}({v})", f"({v} - 2.5)")
            return Ex(rng.choice(forms), kind="f")
        if r < 0.86 and self.syms:
            s = rng.choice(self.syms)
            return Ex(s if kind == "i" else f"({s} * 0.5)", kind=kind)
        if r < 0.9 and "alpha" in self.arrays and kind == "f":
            return Ex("alpha")
        if kind == "i":
            return Ex(str(rng.choice((0, 1, 2, 3, -1))), kind="i")
        return Ex(rng.choice(("0.5", "2.0", "1.0", "-1.5", "0.25", "3.0")))

    def _expr(self, scope: Scope, kind: str, depth: int) -> Ex:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self._leaf(scope, kind)
        a = self._expr(scope, kind, depth - 1)
        b = self._expr(scope, kind, depth - 1)
        r = rng.random()
        if kind == "i":
            return self._int_op(scope, a, b, r, depth)
        if r < 0.65:
            return self._float_arith(scope, a, b, r)
        return self._float_call(scope, a, r, depth)

    def _int_op(self, scope: Scope, a: Ex, b: Ex, r: float, depth: int) -> Ex:
        rng = self.rng
        if r < 0.45:
            return Ex("({} " + rng.choice(("+", "-", "+")) + " {})", (a, b), "i")
        if r < 0.55:
            return Ex("({} * " + str(rng.choice((2, 3, -1))) + ")", (a,), "i")
        if r < 0.68:
            return Ex(rng.choice(("min", "max")) + "({}, {})", (a, b), "i")
        if r < 0.76:
            op = rng.choice(("//", "%"))
            return Ex("({} " + op + f" {rng.choice((2, 3))})", (a,), "i")
        if r < 0.8:
            return Ex("abs({})", (a,), "i")
        if r < 0.9:
            return self._select(scope, "i", depth)
        return Ex("({} + {})", (a, b), "i")

    def _float_arith(self, scope: Scope, a: Ex, b: Ex, r: float) -> Ex:
        rng = self.rng
        if r < 0.3:
            return Ex("({} " + rng.choice(("+", "-")) + " {})", (a, b))
        if r < 0.45:
            # one factor exact (an input, a constant, an index): a recurrence x = x * x would
            # double the rounding error at each step and outgrow the tolerance
            return Ex("({} * {})", (a, self._exact_leaf(scope)))
        if r < 0.5:
            return Ex("({} / (2.0 + abs({})))", (a, b))
        if r < 0.55:
            return Ex("({} / " + rng.choice(("3.0", "4.0", "-2.0")) + ")", (a,))
        return Ex(rng.choice(("min", "max")) + "({}, {})", (a, b))

    def _float_call(self, scope: Scope, a: Ex, r: float, depth: int) -> Ex:
        rng = self.rng
        if r < 0.72:
            return Ex(rng.choice(("pd.exp(-abs({}))", "pd.tanh({})", "pd.sqrt(abs({}))",
                                  "pd.log(1.0 + abs({}))", "abs({})", "pd.erf({})")), (a,))
        if r < 0.76:
            inputs = self._usable(
                [x for x in self.arrays.values() if x.kind == "in" and not x.is_int], scope)
            if inputs:
                return Ex("pd.exp({})", (Ex(self._access(rng.choice(inputs), scope)),))
            return Ex("pd.exp(-abs({}))", (a,))
        if r < 0.9:
            return self._select(scope, "f", depth)
        if r < 0.94:
            ints = self._usable(
                [x for x in self.arrays.values() if x.kind != "value" and x.is_int], scope)
            if ints:
                ld = Ex(self._access(rng.choice(ints), scope), kind="i")
                return Ex("({} * pd." + self.fdtype + "({}))", (a, ld))
        # `%` and `**` only on exact values: `%` is discontinuous and `x = 3 * (x % 1.5)` is
        # chaotic, either would turn one ulp of difference (tanhf, FMA) into a mismatch
        if r < 0.97:
            return Ex("({} % 1.5)", (self._exact_leaf(scope),))
        return Ex("({} ** 2)", (self._exact_leaf(scope),))

    def _exact_leaf(self, scope: Scope) -> Ex:
        """A value both sides compute exactly: an input element, a constant, an index."""
        rng = self.rng
        inputs = self._usable(
            [x for x in self.arrays.values() if x.kind == "in" and not x.is_int], scope)
        r = rng.random()
        if r < 0.5 and inputs:
            return Ex(self._access(rng.choice(inputs), scope))
        if r < 0.75 and scope.vars:
            return Ex(f"({rng.choice(scope.vars).name} * 0.25)")
        if r < 0.85 and "alpha" in self.arrays:
            return Ex("alpha")
        return Ex(rng.choice(("0.5", "2.0", "-1.5", "3.0")))

    def _select(self, scope: Scope, kind: str, depth: int) -> Ex:
        """``a if c else b``: on array data (inputs only: their values are exact), or on an
        affine condition that guards an access outside the loop's plain range."""
        rng = self.rng
        r = rng.random()
        if r < 0.5 and scope.vars:
            cond, then_scope = self._cond(scope)
            a = self._expr(then_scope, kind, depth - 1)
            b = self._expr(scope, kind, depth - 1)
            return Ex("({} if " + cond + " else {})", (a, b), kind)
        inputs = self._usable([x for x in self.arrays.values() if x.kind == "in"], scope)
        a = self._expr(scope, kind, depth - 1)
        b = self._expr(scope, kind, depth - 1)
        if not inputs:
            return Ex("({} if {} > 0 else {})", (a, Ex(str(rng.choice((0, 1))), kind="i"), b),
                      kind)
        x = rng.choice(inputs)
        ld = Ex(self._access(x, scope), kind="i" if x.is_int else "f")
        thr = "0" if x.is_int else rng.choice(("0.0", "0.5", "-0.25"))
        cmp = rng.choice((">", "<", ">=", "<="))
        return Ex("({} if {} " + cmp + " " + thr + " else {})", (a, ld, b), kind)


def _clamp(e: Ex, bound: int) -> Ex:
    return Ex(f"max(-{bound}, min({bound}, {{}}))", (e,), e.kind)
