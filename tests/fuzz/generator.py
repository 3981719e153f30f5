"""Random static control parts written in the polydyn DSL (SPEC.md section 1).

An operator is generated as a small tree (``Op``: arrays, loops, ifs, assignments, expression
trees) and rendered to source text; the shrinker edits the tree, so both live here.

Every access is in bounds by construction. Each loop variable carries what is known about
its range: a constant lower bound ``lo`` and an upper bound ``v <= (S + hi) // div - 1``
relative to one sym ``S`` (or to nothing: ``v <= hi - 1``). Each array dimension is
``(S + pad) // D`` (``pad`` may be negative: ``S - 2``; or a constant). A subscript raises
the pad its dimension needs:

- ``v + d`` (only when ``lo + d >= 0``) of a variable over the same sym needs
  ``hi + d * D`` when ``div == D`` (``(S + hi + d * D) // D = (S + hi) // D + d``), and
  ``hi + d`` when ``D == 1`` (``(S + hi) // div <= S + hi`` whenever v has a value);
- ``v // D`` of a plain variable (``div == 1``) needs ``hi - 1 + D``; ``v // 2`` into
  ``D == 1`` needs ``hi``; ``S + c - v`` needs ``c - lo + 1`` (both ``div == D == 1``);
- a constant ``c`` needs ``(S + pad) // D >= c + 1`` for the least ``S`` at which the
  statement runs at all (``Scope.least``: each enclosing variable has a value only when
  ``S >= div * (lo + 1) - hi``), so ``Y[0]`` inside ``for i in range(S - 2)`` fits
  ``f32[S - 2]``; ``S - e`` (when that least ``S >= e``) needs ``1 - e``, ``S`` needs 1.

The pads are fixed only once the body is generated (the largest of the initial pad and what
the subscripts need), so every subscript fits. A *strict* array (most of those created with
``S - 2`` or ``(S + 1) // 2`` extents) keeps its initial pads: it is only accessed where
every dimension has a subscript that fits (``_usable``), so it stays empty at small sizes.
Affine guards (``if v >= 1``, and ``a if v >= 1 else b`` around a load) tighten ``lo`` /
``hi`` inside the guarded branch (``v < S + k`` tightens only a variable with ``div == 1``).

Loads inside the branches of ``a if c else b`` are never bounds-checked by the frontend (only
the chosen branch runs), so the guards that protect them must be right here: only conditions
that imply the tightened bound are used for that.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from .exprs import Exprs, _clamp
from .tree import BACK_NAMES, Arr, Assign, Dim, Ex, If, Loop, Op, render, used_syms
from .tree import plus as _plus

__all__ = ["Arr", "Assign", "Dim", "Ex", "Generator", "If", "Loop", "Op", "generate", "render",
           "used_syms"]

SYM_NAMES = ("N", "M", "K", "L")
LOOP_NAMES = ("i", "j", "k", "p", "q", "r", "u", "w")

# ------------------------------------------------------------------------------------------
# Generation


@dataclass(frozen=True)
class Var:
    name: str
    sym: str | None
    lo: int  # v >= lo
    hi: int  # v <= (sym + hi) // div - 1 (v <= hi - 1 without a sym)
    div: int = 1

    def least(self) -> int:
        """The smallest value of the sym for which the variable has a value at all:
        ``(S + hi) // div - 1 >= lo``."""
        return self.div * (self.lo + 1) - self.hi


@dataclass
class Scope:
    """What a statement may use: the enclosing loop variables (outermost first) and the local
    scalars assigned so far in this iteration (name -> "f" or "i")."""

    vars: tuple[Var, ...] = ()
    scalars: dict[str, str] = field(default_factory=dict)
    depth: int = 0
    ifs: int = 0  # enclosing ifs

    def child(self, var: Var | None = None, vars_: tuple[Var, ...] = ()) -> Scope:
        extra = ((var,) if var else ()) + vars_
        return Scope(self.vars + extra, dict(self.scalars), self.depth + len(extra), self.ifs)

    def tightened(self, name: str, lo: int | None = None, hi: int | None = None) -> Scope:
        # ``v < S + k`` bounds v by the sym itself: it tightens no ``(S + hi) // div``
        vs = tuple(replace(v, lo=max(v.lo, lo) if lo is not None else v.lo,
                           hi=min(v.hi, hi) if hi is not None and v.div == 1 else v.hi)
                   if v.name == name else v for v in self.vars)
        return Scope(vs, dict(self.scalars), self.depth, self.ifs)

    def guarded(self, more: int = 1) -> Scope:
        return Scope(self.vars, dict(self.scalars), self.depth, self.ifs + more)

    def least(self, sym: str) -> int:
        """The smallest value of ``sym`` for which a statement of this scope runs."""
        return max([0] + [v.least() for v in self.vars if v.sym == sym])


