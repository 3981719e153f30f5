"""Binding a call's arguments: syms from array shapes, checks, output shapes.

Shared by the reference interpreter and compiled kernels, so both refuse the same calls with
the same ShapeError. The plan is computed once per Scop; ``bind`` does only the per-call work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..scop.affine import Aff
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Array, Scop
from ..scop.names import user_text
from .dlpack import as_numpy, result_kind


@dataclass(frozen=True)
class Bound:
    """A checked call: sym values, every argument array by name (as NumPy), value scalars,
    given outputs; the caller's own output buffers and how allocated outputs are returned (the
    first array argument's kind: torch tensors for torch tensors)."""

    syms: dict[str, int]
    arrays: dict[str, Any]
    values: dict[str, Any]
    given_outputs: frozenset[str]
    buffers: dict[str, Any] = field(default_factory=dict)
    returned_as: Callable[[np.ndarray], Any] | None = None

    def result(self, name: str, allocated: Any) -> Any:
        """What the call returns for output ``name``: the caller's buffer, or the array the
        kernel allocated, as the first argument's kind."""
        if name in self.given_outputs:
            return self.buffers.get(name, self.arrays[name])
        return allocated if self.returned_as is None else self.returned_as(allocated)


def _solve_plan(known_syms: set[str], arrays: list[Array]) -> list[tuple[str, str, int, Aff]]:
    """Which (argument, dimension) each shape sym is read from: ``(sym, arg, dim, aff)``.

    A sym is read from the first dimension that is exactly the sym, else from the first
    dimension ``c * sym + rest`` whose other syms are already known (``2 * N``, ``N + 2``).
    """
    known = set(known_syms)
    plan: list[tuple[str, str, int, Aff]] = []
    direct: dict[str, tuple[str, int, Aff]] = {}
    for a in arrays:
        for d, aff in enumerate(a.shape):
            if aff.op == "var" and aff.args[0] not in known and aff.args[0] not in direct:
                direct[aff.args[0]] = (a.name, d, aff)
    for s, (name, d, aff) in direct.items():
        plan.append((s, name, d, aff))
        known.add(s)
    dims = [(a.name, d, aff) for a in arrays if a.is_tensor for d, aff in enumerate(a.shape)]
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
        plan = _solve_plan(set(scop.index_syms), self.positional)
        solved = {s for s, *_ in plan} | set(scop.index_syms)
        self.plan = plan  # the plan when every keyword size is given (the C fast path's)
        self.unbound = [s for s in scop.syms if s not in solved]
        self.keyword_syms = list(scop.index_syms) + self.unbound
        self.names = [a.name for a in self.positional]
        accepted = [*self.names, *(a.name for a in self.outputs), *self.keyword_syms]
        # keyword arguments come with the user's names (``scop/names.py``)
        self.by_user = {scop.user_name(n): n for n in accepted}
        self.accepted = set(self.by_user)
        self._plans: dict[tuple[frozenset[str], frozenset[str]], list[Any]] = {}

    def _plan_for(self, keywords: frozenset[str], outputs: frozenset[str]) -> list[Any]:
        """Where each sym not given as a keyword is read: the inputs' and inouts' shapes
        first, then those of the given output buffers (``(sym, arg, dim, aff)``)."""
        key = (keywords, outputs)
        plan = self._plans.get(key)
        if plan is None:
            plan = []
            known = set(keywords)
            for arrays in (self.positional, [a for a in self.outputs if a.name in outputs]):
                for s, name, d, aff in _solve_plan(known, arrays):
                    plan.append((s, name, d, aff))
                    known.add(s)
            self._plans[key] = plan
        return plan

    # ------------------------------------------------------------------------------------------
    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Bound:
        op = self.scop.name
        if len(args) > len(self.positional):
            raise ShapeError(f"{op}() takes {len(self.positional)} positional argument(s) "
                             f"({', '.join(self.user(n) for n in self.names)}), got "
                             f"{len(args)}; pass outputs and sizes by keyword")
        given = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.accepted:
                raise ShapeError(f"{op}() got an unexpected keyword argument {k!r}; it accepts "
                                 f"{', '.join(sorted(self.accepted))}")
            if self.by_user[k] in given:
                raise ShapeError(f"{op}() got argument {k!r} twice")
            given[self.by_user[k]] = v
        if not self.scop.user_names:
            return self._bind(given)
        try:
            return self._bind(given)
        except ShapeError as err:  # say the user's names
            raise ShapeError(user_text(err.message, self.scop.user_names)) from None

    def user(self, name: str) -> str:
        return self.scop.user_name(name)

    def _bind(self, given: dict[str, Any]) -> Bound:
        op = self.scop.name
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
        buffers = {}
        for a in self.outputs:
            if a.name in given:
                buffers[a.name] = self._array(a, given[a.name])
        syms, origin = self._syms(given, {**arrays, **buffers})
        for a in self.outputs:
            self._check_extents(a, syms, origin)
        for a in self.positional:
            if a.kind != "value":
                self._check_shape(a, arrays[a.name], syms, origin, "argument")
        for name, buf in buffers.items():
            self._check_shape(self.scop.array(name), buf, syms, origin, "output")
            if not buf.flags.writeable:
                raise ShapeError(f"output {name!r} is read-only")
            arrays[name] = buf
        kept = {name: given[name] for name in buffers if given[name] is not buffers[name]}
        return Bound(syms, arrays, values, frozenset(buffers), kept, self._returned_as(given))

    def _returned_as(self, given: Mapping[str, Any]) -> Callable[[np.ndarray], Any] | None:
        """Allocated outputs take the kind of the first array argument (None: NumPy)."""
        first = next((given[a.name] for a in self.positional if a.kind != "value"), None)
        return None if isinstance(first, np.ndarray) else result_kind(first)

    def _syms(self, given: Mapping[str, Any], arrays: Mapping[str, Any]
              ) -> tuple[dict[str, int], dict[str, str]]:
        """The sym values and, for messages, where each was bound."""
        syms: dict[str, int] = {}
        origin: dict[str, str] = {}
        for s in self.keyword_syms:
            if s not in given:
                continue
            v = given[s]
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise ShapeError(f"size {s}= must be an integer, got {v!r}")
            syms[s] = int(v)
            origin[s] = f"given as {s}={int(v)}"
        outputs = frozenset(a.name for a in self.outputs if a.name in arrays)
        for s, name, d, aff in self._plan_for(frozenset(syms), outputs):
            extent = arrays[name].shape[d]
            coef, const = aff.linear()
            rest = sum(c * syms[v] for v, c in coef.items() if v != s)
            num = extent - const - rest
            if num % coef[s] != 0:
                what = "argument" if name in self.names else "output"
                raise ShapeError(f"{what} {name!r}, dimension {d}: expected {aff} for an "
                                 f"integer {s}, got {extent}")
            syms[s] = num // coef[s]
            origin[s] = f"bound by {name}'s dimension {d}"
        for s in self.keyword_syms:
            if s not in syms:
                how = "a sym no input shape carries" if s in self.scop.index_syms else \
                    "it cannot be read from the input shapes"
                outs = [a.name for a in self.outputs if s in {v for d in a.shape
                                                              for v in d.vars()}]
                also = f", or give the output {outs[0]!r}" if outs else ""
                raise ShapeError(f"{self.scop.name}() needs the size {s}= as a keyword "
                                 f"argument{also} ({how})")
        return syms, origin

    def _array(self, a: Array, x: Any) -> Any:
        if not isinstance(x, np.ndarray):
            view = as_numpy(a.name, self.np_dtype[a.name], x)  # torch, DLPack: no copy
            if view is not None:
                x = view
            elif hasattr(x, "__array__") or isinstance(x, list | tuple):
                x = np.asarray(x)
            else:
                raise ShapeError(f"argument {a.name!r}: expected a NumPy array of "
                                 f"{self.np_dtype[a.name]} (or a CPU tensor or DLPack "
                                 f"array), got {type(x).__name__}")
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

    def _check_shape(self, a: Array, x: Any, syms: Mapping[str, int],
                     origin: Mapping[str, str], what: str) -> None:
        for d, aff in enumerate(a.shape):
            want = aff.eval(syms)
            if x.shape[d] != want:
                raise ShapeError(f"{what} {a.name!r}, dimension {d}: expected "
                                 f"{_explained(aff, want, syms, origin)}, got {x.shape[d]}")

    def _check_extents(self, a: Array, syms: Mapping[str, int],
                       origin: Mapping[str, str]) -> None:
        """An output the sizes would give a negative extent (``N - 3`` at N = 1)."""
        for d, aff in enumerate(a.shape):
            want = aff.eval(syms)
            if want < 0:
                raise ShapeError(f"output {a.name!r}, dimension {d}: extent "
                                 f"{_explained(aff, want, syms, origin)} is negative")

    def output_shape(self, a: Array, syms: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(aff.eval(syms) for aff in a.shape)


def _explained(aff: Aff, value: int, syms: Mapping[str, int], origin: Mapping[str, str]) -> str:
    """``K = 200 (bound by A's dimension 1)``, ``N - 2 = 5 (N = 7, bound by A's dimension 0)``."""
    names = sorted(aff.vars())
    if not names:
        return str(value)
    text = _unparenthesized(str(aff))
    if aff.op == "var":
        return f"{text} = {value} ({origin.get(names[0], 'bound')})"
    why = "; ".join(f"{v} = {syms[v]}, {origin.get(v, 'bound')}" for v in names)
    return f"{text} = {value} ({why})"


def _unparenthesized(text: str) -> str:
    """``(N - 3)`` -> ``N - 3``; ``(N) + (M)`` stays as it is."""
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1] if text.startswith("(") else text


def outside_assume(scop: Scop, syms: Mapping[str, int]) -> ShapeError:
    """The error of sizes outside the operator's ``assume`` context."""
    sizes = ", ".join(f"{scop.user_name(s)}={syms[s]}" for s in scop.syms)
    assume = scop.assume or "every size >= 0"
    return ShapeError(f"sizes {sizes} are outside the operator's assumptions "
                      f"({assume}; sizes are >= 0)")
