"""Type inference for body expressions: array element types, local scalar types (a fixpoint
over their assignments, NumPy 2 promotion with weak Python literals), result types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

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
    concrete,
    join_dtypes,
)
from .ir import Array, Statement


def retype(e: Expr, dtypes: Mapping[str, str]) -> Expr:
    """Rebuild ``e`` with every node's dtype recomputed bottom-up."""
    if isinstance(e, Const | Index):
        return e
    if isinstance(e, Cast):
        return replace(e, a=retype(e.a, dtypes))
    if isinstance(e, Load):
        return replace(e, dtype=dtypes[e.array])
    if isinstance(e, Scalar):
        t = dtypes.get(e.name, "?")
        return replace(e, dtype=WEAK_INT if t == "?" else t)
    if isinstance(e, Bin):
        return binary(e.op, retype(e.a, dtypes), retype(e.b, dtypes))
    if isinstance(e, Un):
        a = retype(e.a, dtypes)
        return Un("bool" if e.op == "not" else a.dtype, e.op, a)
    if isinstance(e, Call):
        args = tuple(retype(a, dtypes) for a in e.args)
        t = args[0].dtype
        if e.fn == "abs" and t not in ("f32", "f64", "float"):
            return Call(concrete(t), e.fn, args)
        return Call("f32" if t == "f32" else "f64", e.fn, args)
    if isinstance(e, Select):
        c, a, b = (retype(x, dtypes) for x in (e.cond, e.a, e.b))
        return Select(join_dtypes(a.dtype, b.dtype), c, a, b)
    raise TypeError(f"unknown expression node {e!r}")


def retype_statements(arrays: dict[str, Array], stmts: list[Statement]
                      ) -> tuple[dict[str, Array], list[Statement]]:
    """Fix local scalar types (join of everything assigned to them), then retype bodies."""
    dtypes = {n: a.dtype for n, a in arrays.items()}
    locals_ = [n for n, a in arrays.items() if a.kind == "local"]
    for _ in range(len(locals_) + 2):
        changed = False
        for s in stmts:
            if not isinstance(s.target, Scalar):
                continue
            t = retype(s.rhs() if s.op == "=" else s.value, dtypes).dtype
            old = dtypes[s.target.name]
            new = t if old == "?" else join_dtypes(old, t)
            if new != old:
                dtypes[s.target.name] = new
                changed = True
        if not changed:
            break
    for n in locals_:
        dtypes[n] = concrete(dtypes[n])
        arrays[n] = replace(arrays[n], dtype=dtypes[n])
    out = []
    for s in stmts:
        target = retype(s.target, dtypes)
        out.append(s.replace(target=target, value=retype(s.value, dtypes)))
    return arrays, out
