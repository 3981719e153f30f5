"""Work figures from the Scop itself: statement instances counted by isl, flops, minimal bytes.

- instances: the points of each statement's domain with the syms fixed (isl counts them);
- flops: instances x the arithmetic operations in the statement's stored value (``x += a * b``
  is 2: the multiply and the accumulate); a math call (``exp``) is one;
- minimal bytes: every input read once and every output written once (an ``inout`` array
  both), temporaries and local scalars not counted: the traffic no schedule can avoid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import islpy as isl

from ..scop.exprs import ARITH_OPS, NUMPY_NAME, Bin, Call, Expr
from ..scop.ir import Scop, Statement

# Above this many points a domain that is not a box is counted slice by slice.
_ENUMERATE_LIMIT = 200_000
ITEMSIZE = {"f32": 4, "f64": 8, "i32": 4, "i64": 8}


@dataclass(frozen=True)
class Work:
    """What one call does at one point: ``flops``, ``bytes`` (minimal traffic), ``instances``
    (statement instances, all statements), per statement instance counts."""

    flops: int
    bytes: int
    instances: int
    per_statement: dict[str, int]

    @property
    def intensity(self) -> float:
        """Flops per byte of minimal traffic (0 with no traffic)."""
        return self.flops / self.bytes if self.bytes else 0.0


def param_point(scop: Scop, sizes: Mapping[str, int]) -> isl.Set:
    """``[N, M] -> { : N = 8 and M = 3 }``: the syms fixed to ``sizes``."""
    cons = " and ".join(f"{s} = {int(sizes[s])}" for s in scop.syms) or "1 = 1"
    return isl.Set(f"{scop.param_space_text()} -> {{ : {cons} }}")


def _fixed(domain: isl.Set, point: isl.Set) -> isl.Set:
    """The domain at one point, with the (now fixed) parameters projected out."""
    at = domain.intersect_params(point)
    return at.project_out(isl.dim_type.param, 0, at.dim(isl.dim_type.param))


def _bounds(dom: isl.Set, dim: int) -> tuple[int, int]:
    return (int(dom.dim_min_val(dim).to_python()), int(dom.dim_max_val(dim).to_python()))


def count_points(dom: isl.Set) -> int:
    """Number of integer points of a bounded, parameter-free set.

    A box counts as the product of its extents; a small set is enumerated by isl
    (``count_val``); a large non-box set is split along its first dimension."""
    if dom.is_empty():
        return 0
    ndim = dom.dim(isl.dim_type.set)
    if ndim == 0:
        return 1
    bounds = [_bounds(dom, d) for d in range(ndim)]
    volume = math.prod(hi - lo + 1 for lo, hi in bounds)
    if dom.is_box():
        return volume
    if volume <= _ENUMERATE_LIMIT or ndim == 1:
        return int(dom.count_val().to_python())
    lo, hi = bounds[0]
    total = 0
    for value in range(lo, hi + 1):
        row = dom.fix_val(isl.dim_type.set, 0, isl.Val.int_from_si(dom.get_ctx(), value))
        total += count_points(row.project_out(isl.dim_type.set, 0, 1))
    return total


def count_instances(stmt: Statement, scop: Scop, sizes: Mapping[str, int]) -> int:
    """Instances of one statement at the given sizes."""
    return count_points(_fixed(stmt.domain, param_point(scop, sizes)))


def expr_flops(expr: Expr) -> int:
    """Arithmetic operations in an expression tree: binary arithmetic (``min``/``max``
    included) and math calls. Negation (``-pd.inf``), comparisons, selects and index arithmetic
    (subscripts, loop variables as values) are not counted."""
    return sum(1 for node in expr.walk()
               if (isinstance(node, Bin) and node.op in ARITH_OPS) or isinstance(node, Call))


def statement_flops(stmt: Statement) -> int:
    """Operations per instance: the stored value, with a compound assignment's operator."""
    return expr_flops(stmt.value) + (0 if stmt.op == "=" else 1)


def array_bytes(scop: Scop, sizes: Mapping[str, int]) -> int:
    """Inputs read once, outputs written once, inout arrays both."""
    total = 0
    for a in scop.arg_arrays:
        if not a.is_tensor or a.kind == "temp":
            continue
        elems = math.prod(max(0, d.eval(sizes)) for d in a.shape)
        size = elems * ITEMSIZE.get(a.dtype, 8)
        total += 2 * size if a.kind == "inout" else size
    return total


def output_elements(scop: Scop, sizes: Mapping[str, int]) -> int:
    """Elements written to the caller's arrays (outputs and inouts)."""
    return sum(math.prod(max(0, d.eval(sizes)) for d in a.shape)
               for a in scop.arg_arrays if a.kind in ("out", "inout"))


def work(scop: Scop, sizes: Mapping[str, int]) -> Work:
    """Flops, minimal bytes and instances of one call of the operator at ``sizes``."""
    point = param_point(scop, sizes)
    per_statement = {s.name: count_points(_fixed(s.domain, point)) for s in scop.statements}
    flops = sum(per_statement[s.name] * statement_flops(s) for s in scop.statements)
    return Work(flops=flops, bytes=array_bytes(scop, sizes),
                instances=sum(per_statement.values()), per_statement=per_statement)


def choose_metric(w: Work, threshold: float = 2.0) -> str:
    """``"GFLOP/s"`` for compute-bound work (at least ``threshold`` flops per byte of minimal
    traffic), else ``"GB/s"``."""
    return "GFLOP/s" if w.flops and w.intensity >= threshold else "GB/s"


def rate(w: Work, seconds: float, metric: str) -> float:
    """GFLOP/s or GB/s of one call that took ``seconds``."""
    if seconds <= 0:
        return float("nan")
    amount = w.flops if metric == "GFLOP/s" else w.bytes
    return amount / seconds / 1e9


def numpy_dtype(dtype: str) -> str:
    return NUMPY_NAME[dtype]
