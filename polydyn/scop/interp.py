"""The reference interpreter: runs a Scop's loop tree in its original order on NumPy values.

It is the oracle of every test. The loop tree is turned into Python source once per Scop
(plain loops, NumPy arithmetic in each array's dtype) and executed; it does not use isl's
code generator, so it is independent of the code paths it checks. Loops whose iterations
cannot meet (``lanes.py``) run as whole NumPy arrays, one element per iteration, with the
same results as one iteration at a time; the rest run one iteration at a time on NumPy
scalars.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import islpy as isl
import numpy as np

from . import lanes
from .affine import Aff
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
from .lanes import lane_plan

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


@dataclass(frozen=True)
class _Ctx:
    """Where an expression is printed: ``stored(name)`` is the dtype of an array or local
    scalar whose values are NumPy scalars of it; inside lane loops (``lanes.py``), ``lanes``
    are the loop variables holding arrays of values, ``private`` the local scalars that may
    hold one value per lane, and ``guarded`` says that some lanes do not take the branch
    being printed (its loads clip their subscripts, ``lanes.gather``); statements under a
    guard that some lanes fail run under ``mask``."""

    stored: Callable[[str], str | None] | None = None
    lanes: frozenset[str] = frozenset()
    private: frozenset[str] = frozenset()
    guarded: bool = False
    mask: str | None = None  # the local holding the lanes a guard lets run (statements)

    def varies(self, *es: Expr) -> bool:
        """Whether any of ``es`` may differ from lane to lane."""
        if not self.lanes:
            return False
        for e in es:
            for x in e.walk():
                if (isinstance(x, Scalar) and x.name in self.private) or \
                        (isinstance(x, Index) and x.aff.vars() & self.lanes) or \
                        (isinstance(x, Load) and any(i.vars() & self.lanes for i in x.index)):
                    return True
        return False

    def aff(self, a: Aff) -> str:
        return a.to_numpy() if a.vars() & self.lanes else a.to_py()

    def branch(self) -> _Ctx:
        return replace(self, guarded=True)


def _cast(dtype: str, text: str, exact: str | None) -> tuple[str, str]:
    return (text if exact == dtype else f"_T_{dtype}({text})"), dtype


def _typed(e: Expr, ctx: _Ctx) -> tuple[str, str | None]:
    """``(source, exact)``: ``exact`` is the dtype of the NumPy scalars (or arrays, in
    lanes) the source gives, or None where that is not known (an index, a weak literal, a
    comparison)."""
    if isinstance(e, Const | Index | Load | Scalar):
        return _typed_leaf(e, ctx)
    if isinstance(e, Bin):
        return _typed_bin(e, ctx)
    if isinstance(e, Un):
        a, ta = _typed(e.a, ctx)
        if e.op == "neg":
            return f"(-{a})", ta
        return (f"np.logical_not({a})" if ctx.varies(e.a) else f"(not {a})"), None
    if isinstance(e, Call):
        arg = _typed(e.args[0], ctx)[0]
        if e.fn == "erf":
            erf = "_verf" if ctx.varies(e.args[0]) else "math.erf"
            return f"_T_{e.dtype}({erf}({arg}))", e.dtype
        return f"_T_{concrete(e.dtype)}({_PY_FUNCS[e.fn]}({arg}))", concrete(e.dtype)
    if isinstance(e, Select):
        cond = _typed(e.cond, ctx)[0]
        if ctx.varies(e.cond):  # each lane takes its branch: both are computed
            (a, ta), (b, tb) = _typed(e.a, ctx.branch()), _typed(e.b, ctx.branch())
            return f"np.where({cond}, {a}, {b})", (ta if ta == tb else None)
        (a, ta), (b, tb) = _typed(e.a, ctx), _typed(e.b, ctx)
        return f"({a} if {cond} else {b})", (ta if ta == tb else None)
    if isinstance(e, Cast):
        return _cast(e.dtype, *_typed(e.a, ctx))
    raise TypeError(f"unknown expression node {e!r}")


def _typed_leaf(e: Expr, ctx: _Ctx) -> tuple[str, str | None]:
    stored = ctx.stored
    if isinstance(e, Const):
        if isinstance(e.value, float) and not math.isfinite(e.value):
            return f"float({str(e.value)!r})", None
        if e.dtype in EXACT:
            return f"_T_{e.dtype}({e.value!r})", e.dtype
        return repr(e.value), None
    if isinstance(e, Index):
        return ctx.aff(e.aff), None
    if isinstance(e, Load):
        subs = ", ".join(ctx.aff(i) for i in e.index)
        text = f"_gather({e.array}, {subs})" if ctx.guarded else f"{e.array}[{subs}]"
        return text, (stored(e.array) if stored is not None else None)
    if isinstance(e, Scalar):
        return e.name, (stored(e.name) if stored is not None else None)
    raise TypeError(f"unknown expression node {e!r}")


def _typed_bin(e: Bin, ctx: _Ctx) -> tuple[str, str | None]:
    (a, ta) = _typed(e.a, ctx)
    # the right operand of ``and``/``or`` runs only where the left one lets it
    (b, tb) = _typed(e.b, ctx.branch() if e.op in ("and", "or") and ctx.varies(e.a)
                     else ctx)
    exact = ta if ta == tb else None
    vector = ctx.varies(e.a, e.b)
    if e.op in ("min", "max"):  # the winner converted to the result type, as in C
        fn = f"_v{e.op}" if vector else f"_{e.op}"
        return _cast(concrete(e.dtype), f"{fn}({a}, {b})", exact)
    if e.op in ("//", "%") and e.dtype not in ("f32", "f64", "float"):
        fn = ("_vidiv" if e.op == "//" else "_vimod") if vector else \
            ("_idiv" if e.op == "//" else "_imod")
        return f"_T_{concrete(e.dtype)}({fn}({a}, {b}))", concrete(e.dtype)
    if e.op in ("and", "or") and vector:
        return f"np.logical_{e.op}({a}, {b})", None
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


def python_source(scop: Scop, lane_loops: bool = True) -> str:
    """``def run(<syms>, <arrays>, <values>)`` executing the loop tree; with ``lane_loops``,
    the lane loops (``lanes.lane_plan``) run on arrays of their iterations."""
    tensor_names = [a.name for a in scop.arrays if a.is_tensor]
    value_names = [a.name for a in scop.arrays if a.kind == "value"]
    params = list(scop.syms) + tensor_names + value_names
    writer = _Writer(scop, lane_plan(scop) if lane_loops else {})
    writer.lines.append(f"def run({', '.join(params)}):")
    if writer.plan:  # a scalar a mask keeps in some lanes may not be assigned yet
        writer.lines.extend(f"    {a.name} = _UNSET" for a in scop.arrays if a.kind == "local")

    def stored(name: str) -> str | None:
        dtype = scop.array(name).dtype
        return dtype if dtype in EXACT else None

    writer.emit(scop.tree, 1, _Ctx(stored))
    return "\n".join(writer.lines) + "\n"


class _Writer:
    """The lines of ``python_source``'s function, node by node."""

    def __init__(self, scop: Scop, plan: dict[int, lanes.Lane]):
        self.scop = scop
        self.plan = plan
        self.lines: list[str] = []
        self.masks = itertools.count(1)

    def emit(self, nodes: tuple[Node, ...], depth: int, ctx: _Ctx) -> None:
        pad = "    " * depth
        if not nodes:
            self.lines.append(pad + "pass")
        for n in nodes:
            if isinstance(n, Loop) and id(n) in self.plan:
                self.lane_loop(n, self.plan[id(n)], depth, ctx)
            elif isinstance(n, Loop):
                self.lines.append(f"{pad}for {n.var} in range({n.lo.to_py()}, "
                                  f"{n.hi.to_py()}, {n.step}):")
                self.emit(n.body, depth + 1, ctx)
            elif isinstance(n, Guard) and n.cond.vars() & ctx.lanes:
                self.masked(n, depth, ctx)
            elif isinstance(n, Guard):
                self.lines.append(f"{pad}if {n.cond.to_py()}:")
                self.emit(n.then, depth + 1, ctx)
                if n.orelse:
                    self.lines.append(f"{pad}else:")
                    self.emit(n.orelse, depth + 1, ctx)
            else:
                self.statement(n, pad, ctx)

    def lane_loop(self, n: Loop, lane: lanes.Lane, depth: int, ctx: _Ctx) -> None:
        """The loop's body run once, its variable the array of its values."""
        pad = "    " * depth
        self.lines.append(f"{pad}{n.var} = _lanes({n.lo.to_py()}, {n.hi.to_py()}, {n.step}, "
                          f"{lane.rank})")
        self.lines.append(f"{pad}if {n.var}.size:")
        self.lines.extend(f"{pad}    {v} = _UNSET" for v in lane.scoped)
        self.emit(n.body, depth + 1, replace(ctx, lanes=ctx.lanes | {n.var},
                                             private=ctx.private | set(lane.private)))
        self.lines.extend(f"{pad}    {v} = _last({v}, {lane.rank}, {lane.top})"
                          for v in lane.private if v not in lane.scoped)

    def masked(self, n: Guard, depth: int, ctx: _Ctx) -> None:
        """A guard some lanes pass and others fail: each branch runs under a mask."""
        cond = n.cond.to_numpy()
        for nodes, test in ((n.then, cond), (n.orelse, f"np.logical_not({cond})")):
            if not nodes:
                continue
            name = f"_m{next(self.masks)}"
            test = f"np.logical_and({ctx.mask}, {test})" if ctx.mask else test
            self.lines.append(f"{'    ' * depth}{name} = {test}")
            self.emit(nodes, depth, replace(ctx, mask=name, guarded=True))

    def statement(self, ref: StmtRef, pad: str, ctx: _Ctx) -> None:
        s = self.scop.statement(ref.name)
        dtype = self.scop.array(s.target.name if isinstance(s.target, Scalar)
                                else s.target.array).dtype
        value = _cast(dtype, *_typed(s.rhs(), ctx))[0]
        if ctx.mask and isinstance(s.target, Scalar):
            self.lines.append(f"{pad}{s.target.name} = _masked({ctx.mask}, {value}, "
                              f"{s.target.name})")
        elif ctx.mask:
            subs = ", ".join(ctx.aff(i) for i in s.target.index)
            self.lines.append(f"{pad}_store({s.target.array}, {ctx.mask}, {value}, {subs})")
        else:
            target = _typed(s.target, replace(ctx, stored=None, guarded=False))[0]
            self.lines.append(f"{pad}{target} = {value}")


