"""The text of a statement-body expression, as in ``str(scop)`` and messages."""

from __future__ import annotations

from .exprs import Bin, Call, Cast, Const, Expr, Index, Load, Scalar, Select, Un


def format_expr(e: Expr) -> str:
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Index):
        return str(e.aff)
    if isinstance(e, Load):
        return f"{e.array}[{', '.join(str(i) for i in e.index)}]"
    if isinstance(e, Scalar):
        return e.name
    if isinstance(e, Bin):
        if e.op in ("min", "max", "pow"):
            return f"{e.op}({format_expr(e.a)}, {format_expr(e.b)})"
        return f"({format_expr(e.a)} {e.op} {format_expr(e.b)})"
    if isinstance(e, Un):
        return f"(-{format_expr(e.a)})" if e.op == "neg" else f"(not {format_expr(e.a)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, Select):
        return f"({format_expr(e.a)} if {format_expr(e.cond)} else {format_expr(e.b)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({format_expr(e.a)})"
    return repr(e)
