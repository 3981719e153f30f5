"""The reference interpreter: runs a Scop's loop tree in its original order on NumPy values.

It is the oracle of every test. The loop tree is turned into Python source once per Scop
(plain loops, NumPy scalar arithmetic in each array's dtype) and executed; it does not use isl's
code generator, so it is independent of the code paths it checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import islpy as isl
import numpy as np

from .exprs import (
    NUMPY_NAME,
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
    concrete,
)
from .ir import Guard, Loop, Node, Scop, StmtRef

_PY_FUNCS = {"exp": "np.exp", "log": "np.log", "sqrt": "np.sqrt", "tanh": "np.tanh",
             "sin": "np.sin", "cos": "np.cos", "abs": "abs", "floor": "np.floor",
             "ceil": "np.ceil"}


# Each value is a NumPy scalar of its dtype, converted after every operation as C would
# (``_T_f32(a * b)``). A conversion is left out where the operand already has that exact
# type (NumPy's arithmetic on two float32 scalars gives a float32 scalar): the results are
# the same bits, and the conversions were most of the interpreter's time.
EXACT = ("f32", "f64", "i32", "i64")
# the operators that give two operands of one exact type that type (`//`, `%` on integers
# and `/` on them do not: see _idiv, _imod)
_CLOSED = {"f32": "+-*/", "f64": "+-*/", "i32": "+-*", "i64": "+-*"}


def py_expr(e: Expr) -> str:
    """Python source computing ``e`` (an assignment's target: no conversions known)."""
    return _typed(e, None)[0]


def _cast(dtype: str, text: str, exact: str | None) -> tuple[str, str]:
    return (text if exact == dtype else f"_T_{dtype}({text})"), dtype


def _typed(e: Expr, stored: Callable[[str], str | None] | None) -> tuple[str, str | None]:
    """``(source, exact)``: ``exact`` is the dtype of the NumPy scalar the source gives, or
    None where that is not known (an index, a weak literal, a comparison); ``stored(name)``
    is the dtype of an array or local scalar whose values are NumPy scalars of it."""
    if isinstance(e, Const | Index | Load | Scalar):
        return _typed_leaf(e, stored)
    if isinstance(e, Bin):
        return _typed_bin(e, stored)
    if isinstance(e, Un):
        a, ta = _typed(e.a, stored)
        return (f"(-{a})", ta) if e.op == "neg" else (f"(not {a})", None)
    if isinstance(e, Call):
        arg = _typed(e.args[0], stored)[0]
        if e.fn == "erf":
            return f"_T_{e.dtype}(math.erf({arg}))", e.dtype
        return f"_T_{concrete(e.dtype)}({_PY_FUNCS[e.fn]}({arg}))", concrete(e.dtype)
    if isinstance(e, Select):
        (a, ta), (b, tb) = _typed(e.a, stored), _typed(e.b, stored)
        return f"({a} if {_typed(e.cond, stored)[0]} else {b})", (ta if ta == tb else None)
    if isinstance(e, Cast):
        return _cast(e.dtype, *_typed(e.a, stored))
    raise TypeError(f"unknown expression node {e!r}")


def _typed_leaf(e: Expr, stored: Callable[[str], str | None] | None) -> tuple[str, str | None]:
    if isinstance(e, Const):
        if isinstance(e.value, float) and not math.isfinite(e.value):
            return f"float({str(e.value)!r})", None
        if e.dtype in EXACT:
            return f"_T_{e.dtype}({e.value!r})", e.dtype
        return repr(e.value), None
    if isinstance(e, Index):
        return e.aff.to_py(), None
    if isinstance(e, Load):
        text = f"{e.array}[{', '.join(i.to_py() for i in e.index)}]"
        return text, (stored(e.array) if stored is not None else None)
    if isinstance(e, Scalar):
        return e.name, (stored(e.name) if stored is not None else None)
    raise TypeError(f"unknown expression node {e!r}")


def _typed_bin(e: Bin, stored: Callable[[str], str | None] | None) -> tuple[str, str | None]:
    (a, ta), (b, tb) = _typed(e.a, stored), _typed(e.b, stored)
    exact = ta if ta == tb else None
    if e.op in ("min", "max"):  # the winner converted to the result type, as in C
        return _cast(concrete(e.dtype), f"_{e.op}({a}, {b})", exact)
    if e.op in ("//", "%") and e.dtype not in ("f32", "f64", "float"):
        fn = "_idiv" if e.op == "//" else "_imod"
        return f"_T_{concrete(e.dtype)}({fn}({a}, {b}))", concrete(e.dtype)
    op = {"pow": "**"}.get(e.op, e.op)
    if e.dtype in EXACT and e.op not in ("and", "or"):
        closed = exact == e.dtype and e.op in _CLOSED[e.dtype]
        return _cast(e.dtype, f"({a} {op} {b})", e.dtype if closed else None)
    return f"({a} {op} {b})", None


def _idiv(a: Any, b: Any) -> Any:
    return a // b if b else 0  # NumPy: integer division by zero gives 0


def _imod(a: Any, b: Any) -> Any:
    return a % b if b else 0


def _py_min(a: Any, b: Any) -> Any:
    return b if b < a else a  # C's (b < a ? b : a): the same result on ties and NaN


def _py_max(a: Any, b: Any) -> Any:
    return b if b > a else a


def python_source(scop: Scop) -> str:
    """``def run(<syms>, <arrays>, <values>)`` executing the loop tree."""
    tensor_names = [a.name for a in scop.arrays if a.is_tensor]
    value_names = [a.name for a in scop.arrays if a.kind == "value"]
    params = list(scop.syms) + tensor_names + value_names
    lines = [f"def run({', '.join(params)}):"]

    def stored(name: str) -> str | None:
        dtype = scop.array(name).dtype
        return dtype if dtype in EXACT else None

    def emit(nodes: tuple[Node, ...], depth: int) -> None:
        pad = "    " * depth
        if not nodes:
            lines.append(pad + "pass")
        for n in nodes:
            if isinstance(n, Loop):
                lines.append(f"{pad}for {n.var} in range({n.lo.to_py()}, {n.hi.to_py()}, "
                             f"{n.step}):")
                emit(n.body, depth + 1)
            elif isinstance(n, Guard):
                lines.append(f"{pad}if {n.cond.to_py()}:")
                emit(n.then, depth + 1)
                if n.orelse:
                    lines.append(f"{pad}else:")
                    emit(n.orelse, depth + 1)
            else:
                emit_stmt(n, pad)

    def emit_stmt(ref: StmtRef, pad: str) -> None:
        s = scop.statement(ref.name)
        target = py_expr(s.target)
        dtype = scop.array(s.target.name if isinstance(s.target, Scalar)
                           else s.target.array).dtype
        value = _cast(dtype, *_typed(s.rhs(), stored))[0]
        lines.append(f"{pad}{target} = {value}")

    emit(scop.tree, 1)
    return "\n".join(lines) + "\n"


_RUNNERS: dict[int, tuple[Scop, Any]] = {}


def compiled_runner(scop: Scop) -> Any:
    hit = _RUNNERS.get(id(scop))
    if hit is not None and hit[0] is scop:
        return hit[1]
    ns: dict[str, Any] = {"np": np, "math": math, "_min": _py_min, "_max": _py_max,
                          "_idiv": _idiv, "_imod": _imod}
    for d, npname in NUMPY_NAME.items():
        ns[f"_T_{d}"] = getattr(np, npname)
    exec(compile(python_source(scop), f"<reference {scop.name}>", "exec"), ns)
    _RUNNERS[id(scop)] = (scop, ns["run"])
    return ns["run"]


def check_context(scop: Scop, syms: Mapping[str, int]) -> None:
    """Raise ShapeError when the sizes lie outside the operator's ``assume`` context."""
    point = isl.Set(f"{scop.param_space_text()} -> {{ : " +
                    " and ".join(f"{s} = {syms[s]}" for s in scop.syms) + " }"
                    if scop.syms else "{ : }")
    if point.intersect(scop.context).is_empty():
        from ..parametric.binding import outside_assume

        raise outside_assume(scop, syms)


def run_reference(scop: Scop, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """Call semantics of a compiled kernel, computed by the original loop nest."""
    from ..parametric.binding import Binder

    binder = Binder(scop)
    bound = binder.bind(args, kwargs)
    check_context(scop, bound.syms)
    arrays = dict(bound.arrays)
    for a in scop.arrays:
        if a.kind in ("out", "temp") and a.name not in arrays:
            arrays[a.name] = np.zeros(binder.output_shape(a, bound.syms), NUMPY_NAME[a.dtype])
        elif a.kind == "out":
            arrays[a.name][...] = 0
    run = compiled_runner(scop)
    call = [bound.syms[s] for s in scop.syms]
    call += [arrays[a.name] for a in scop.arrays if a.is_tensor]
    call += [bound.values[a.name] for a in scop.arrays if a.kind == "value"]
    with np.errstate(all="ignore"):
        run(*call)
    outs = tuple(bound.result(a.name, arrays[a.name]) for a in scop.outputs)
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs
