"""isl helpers of the OpenCL backend: isl sets and piecewise affine functions printed as Python
expressions, for the host side.

The OpenCL host code is Python: region tests, host loop bounds, grid offsets and extents are
isl objects over the syms (and host iterators), printed once at compile time through isl's own
AST expression builder and evaluated per call.
"""

from __future__ import annotations

import islpy as isl

from ..astgen import ast_expr_text

_T = isl.ast_expr_op_type
# isl AST operators as Python; every division isl emits has a positive constant divisor, and
# ``pdiv_q``/``pdiv_r`` have non-negative dividends, so floor semantics agree.
PY_OPS = {
    _T.and_: "({} and {})", _T.and_then: "({} and {})", _T.or_: "({} or {})",
    _T.or_else: "({} or {})", _T.max: "max({}, {})", _T.min: "min({}, {})",
    _T.minus: "(-{})", _T.add: "({} + {})", _T.sub: "({} - {})", _T.mul: "({} * {})",
    _T.div: "({} // {})", _T.fdiv_q: "({} // {})", _T.pdiv_q: "({} // {})",
    _T.pdiv_r: "({} % {})", _T.zdiv_r: "({} % {})", _T.cond: "({1} if {0} else {2})",
    _T.select: "({1} if {0} else {2})", _T.eq: "({} == {})", _T.le: "({} <= {})",
    _T.lt: "({} < {})", _T.ge: "({} >= {})", _T.gt: "({} > {})",
}


def ast_to_py(e: isl.AstExpr) -> str:
    return ast_expr_text(e, PY_OPS)


def set_to_py(params_set: isl.Set, context: isl.Set | None = None) -> str:
    """A Python condition true exactly at the parameter values in ``params_set`` (within
    ``context``, which the caller guarantees; conditions it implies are left out)."""
    if context is None:
        context = isl.Set.universe(params_set.get_space())
    context = context.align_params(params_set.get_space())
    params_set = params_set.align_params(context.get_space())
    if context.is_subset(params_set):
        return "True"
    if params_set.intersect(context).is_empty():
        return "False"
    build = isl.AstBuild.from_context(context)
    return ast_to_py(build.expr_from_set(params_set.gist(context)))


def pw_aff_to_py(value: isl.PwAff, context: isl.Set) -> str:
    """A Python expression for ``value``, valid where ``context`` holds (inside its domain)."""
    context = context.align_params(value.get_space())
    value = value.align_params(context.get_space())
    build = isl.AstBuild.from_context(context)
    return ast_to_py(build.expr_from_pw_aff(value.gist(context)))
