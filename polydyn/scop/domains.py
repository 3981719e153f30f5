"""Statement domains as the Python and C frontends build them: a pending statement (its loops
and conditions, before every sym is known), the isl text of loops and guards, and the domain
of a statement from them."""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..errors import SourceLoc
from .affine import Cond
from .exprs import Expr, Load, Scalar
from .ir import Loop


@dataclass
class Pending:
    """A statement before its domain is built (all syms must be known first); shared by the
    Python and C frontends."""

    name: str
    loops: tuple[Loop, ...]
    conds: tuple[tuple[Cond, bool], ...]
    target: Load | Scalar
    op: str
    value: Expr
    loc: SourceLoc


def loop_constraints(loop: Loop) -> str:
    """isl text for ``var in range(lo, hi, step)``."""
    v, lo, hi = loop.var, loop.lo.to_isl(), loop.hi.to_isl()
    if loop.step > 0:
        text = f"{lo} <= {v} < {hi}"
    else:
        text = f"{hi} < {v} <= {lo}"
    if abs(loop.step) != 1:
        text += f" and exists (e_{v}: {v} = {lo} + {loop.step} * e_{v})"
    return text


def make_domain(params: str, name: str, iters: tuple[str, ...], constraints: list[str],
                context: isl.Set) -> isl.Set:
    """``params -> { name[iters] : constraints }`` intersected with the context."""
    body = " and ".join(f"({c})" for c in constraints) if constraints else ""
    text = f"{params} -> {{ {name}[{', '.join(iters)}] {': ' + body if body else ''} }}"
    dom = isl.Set(text)
    return dom.intersect_params(context).coalesce()


def conds_text(conds: list[tuple[Cond, bool]]) -> list[str]:
    return [c.to_isl() if positive else f"not {c.to_isl()}" for c, positive in conds]
