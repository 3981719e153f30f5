"""``str(scop)``: a readable dump of syms, context, arrays, statements and their relations."""

from __future__ import annotations

from .ir import Bin, Call, Cast, Const, Expr, Index, Load, Scalar, Scop, Select, Un


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


def format_scop(scop: Scop) -> str:
    out = [f"scop {scop.name}", f"  syms: {', '.join(scop.syms) or '-'}",
           f"  context: {scop.context}", "  arrays:"]
    for a in scop.arrays:
        shape = f"[{', '.join(str(d) for d in a.shape)}]" if a.shape else ""
        scope = f" scope({', '.join(a.scope)})" if a.kind == "local" else ""
        out.append(f"    {a.kind:5} {a.name}: {a.dtype}{shape}{scope}")
    out.append("  statements:")
    for s in scop.statements:
        out.append(f"    {s.name}: {format_expr(s.target)} {s.op} {format_expr(s.value)}")
        out.append(f"      domain: {s.domain}")
    out.append(f"  reads: {scop.accesses('read')}")
    out.append(f"  writes: {scop.accesses('write')}")
    out.append(f"  original schedule: {scop.original_schedule()}")
    return "\n".join(out)