class Generator(Exprs):
    """One random operator per ``generate()`` call, reproducible from the seed."""

    def __init__(self, seed: int, *, max_stmts: int = 6, max_depth: int = 3,
                 literal_steps: bool = False):
        self.rng = random.Random(seed)
        self.seed = seed
        self.max_stmts = max_stmts
        self.max_depth = max_depth
        self.literal_steps = literal_steps

    # --- top level ------------------------------------------------------------------------
    def generate(self, name: str | None = None) -> Op:
        rng = self.rng
        self.syms = tuple(rng.sample(SYM_NAMES, rng.choice((1, 1, 2, 2, 2, 3, 3, 4))))
        self.arrays: dict[str, Arr] = {}
        self.need: dict[tuple[str, int], int] = {}  # (array, dim) -> pad it needs
        self.strict: set[str] = set()  # arrays whose pads never rise (see _usable)
        self.stmts = 0
        self.scalar_count = 0
        self._make_arrays()
        body = self._block(Scope(), budget=self.max_stmts, top=True)
        arrays = self._final_arrays()
        op = Op(name or f"fz{self.seed}", self.syms, arrays, tuple(body), self._assume(),
                self.literal_steps)
        return op.replace(syms=tuple(used_syms(op)))

    def _make_arrays(self) -> None:
        rng = self.rng
        # One float dtype per operator: check_kernel's tolerance follows the output's dtype,
        # so an f32 intermediate stored into an f64 output (1 ulp of tanhf, say) would be a
        # false mismatch.
        self.fdtype = rng.choice(("f32", "f32", "f64"))
        n = rng.choice((1, 2, 2, 3, 3, 3, 4))
        kinds = ["out" if rng.random() < 0.5 else "inout"]
        for _ in range(n - 1):
            kinds.append(rng.choice(("in", "in", "in", "out", "inout", "temp")))
        rng.shuffle(kinds)
        names = iter(("A", "B", "C", "D", "E"))
        temps = iter(("T", "U", "V"))
        for kind in kinds:
            name = next(temps) if kind == "temp" else next(names)
            rank = rng.choice((1, 1, 2, 2, 2, 3))
            dims = []
            for _ in range(rank):
                r = rng.random()
                if r < 0.08:
                    dims.append(Dim(None, rng.choice((2, 3, 4))))
                elif r < 0.3:  # empty or of size 1 at small sizes: N - 2, (N + 1) // 2
                    div = rng.choice((1, 1, 2, 2, 3))
                    pad = rng.choice((-1, -2)) if div == 1 else rng.choice((-1, 0, 1, 2))
                    dims.append(Dim(rng.choice(self.syms), pad, div))
                else:
                    dims.append(Dim(rng.choice(self.syms), rng.choice((0, 0, 0, 1, 2))))
            dtype = self.fdtype if rng.random() < 0.75 else rng.choice(("i32", "i64"))
            self.arrays[name] = Arr(name, kind, dtype, tuple(dims))
            if any(d.pad < 0 or d.div > 1 for d in dims if d.sym) and rng.random() < 0.75:
                self.strict.add(name)  # its small extents stay as they are
        if rng.random() < 0.15:
            self.arrays["alpha"] = Arr("alpha", "value", self.fdtype)

    def _final_arrays(self) -> tuple[Arr, ...]:
        out = []
        for a in self.arrays.values():
            dims = tuple(d if d.sym is None else
                         replace(d, pad=max(d.pad, self.need.get((a.name, k), d.pad)))
                         for k, d in enumerate(a.dims))
            out.append(replace(a, dims=dims))
        # every shape sym must be carried by an argument, never by a temporary alone: keep
        # temps on syms that some argument carries
        return tuple(out)

    def _assume(self) -> str:
        rng = self.rng
        parts = []
        for s in self.syms:
            r = rng.random()
            if r < 0.25:
                parts.append(f"{s} >= 1")
            elif r < 0.35:
                parts.append(f"{s} >= 2")
        if len(self.syms) >= 2 and rng.random() < 0.1:
            a, b = rng.sample(self.syms, 2)
            parts.append(f"{a} <= {b}")
        if rng.random() < 0.05:
            parts.append(f"{rng.choice(self.syms)} mod 2 = 0")
        return " and ".join(parts)

    # --- blocks and statements ----------------------------------------------------------------
    def _block(self, scope: Scope, budget: int, top: bool = False) -> list:
        rng = self.rng
        scope = scope.guarded(0)  # a copy: scalars assigned here stay in this block
        items: list = []
        n = rng.choice((1, 1, 2, 2, 3)) if not top else rng.choice((1, 2, 2, 3, 3, 4))
        for _ in range(n):
            if self.stmts >= self.max_stmts:
                break
            r = rng.random()
            if top and r < 0.2:
                items.append(self._perfect_nest(scope))
            elif scope.depth < self.max_depth and (r < 0.45 or (top and r < 0.9)):
                items.append(self._loop(scope, budget))
            elif scope.vars and scope.ifs < 2 and r < 0.6:
                items.append(self._if(scope, budget))
            elif r < 0.72 and scope.vars:
                items.extend(self._scalar_stmts(scope, budget))
            else:
                items.append(self._array_stmt(scope))
        if not items:
            items.append(self._array_stmt(scope))
        return items

    def _perfect_nest(self, scope: Scope) -> Loop:
        """A perfect nest over the dimensions of a written array (in order or transposed),
        sometimes with an inner reduction loop: the shape the tiling policy applies to."""
        rng = self.rng
        arrays = [a for a in self._writable() if sum(d.sym is not None for d in a.dims) >= 2]
        arr = rng.choice(arrays or self._writable())
        # over the array's own extents (``range(N - 2)``, ``range((N + 1) // 2)``)
        dims = [d for d in arr.dims if d.sym is not None] or [Dim(rng.choice(self.syms), 0)]
        if rng.random() < 0.4:
            dims.reverse()
        if rng.random() < 0.5:
            dims.append(Dim(rng.choice(self.syms), 0))
        dims = dims[: self.max_depth]
        names = [n for n in LOOP_NAMES if n not in {v.name for v in scope.vars}]
        loop_vars = [Var(n, d.sym, 0, d.pad, d.div) for n, d in zip(names, dims, strict=False)]
        inner = scope
        for v in loop_vars:
            inner = inner.child(v)
        nodes: tuple = tuple(self._array_stmt(inner) for _ in range(rng.choice((1, 1, 2))))
        for v, d in reversed(list(zip(loop_vars, dims, strict=False))):
            nodes = (Loop(v.name, f"range({d.render()})", nodes),)
        return nodes[0]

    def _loop(self, scope: Scope, budget: int) -> Loop:
        rng = self.rng
        taken = {v.name for v in scope.vars}
        free = [n for n in LOOP_NAMES if n not in taken]
        if rng.random() < 0.08 and len(free) >= 2 and scope.depth + 2 <= self.max_depth + 1:
            a, b = free[:2]
            sa, sb = rng.choice(self.syms), rng.choice(self.syms)
            va, vb = Var(a, sa, 0, 0), Var(b, sb, 0, 0)
            inner = scope.child(vars_=(va, vb))
            return Loop(f"{a}, {b}", f"pd.grid({sa}, {sb})", tuple(self._block(inner, budget)))
        name = free[0]
        header, var = self._range(name, scope)
        return Loop(name, header, tuple(self._block(scope.child(var), budget)))

    def _range(self, name: str, scope: Scope) -> tuple[str, Var]:
        """A loop header over some sym, and what it guarantees about the variable."""
        rng = self.rng
        if rng.random() < 0.08:
            c = rng.choice((1, 2, 3))
            return f"range({c})", Var(name, None, 0, c)
        s = rng.choice(self.syms)
        outer = [v for v in scope.vars if v.sym == s]
        u = rng.choice(outer) if outer else None
        r = rng.random()
        a = rng.choice((0, 0, 0, 1, 1, 2))
        b = rng.choice((0, 0, 0, -1, -2, 1, 2))
        if u is not None and r < 0.3:
            return self._triangular(name, s, u, a, b)
        return self._plain_range(name, s, r, a, b)

    def _triangular(self, name: str, s: str, u: Var, a: int, b: int) -> tuple[str, Var]:
        """Bounds that depend on the outer variable ``u`` (over the same sym ``s``)."""
        rng = self.rng
        hi_txt = _plus(s, b)
        form = rng.randrange(5)
        if form == 0:
            return f"range({u.name}, {s})", Var(name, s, u.lo, 0)
        if form == 1:
            return f"range({u.name} + 1, {hi_txt})", Var(name, s, u.lo + 1, b)
        if form == 2:  # v <= u <= (S + hi) // div - 1
            return f"range({u.name} + 1)", Var(name, s, 0, u.hi, u.div)
        if form == 3:  # v <= u - 1 <= (S + hi - div) // div - 1
            return f"range({u.name})", Var(name, s, 0, u.hi - u.div, u.div)
        c1, c2 = rng.choice((1, 2)), rng.choice((1, 2, 3))
        return (f"range(max({a}, {u.name} - {c1}), min({hi_txt}, {u.name} + {c2}))",
                Var(name, s, a, b))

    def _plain_range(self, name: str, s: str, r: float, a: int, b: int) -> tuple[str, Var]:
        """Bounds in the sym ``s`` alone: offsets, steps, reverse, ``//``, ``min``/``max``."""
        rng = self.rng
        hi_txt = _plus(s, b)
        if r < 0.2:  # exactly over an extent of an array: N - 2, (N + 1) // 2, ...
            dims = [d for a in self.arrays.values() for d in a.dims if d.sym == s]
            if dims:
                d = rng.choices(dims, [4.0 if d.pad < 0 or d.div > 1 else 1.0 for d in dims])[0]
                return f"range({d.render()})", Var(name, s, 0, d.pad, d.div)
        if r < 0.45:
            return f"range({s})", Var(name, s, 0, 0)
        if r < 0.62:
            lo = "" if a == 0 else f"{a}, "
            return f"range({lo}{hi_txt})", Var(name, s, a, b)
        if r < 0.72:
            step = rng.choice((2, 3))
            return f"range({a}, {hi_txt}, {step})", Var(name, s, a, b)
        if r < 0.84:
            step = rng.choice((-1, -1, -1, -2))
            return (f"range({_plus(s, b - 1)}, {a - 1}, {BACK_NAMES[step]})",
                    Var(name, s, a, b))
        if r < 0.9:
            d = Dim(s, rng.choice((-1, 0, 1, 1, 2)), rng.choice((2, 2, 3)))
            return f"range({d.render()})", Var(name, s, 0, d.pad, d.div)
        if r < 0.95:
            return f"range(min({s}, {rng.choice((3, 5))}))", Var(name, s, 0, 0)
        return f"range(max({a}, {s} - 4), {s})", Var(name, s, a, 0)

    def _cond(self, scope: Scope) -> tuple[str, Scope]:
        """An affine condition and the scope its true branch may assume."""
        rng = self.rng
        v = rng.choice(scope.vars)
        r = rng.random()
        if r < 0.25:
            k = rng.choice((1, 1, 2))
            return f"{v.name} >= {k}", scope.tightened(v.name, lo=k)
        if r < 0.4 and v.sym is not None:
            k = rng.choice((-1, -2, 0))
            return f"{v.name} < {_plus(v.sym, k)}", scope.tightened(v.name, hi=k)
        if r < 0.55:
            m = rng.choice((2, 3))
            return f"({v.name} + {rng.randrange(m)}) % {m} == 0", scope
        if r < 0.7 and len(scope.vars) >= 2:
            w = rng.choice([x for x in scope.vars if x is not v])
            op = rng.choice(("<", "<=", "!=", "==", ">"))
            return f"{v.name} {op} {w.name}", scope
        if r < 0.8 and v.sym is not None:
            return f"{v.name} == {_plus(v.sym, -1)}", scope
        if r < 0.9 and v.sym is not None:
            k = rng.choice((1, 2))
            return (f"{k} <= {v.name} < {_plus(v.sym, -1)}",
                    scope.tightened(v.name, lo=k, hi=-1))
        if r < 0.95:
            return f"not {v.name} == 0", scope
        k = rng.choice((1, 2))
        return f"{v.name} < {k} or {v.name} > {k + 1}", scope

    def _if(self, scope: Scope, budget: int) -> If:
        scope = scope.guarded()
        cond, then_scope = self._cond(scope)
        then = tuple(self._block(then_scope, budget))
        orelse: tuple = ()
        r = self.rng.random()
        if r < 0.35:
            orelse = tuple(self._block(scope, budget))
        elif r < 0.45:
            orelse = (self._if(scope, budget),)
        return If(cond, then, orelse)

    def _scalar_stmts(self, scope: Scope, budget: int) -> list:
        """``s = ...`` followed by uses: an update in an inner loop, or a store of ``s``."""
        rng = self.rng
        kind = "i" if rng.random() < 0.15 else "f"
        name = f"s{self.scalar_count}"
        self.scalar_count += 1
        init = self._expr(scope, kind, 2) if rng.random() < 0.6 else \
            Ex(rng.choice(("0.0", "1.0", "-pd.inf")) if kind == "f" else "0", kind=kind)
        if init.fmt == "-pd.inf":
            kind = "m"  # a running maximum: only max() may update it
        self.stmts += 1
        out: list = [Assign(name, "=", init)]
        scope.scalars[name] = "f" if kind == "m" else kind
        if scope.depth < self.max_depth and rng.random() < 0.6:
            header, var = self._range(
                next(n for n in LOOP_NAMES if n not in {v.name for v in scope.vars}), scope)
            inner = scope.child(var)
            upd = self._scalar_update(name, kind, inner)
            body = [upd]
            if rng.random() < 0.3 and self.stmts < self.max_stmts:
                body.append(self._array_stmt(inner))
            out.append(Loop(var.name, header, tuple(body)))
        elif kind != "m":
            out.append(self._scalar_update(name, kind, scope))
        if self.stmts < self.max_stmts or rng.random() < 0.5:
            out.append(self._array_stmt(scope, scalar=name))
        return out

    def _scalar_update(self, name: str, kind: str, scope: Scope) -> Assign:
        rng = self.rng
        self.stmts += 1
        e = self._expr(scope, "f" if kind == "m" else kind, 2)
        if kind == "m" or rng.random() < 0.25:
            fn = "max" if kind == "m" or rng.random() < 0.5 else "min"
            return Assign(name, "=", Ex(f"{fn}({name}, {{}})", (e,), "f" if kind == "m" else kind))
        op = rng.choice(("+=", "+=", "-=")) if kind == "i" else rng.choice(("+=", "-=", "*="))
        if op == "*=":
            e = Ex("pd.tanh({})", (e,))
        if kind == "i":
            e = _clamp(e, 99)
        return Assign(name, op, e)

    def _writable(self) -> list[Arr]:
        return [a for a in self.arrays.values() if a.kind in ("out", "inout", "temp")]

    def _array_stmt(self, scope: Scope, scalar: str | None = None) -> Assign:
        rng = self.rng
        self.stmts += 1
        target = rng.choice(self._usable(self._writable(), scope))
        kind = "i" if target.is_int else "f"
        ref = self._access(target, scope)
        value = self._expr(scope, kind, rng.choice((1, 2, 2, 3)))
        if scalar is not None and kind == "i" and scope.scalars.get(scalar) != "i":
            scalar = None  # a float scalar truncated to an integer could round either way
        if scalar is not None:
            value = Ex("({} + " + scalar + ")", (value,), kind) if rng.random() < 0.7 else \
                Ex(scalar, kind=kind)
        ops = ("=", "=", "+=", "-=") if kind == "i" else ("=", "=", "+=", "-=", "*=")
        op = rng.choice(ops)
        if op == "*=":
            value = Ex("pd.tanh({})", (value,))
        if kind == "i":
            # integers stay far from overflow (C's signed overflow is undefined, NumPy wraps):
            # an update adds at most 99 per execution, a store is at most 9999
            value = _clamp(value, 9999 if op == "=" else 99)
        return Assign(ref, op, value)

    # --- accesses ---------------------------------------------------------------------------
    def _access(self, arr: Arr, scope: Scope) -> str:
        subs = [self._subscript(arr, k, d, scope) for k, d in enumerate(arr.dims)]
        return f"{arr.name}[{', '.join(subs)}]"

    def _subscript(self, arr: Arr, k: int, dim: Dim, scope: Scope) -> str:
        """One subscript of dimension ``k`` of ``arr``, legal for every value the enclosing
        loops and guards allow; records the pad it needs."""
        rng = self.rng
        cands: list[tuple[str, int, float]] = []  # text, pad needed, weight
        if dim.sym is None:
            c = dim.pad
            for v in scope.vars:
                if v.sym is None and v.lo >= 0 and v.hi <= c:
                    cands.append((v.name, 0, 4.0))
                cands.append((f"{v.name} % {c}", 0, 0.15))
            cands += [(str(x), 0, 0.5) for x in range(c)]
        else:
            cands += self._sym_subscripts(dim, scope, rng.choice((0, 0, 1)))
        if dim.sym is not None and (dim.pad < 0 or dim.div > 1):
            # keep an extent that can be empty or of size 1 so: only subscripts that fit, in
            # a strict array (``_usable`` picks it only where some fit); else mostly those
            now = max(dim.pad, self.need.get((arr.name, k), dim.pad))
            fit = [c for c in cands if c[1] <= now]
            cands = fit if arr.name in self.strict and fit else \
                [(t, p, w * 8.0 if p <= now else w) for t, p, w in cands]
        texts, pads, weights = zip(*cands, strict=True)
        pick = rng.choices(range(len(texts)), weights=weights)[0]
        if dim.sym is not None:
            key = (arr.name, k)
            self.need[key] = max(self.need.get(key, pads[pick]), pads[pick])
        return texts[pick]

    def _fits(self, arr: Arr, scope: Scope) -> bool:
        """Whether every dimension of ``arr`` has a subscript here that keeps its pad."""
        return all(any(p <= d.pad for _, p, _ in self._sym_subscripts(d, scope, 0))
                   for d in arr.dims if d.sym is not None)

    def _usable(self, arrs: list[Arr], scope: Scope) -> list[Arr]:
        """``arrs`` less the strict arrays that no subscript here fits (all if none is left)."""
        ok = [a for a in arrs if a.name not in self.strict or self._fits(a, scope)]
        return ok or arrs

    def _sym_subscripts(self, dim: Dim, scope: Scope, bump: int
                        ) -> list[tuple[str, int, float]]:
        """Subscripts of a dimension ``(S + pad) // D``: (text, the pad it needs, weight).
        A variable ``lo <= v <= (S + hi) // dv - 1`` gives ``v + d`` (when ``lo + d >= 0``):
        with ``dv == D`` it needs ``pad >= hi + d * D``; with ``D == 1`` it needs ``hi + d``
        (``(S + hi) // dv <= S + hi`` whenever v has a value); a plain variable gives
        ``v // D`` on a divided dimension (needs ``hi - 1 + D``). A constant ``c`` needs
        ``(S + pad) // D >= c + 1`` for the least S at which the statement runs."""
        s, big = dim.sym, dim.div
        cands: list[tuple[str, int, float]] = []
        for v in scope.vars:
            if v.sym != s:
                continue
            if v.div == big or big == 1:
                step = big if v.div == big else 1
                for d, w in ((0, 6.0), (-1, 2.0), (1, 2.0), (-2, 0.5), (2, 0.5)):
                    if v.lo + d >= 0:
                        cands.append((_plus(v.name, d), v.hi + d * step, w))
            elif v.div == 1 and v.lo >= 0:
                cands.append((f"{v.name} // {big}", v.hi - 1 + big, 3.0))
            if big == 1 and v.lo >= 0:
                cands.append((f"{v.name} // 2", v.hi, 0.7))  # v // 2 <= v
            if big == 1 and v.div == 1 and v.lo >= 0:
                c = max(v.hi - 1, 0) + bump
                # S + c - v >= S + c - (S + hi - 1) >= 0 and <= S + c - lo
                cands.append((f"{_plus(s, c)} - {v.name}", c - v.lo + 1, 0.8))
        least = scope.least(s)
        cands += [("0", big - least, 0.4), ("1", 2 * big - least, 0.1)]
        if big == 1:
            cands.append((s, 1, 0.2))
            # the last cells: S - e needs S >= e, and pad >= 1 - e
            cands += [(_plus(s, -e), 1 - e, 0.3) for e in (1, 2) if least >= e]
        return cands


def generate(seed: int, **kw) -> Op:
    """The operator of ``seed`` (the same tree for the same seed and options)."""
    return Generator(seed, **kw).generate()
