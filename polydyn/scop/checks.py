"""Whole-Scop checks done once at definition time: every access stays inside its array."""

from __future__ import annotations

import islpy as isl

from ..errors import FrontendError
from .exprs import Expr, Load, Select
from .ir import Scop, Statement


def _unguarded_loads(e: Expr) -> list[Load]:
    """Loads evaluated on every execution (not inside a select's branches)."""
    if isinstance(e, Load):
        return [e]
    if isinstance(e, Select):
        return _unguarded_loads(e.cond)
    out: list[Load] = []
    for c in e.children():
        out.extend(_unguarded_loads(c))
    return out


def array_bounds(scop: Scop, name: str) -> isl.Set:
    """``{ A[d0, d1] : 0 <= d0 < shape0 and ... }``."""
    arr = scop.array(name)
    dims = [f"d{k}" for k in range(arr.rank)]
    cons = [f"0 <= {d} < {s.to_isl()}" for d, s in zip(dims, arr.shape)]
    body = " and ".join(cons) if cons else "1 = 1"
    return isl.Set(f"{scop.param_space_text()} -> {{ {name}[{', '.join(dims)}] : {body} }}")


def check_bounds(scop: Scop, stmt: Statement) -> None:
    loads = _unguarded_loads(stmt.value)
    refs = [(stmt.target, "writes")] if isinstance(stmt.target, Load) else []
    if stmt.op != "=" and isinstance(stmt.target, Load):
        refs = [(stmt.target, "updates")]
    refs += [(ld, "reads") for ld in loads]
    for ref, verb in refs:
        idx = ", ".join(i.to_isl() for i in ref.index)
        text = (f"{scop.param_space_text()} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> "
                f"{ref.array}[{idx}] }}")
        access = isl.Map(text).intersect_domain(stmt.domain)
        outside = access.subtract_range(array_bounds(scop, ref.array))
        if outside.is_empty():
            continue
        point = outside.wrap().sample_point()
        arr = scop.array(ref.array)
        shape = ", ".join(d.text() for d in arr.shape)
        shown = f"{ref.array}[{', '.join(i.text() for i in ref.index)}]"
        raise FrontendError(
            f"`{shown}` {verb} outside `{ref.array}` (shape [{shape}]), for example at "
            f"{_describe(point, scop, stmt)}; guard the statement with an affine `if` or "
            "fix the loop bounds", stmt.loc)


def _describe(point: isl.Point, scop: Scop, stmt: Statement) -> str:
    parts = []
    for k, s in enumerate(scop.syms):
        parts.append(f"{s}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}")
    for k, v in enumerate(stmt.iters):
        parts.append(f"{v}={point.get_coordinate_val(isl.dim_type.set, k).to_python()}")
    return ", ".join(parts)


def check_scop(scop: Scop) -> None:
    for stmt in scop.statements:
        check_bounds(scop, stmt)
