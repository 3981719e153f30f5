"""The operator DSL: syms, dtypes, argument kinds and math names, the vocabulary an operator's
annotations and body use (the decorator is in ``scop/operator.py``)."""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .affine import Aff


class Sym(Aff):
    """An unknown size: an isl parameter. Arithmetic on syms builds (quasi-)affine Affs."""

    def __init__(self, name: str):
        super().__init__("var", (name,))

    @property
    def name(self) -> str:
        return self.args[0]

    def __repr__(self) -> str:
        return f"sym({self.name!r})"


def sym(names: str) -> Sym | tuple[Sym, ...]:
    """``pd.sym("N")`` gives one sym, ``pd.sym("N M K")`` a tuple of three."""
    parts = names.replace(",", " ").split()
    if not parts or not all(p.isidentifier() for p in parts):
        raise ValueError(f"sym names must be identifiers separated by spaces, got {names!r}")
    syms = tuple(Sym(p) for p in parts)
    return syms[0] if len(syms) == 1 else syms


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[Aff, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


class DType:
    """``f32``, ``f64``, ``i32``, ``i64``: ``f32[N, M]`` is a tensor type, ``f32(x)`` a cast."""

    def __init__(self, name: str, np_dtype: type):
        self.name = name
        self.np_dtype = np.dtype(np_dtype)

    def __getitem__(self, dims: Any) -> TensorType:
        if not isinstance(dims, tuple):
            dims = (dims,)
        return TensorType(self.name, tuple(Aff.lift(d) for d in dims))

    def __call__(self, x: Any) -> Any:
        return self.np_dtype.type(x)

    def __repr__(self) -> str:
        return self.name


f32 = DType("f32", np.float32)
f64 = DType("f64", np.float64)
i32 = DType("i32", np.int32)
i64 = DType("i64", np.int64)
DTYPE_OBJECTS = {d.name: d for d in (f32, f64, i32, i64)}


@dataclass(frozen=True)
class ArgKind:
    kind: str  # out, inout, temp
    type: TensorType


def out(t: TensorType) -> ArgKind:
    """An output argument: allocated and returned, or written into a given buffer."""
    return ArgKind("out", _tensor(t, "out"))


def inout(t: TensorType) -> ArgKind:
    """An argument read and updated in place."""
    return ArgKind("inout", _tensor(t, "inout"))


def temp(t: TensorType) -> ArgKind:
    """A temporary tensor, declared at the top of the body: ``T = temp(f32[N])``."""
    return ArgKind("temp", _tensor(t, "temp"))


def _tensor(t: Any, what: str) -> Any:
    """Checked by the frontend, which reports a non-tensor with the annotation's place."""
    return t


class _IndexMarker:
    """Annotation of a sym argument that no tensor shape carries: ``T: pd.index``."""

    def __repr__(self) -> str:
        return "pd.index"


index = _IndexMarker()
inf = math.inf


def grid(*extents: Any) -> Any:
    """``for i, j in pd.grid(N, M)``: a perfect loop nest (used only inside operators)."""
    import itertools

    return itertools.product(*(range(e) for e in extents))


# Math names: real functions (they also work on NumPy values); the frontend maps them by
# identity to body-expression calls.
def exp(x: Any) -> Any:
    return np.exp(x)


def log(x: Any) -> Any:
    return np.log(x)


def sqrt(x: Any) -> Any:
    return np.sqrt(x)


def tanh(x: Any) -> Any:
    return np.tanh(x)


def erf(x: Any) -> Any:
    return type(x)(math.erf(x)) if isinstance(x, np.floating) else math.erf(x)


def sin(x: Any) -> Any:
    return np.sin(x)


def cos(x: Any) -> Any:
    return np.cos(x)


def abs(x: Any) -> Any:  # ``pd.abs``; the builtin is ``builtins.abs`` in this module
    return np.abs(x)


MATH_OBJECTS: dict[Any, str] = {
    exp: "exp", log: "log", sqrt: "sqrt", tanh: "tanh", erf: "erf", sin: "sin", cos: "cos",
    np.exp: "exp", np.log: "log", np.sqrt: "sqrt", np.tanh: "tanh", np.abs: "abs",
    np.sin: "sin", np.cos: "cos", np.floor: "floor", np.ceil: "ceil",
    math.exp: "exp", math.log: "log", math.sqrt: "sqrt", math.tanh: "tanh", math.erf: "erf",
    math.sin: "sin", math.cos: "cos", math.fabs: "abs", math.floor: "floor", math.ceil: "ceil",
    abs: "abs", builtins.abs: "abs",
}

# What an operator body may call, for messages: the math subset, min/max and casts.
ALLOWED_CALLS = ("pd.exp, pd.log, pd.sqrt, pd.tanh, pd.erf, pd.abs (or abs), pd.sin, pd.cos, "
                 "min, max and casts such as pd.f32(x); np.exp, np.sqrt, math.exp and the "
                 "like are accepted as the same functions")


class Ragged(Sym):
    """A ragged extent: ``L = pd.ragged("L", B)``; ``L[b]`` is the length of sequence ``b``.

    In a tensor type it is the per-sequence extent (``f32[B, L, D]``); inside
    ``for b in range(B)`` the frontend reads ``L[b]`` as the sym ``L``."""

    def __init__(self, name: str, batch: Sym):
        super().__init__(name)
        object.__setattr__(self, "batch", batch)  # Aff is a frozen dataclass

    def __getitem__(self, b: Any) -> Any:
        raise TypeError(f"{self.name}[b] is read only inside an operator's `for b in "
                        f"range({self.batch.name})` loop")

    def __repr__(self) -> str:
        return f"ragged({self.name!r}, {self.batch.name})"


def ragged(name: str, batch: Sym) -> Ragged:
    """``pd.ragged("L", B)``: per-sequence lengths of a batch of ``B`` sequences."""
    if not name.isidentifier():
        raise ValueError(f"a ragged extent's name must be an identifier, got {name!r}")
    if not isinstance(batch, Sym) or isinstance(batch, Ragged):
        raise ValueError(f"pd.ragged({name!r}, B): B must be a sym (pd.sym), got {batch!r}")
    return Ragged(name, batch)
