"""Binding a call's arguments: syms from array shapes, checks, output shapes.

Shared by the reference interpreter and compiled kernels, so both refuse the same calls with
the same ShapeError. The plan is computed once per Scop; ``bind`` does only the per-call work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..scop.ir import NUMPY_NAME, Aff, Array, Scop


@dataclass(frozen=True)
class Bound:
    """A checked call: sym values, every argument array by name, value scalars, given outputs."""

    syms: dict[str, int]
    arrays: dict[str, Any]
    values: dict[str, Any]
    given_outputs: frozenset[str]


def _solve_plan(scop: Scop, positional: list[Array]) -> list[tuple[str, str, int, Aff]]:
    """Which (argument, dimension) each shape sym is read from: ``(sym, arg, dim, aff)``.

    A sym is read from the first dimension that is exactly the sym, else from the first
    dimension ``c * sym + rest`` whose other syms are already known (``2 * N``, ``N + 2``).
    """
    known: set[str] = set(scop.index_syms)
    plan: list[tuple[str, str, int, Aff]] = []
    dims = [(a.name, d, aff) for a in positional for d, aff in enumerate(a.shape)]
    progress = True
    while progress:
        progress = False
        for name, d, aff in dims:
            lin = aff.linear()
            if lin is None:
                continue
            coef, _ = lin
            unknown = [s for s in coef if s not in known]
            if len(unknown) == 1:
                plan.append((unknown[0], name, d, aff))
                known.add(unknown[0])
                progress = True
    return plan


class Binder:
    def __init__(self, scop: Scop):
        self.scop = scop
        arrays = scop.arg_arrays
        self.positional = [a for a in arrays if a.kind in ("in", "inout", "value")]
        self.outputs = [a for a in arrays if a.kind == "out"]
        self.tensors = [a for a in arrays if a.is_tensor]
        self.np_dtype = {a.name: np.dtype(NUMPY_NAME[a.dtype]) for a in arrays}
        # Direct reads first so that ``N`` is taken from a dimension that is exactly ``N``.
        direct = {}
        for a in self.positional:
            for d, aff in enumerate(a.shape):
                if aff.op == "var" and aff.args[0] not in direct:
                    direct[aff.args[0]] = (a.name, d, aff)
        plan = [(s, *direct[s]) for s in direct if s not in scop.index_syms]
        solved = {s for s, *_ in plan} | set(scop.index_syms)
        for s, name, d, aff in _solve_plan(scop, self.positional):
            if s not in solved:
                plan.append((s, name, d, aff))
                solved.add(s)
        self.plan = plan
        self.unbound = [s for s in scop.syms if s not in solved]
        self.keyword_syms = list(scop.index_syms) + self.unbound
        self.names = [a.name for a in self.positional]
        self.accepted = set(self.names) | {a.name for a in self.outputs} | set(self.keyword_syms)

    # ------------------------------------------------------------------------------------------
    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Bound:
        op = self.scop.name
        if len(args) > len(self.positional):
            raise ShapeError(f"{op}() takes {len(self.positional)} positional argument(s) "
                             f"({', '.join(self.names)}), got {len(args)}; pass outputs and "
                             "sizes by keyword")
        given = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.accepted:
                raise ShapeError(f"{op}() got an unexpected keyword argument {k!r}; it accepts "
                                 f"{', '.join(sorted(self.accepted))}")
            if k in given:
                raise ShapeError(f"{op}() got argument {k!r} twice")
            given[k] = v
        arrays: dict[str, Any] = {}
        values: dict[str, Any] = {}
        for a in self.positional:
            if a.name not in given:
                raise ShapeError(f"{op}() missing argument {a.name!r}")
            if a.kind == "value":
                values[a.name] = self._value(a, given[a.name])
            else:
                arrays[a.name] = self._array(a, given[a.name])
                if a.kind == "inout" and not arrays[a.name].flags.writeable:
                    raise ShapeError(f"argument {a.name!r} is updated in place but is "
                                     "read-only")
        syms = self._syms(given, arrays)
        for a in self.positional:
            if a.kind != "value":
                self._check_shape(a, arrays[a.name], syms, "argument")
        outs = []
        for a in self.outputs:
            if a.name in given:
                buf = self._array(a, given[a.name])
                self._check_shape(a, buf, syms, "output")
                if not buf.flags.writeable:
                    raise ShapeError(f"output {a.name!r} is read-only")
                arrays[a.name] = buf
                outs.append(a.name)
        return Bound(syms, arrays, values, frozenset(outs))

    def _syms(self, given: Mapping[str, Any], arrays: Mapping[str, Any]) -> dict[str, int]:
        syms: dict[str, int] = {}
        for s in self.keyword_syms:
            if s not in given:
                how = "a sym no input shape carries" if s in self.scop.index_syms else \
                    "it cannot be read from the input shapes"
                raise ShapeError(f"{self.scop.name}() needs the size {s}= as a keyword "
                                 f"argument ({how})")
            v = given[s]
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise ShapeError(f"size {s}= must be an integer, got {v!r}")
            syms[s] = int(v)
        for s, name, d, aff in self.plan:
            extent = arrays[name].shape[d]
            lin = aff.linear()
            coef, const = lin
            rest = sum(c * syms[v] for v, c in coef.items() if v != s)
            num = extent - const - rest
            if num % coef[s] != 0:
                raise ShapeError(f"argument {name!r}, dimension {d}: expected {aff} for an "
                                 f"integer {s}, got {extent}")
            syms[s] = num // coef[s]
        return syms

    def _array(self, a: Array, x: Any) -> Any:
        if not isinstance(x, np.ndarray):
            if hasattr(x, "__array__") or isinstance(x, list | tuple):
                x = np.asarray(x)
            else:
                raise ShapeError(f"argument {a.name!r}: expected a NumPy array of "
                                 f"{self.np_dtype[a.name]}, got {type(x).__name__}")
        if x.dtype != self.np_dtype[a.name]:
            raise ShapeError(f"argument {a.name!r}: expected dtype {self.np_dtype[a.name]}, "
                             f"got {x.dtype}")
        if x.ndim != a.rank:
            raise ShapeError(f"argument {a.name!r}: expected {a.rank} dimension(s) "
                             f"[{', '.join(str(d) for d in a.shape)}], got {x.ndim} "
                             f"(shape {x.shape})")
        return x

    def _value(self, a: Array, x: Any) -> Any:
        dt = self.np_dtype[a.name]
        if isinstance(x, np.ndarray) and x.ndim == 0:
            x = x[()]
        ok_float = isinstance(x, float | int | np.floating | np.integer) and dt.kind == "f"
        ok_int = isinstance(x, int | np.integer) and not isinstance(x, bool) and dt.kind == "i"
        if not (ok_float or ok_int):
            raise ShapeError(f"argument {a.name!r}: expected a {dt} scalar, got {x!r}")
        return dt.type(x)

    def _check_shape(self, a: Array, x: Any, syms: Mapping[str, int], what: str) -> None:
        for d, aff in enumerate(a.shape):
            want = aff.eval(syms)
            if x.shape[d] != want:
                bound = ", ".join(f"{k}={v}" for k, v in syms.items() if k in aff.vars())
                raise ShapeError(f"{what} {a.name!r}, dimension {d}: expected {aff}"
                                 f"{' = ' + str(want) if bound else ''}"
                                 f"{' (' + bound + ')' if bound else ''}, got {x.shape[d]}")

    def output_shape(self, a: Array, syms: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(aff.eval(syms) for aff in a.shape)
