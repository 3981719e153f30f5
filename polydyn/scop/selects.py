"""Conditional expressions that are a max or a min written out:

    a if a > b else b   ->  max(b, a)        a if a < b else b   ->  min(b, a)
    b if a > b else a   ->  min(a, b)        b if a < b else a   ->  max(a, b)

(``b < a`` as ``a > b``). Python's ``max(x, y)`` is ``y if y > x else x`` and ``min(x, y)``
is ``y if y < x else x``, so each pair is the same function, NaNs and signed zeros
included; both operands are read by the condition already, so evaluating both guards no
access. As ``max``/``min`` the update ``m = max(m, X[i, j])`` is a reduction the schedule
and the C compiler vectorize; as a conditional it is a select chained through every
iteration.
"""

from __future__ import annotations

from .exprs import Bin, Expr, Select, map_children
from .ir import Scop


def canonical_selects(scop: Scop) -> tuple[Scop, tuple[str, ...]]:
    """``scop`` with every such conditional a max or a min, and a note per statement
    changed (``scop`` itself and none when there is none)."""
    notes = []
    statements = []
    for s in scop.statements:
        value = _rewrite(s.value)
        if value != s.value:
            notes.append(f"{s.name}: a conditional expression is a max or a min")
            s = s.replace(value=value)
        statements.append(s)
    if not notes:
        return scop, ()
    return scop.replace(statements=tuple(statements)), tuple(notes)


def _rewrite(e: Expr) -> Expr:
    e = map_children(e, _rewrite)
    if not isinstance(e, Select) or not isinstance(e.cond, Bin) or \
            e.cond.op not in ("<", ">") or e.a.dtype != e.b.dtype:
        return e
    # the comparison as big > small
    big, small = (e.cond.a, e.cond.b) if e.cond.op == ">" else (e.cond.b, e.cond.a)
    if (e.a, e.b) == (big, small):  # the bigger: max(small, big)
        return Bin(e.a.dtype, "max", small, big)
    if (e.a, e.b) == (small, big):  # the smaller: min(big, small)
        return Bin(e.a.dtype, "min", big, small)
    return e