_RUNNERS: dict[tuple[int, bool], tuple[Scop, Any]] = {}


def compiled_runner(scop: Scop, lane_loops: bool = True) -> Any:
    """``python_source(scop, lane_loops)``'s ``run``, compiled once per Scop."""
    hit = _RUNNERS.get((id(scop), lane_loops))
    if hit is not None and hit[0] is scop:
        return hit[1]
    ns: dict[str, Any] = {"np": np, "math": math, "_min": _py_min, "_max": _py_max,
                          "_idiv": _idiv, "_imod": _imod, "_lanes": lanes.lanes,
                          "_last": lanes.last, "_gather": lanes.gather, "_vmin": lanes.vmin,
                          "_vmax": lanes.vmax, "_vidiv": lanes.vidiv, "_vimod": lanes.vimod,
                          "_verf": np.vectorize(math.erf, otypes=[np.float64]),
                          "_UNSET": lanes.UNSET, "_masked": lanes.masked,
                          "_store": lanes.store}
    for d, npname in NUMPY_NAME.items():
        ns[f"_T_{d}"] = getattr(np, npname)
    exec(compile(python_source(scop, lane_loops), f"<reference {scop.name}>", "exec"), ns)
    _RUNNERS[(id(scop), lane_loops)] = (scop, ns["run"])
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
