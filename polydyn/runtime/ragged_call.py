"""Binding a ragged operator's call: lengths, syms, checked values arrays, per-sequence block
sizes and offsets, outputs; shared by the reference (the oracle, run per sequence) and the
compiled kernels. Every check runs before anything is written."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ShapeError
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Array, Scop
from .jagged import Jagged, from_nested, is_nested_tensor, to_nested


@dataclass
class RaggedCall:
    """A checked call: ``lengths``, the other syms, each argument's contiguous data (a batched
    argument's values), scalar values, block sizes and element offsets per batched array."""

    lengths: np.ndarray
    syms: dict[str, int]
    data: dict[str, np.ndarray]
    values: dict[str, Any]
    sizes: dict[str, np.ndarray]
    offsets: dict[str, np.ndarray]
    given: dict[str, Any] = field(default_factory=dict)  # output buffers as the caller gave them
    copy_back: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    torch_in: bool = False


class RaggedBinder:
    """Binds a ragged call's arguments. ``check`` raises ShapeError for sizes outside the
    operator's context (default: isl's test; a loaded artifact's kernel passes its own)."""

    def __init__(self, scop: Scop, batch: str, length: str, batched: frozenset[str],
                 check: Callable[[Mapping[str, int]], None] | None = None):
        self.scop, self.batch, self.length, self.batched = scop, batch, length, batched
        self.check = check or (lambda syms: _isl_check(scop, syms))
        arrays = scop.arg_arrays
        self.positional = [a for a in arrays if a.kind in ("in", "inout", "value")]
        self.outputs = [a for a in arrays if a.kind == "out"]
        self.np = {a.name: np.dtype(NUMPY_NAME[a.dtype]) for a in arrays}
        # row layout: the ragged extent is the block's first dimension and no other
        self.ragged = {a.name for a in arrays if a.name in batched and
                       any(length in d.vars() for d in a.shape)}
        self.rows = {n for n in self.ragged if self._row(scop.array(n))}
        # per-call work remembered across calls (bounded): blocks' shapes, checked sizes
        self._shapes: dict[tuple[Any, ...], tuple[int, ...]] = {}
        self._checked: set[tuple[int, ...]] = set()

    def _row(self, a: Array) -> bool:
        first = a.shape[0]
        return first.op == "var" and first.args[0] == self.length and \
            not any(self.length in d.vars() for d in a.shape[1:])

    def user(self, name: str) -> str:
        return self.scop.user_name(name)

    # --- binding -----------------------------------------------------------------------------
    def _given(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
               ) -> tuple[dict[str, Any], list[str]]:
        """The arguments by name, and the syms that may come as keywords."""
        op = self.scop.name
        if len(args) > len(self.positional):
            raise ShapeError(f"{op}() takes {len(self.positional)} positional argument(s), got "
                             f"{len(args)}; pass outputs and sizes by keyword")
        given = {a.name: x for a, x in zip(self.positional, args, strict=False)}
        by_user = {self.user(a.name): a.name for a in self.outputs}
        # every size but the ragged extent may be given (one a 1-D values array hides)
        sized = [s for s in self.scop.syms if s != self.length]
        by_user.update({self.user(s): s for s in sized})
        for k, v in kwargs.items():
            if k not in by_user:
                raise ShapeError(f"{op}() got an unexpected keyword argument {k!r}; it accepts "
                                 f"{', '.join(sorted(by_user))}")
            given[by_user[k]] = v
        for a in self.positional:
            if a.name not in given:
                raise ShapeError(f"{op}() missing argument {self.user(a.name)!r}")
        return given, sized

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> RaggedCall:
        given, sized = self._given(args, kwargs)
        torch_in = any(is_nested_tensor(x) for x in given.values())
        jagged = {n: self._jagged(n, x) for n, x in given.items() if n in self.ragged}
        lengths = self._lengths(jagged)
        syms = {s: self._int_size(s, given[s]) for s in sized if s in given}
        raw = {n: (jagged[n].values if n in jagged else given[n]) for n in given
               if n not in sized}
        data: dict[str, np.ndarray] = {}
        values: dict[str, Any] = {}
        for n, x in raw.items():
            a = self.scop.array(n)
            if a.kind == "value":
                values[n] = self.np[n].type(x)
                continue
            data[n] = self._array(n, x)
        self._solve(syms, data, lengths, self._shown(jagged))
        for n, j in jagged.items():
            if j.block_shapes is not None and n not in self.rows and \
                    j.block_shapes != self.block_shapes(self.scop.array(n), syms, lengths):
                raise ShapeError(f"argument {self.user(n)!r}: its blocks' shapes "
                                 f"{j.block_shapes} are not {self.scop.array(n).shape} for "
                                 f"lengths {lengths.tolist()}")
        sizes = {n: self._block_sizes(self.scop.array(n), syms, lengths)
                 for n in self.batched}
        for n, x in data.items():
            self._check(n, x, syms, lengths, sizes.get(n))
        offsets = {}
        for n, s in sizes.items():
            offsets[n] = np.zeros(len(s), np.int64)
            np.cumsum(s[:-1], out=offsets[n][1:])
        call = RaggedCall(lengths, syms, data, values, sizes, offsets, torch_in=torch_in)
        self._prepare(call, given)
        return call

    def _jagged(self, name: str, x: Any) -> Jagged:
        if isinstance(x, Jagged):
            return x
        if is_nested_tensor(x):
            return from_nested(x)
        raise ShapeError(f"argument {self.user(name)!r} has a ragged extent: pass a pd.Jagged "
                         f"(or a jagged nested tensor), got {type(x).__name__}")

    def _lengths(self, jagged: Mapping[str, Jagged]) -> np.ndarray:
        if not jagged:
            raise ShapeError(f"{self.scop.name}() needs at least one ragged argument "
                             "(pd.Jagged) to know the sequence lengths")
        (first, j0), *rest = jagged.items()
        for name, j in rest:
            if not np.array_equal(j.lengths, j0.lengths):
                raise ShapeError(f"arguments {self.user(first)!r} and {self.user(name)!r} "
                                 f"disagree on the sequence lengths: {j0.lengths.tolist()} "
                                 f"vs {j.lengths.tolist()}")
        return j0.lengths

    def _int_size(self, s: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ShapeError(f"size {self.user(s)}= must be an integer, got {v!r}")
        return int(v)

    def _array(self, name: str, x: Any) -> np.ndarray:
        if not isinstance(x, np.ndarray):
            if isinstance(x, Jagged) or is_nested_tensor(x):
                raise ShapeError(f"argument {self.user(name)!r} has no ragged extent: pass a "
                                 "dense array")
            x = np.asarray(x)
        if x.dtype != self.np[name]:
            raise ShapeError(f"argument {self.user(name)!r}: expected dtype {self.np[name]}, "
                             f"got {x.dtype}")
        return x

    def _dims(self, name: str) -> list[tuple[int, Any]]:
        """(axis of the data, per-sequence dimension) pairs whose extent can be read."""
        a = self.scop.array(name)
        if name in self.rows:
            return [(d, a.shape[d]) for d in range(1, a.rank)]
        if name in self.ragged:
            return []
        if name in self.batched:
            return [(d + 1, a.shape[d]) for d in range(a.rank)]
        return list(enumerate(a.shape))

    def _shown(self, jagged: Mapping[str, Jagged]) -> list[tuple[str, int, Any, int]]:
        """Dimensions a Jagged's block shapes show: ``(argument, axis, dimension, extent)``."""
        out = []
        for n, j in jagged.items():
            if j.block_shapes and n not in self.rows:
                shape = self.scop.array(n).shape
                out += [(n, d, aff, j.block_shapes[0][d]) for d, aff in enumerate(shape)
                        if d < len(j.block_shapes[0]) and self.length not in aff.vars()]
        return out

    def _solve(self, syms: dict[str, int], data: Mapping[str, np.ndarray],
               lengths: np.ndarray, shown: list[tuple[str, int, Any, int]]) -> None:
        """The syms other than the ragged extent, read from the dimensions that carry them."""
        progress = True
        while progress:
            progress = False
            for n, axis, aff, extent in shown:
                progress |= self._solve_dim(syms, n, axis, aff, extent)
            for n, x in data.items():
                for axis, aff in self._dims(n):
                    if axis < x.ndim and self.length not in aff.vars():
                        progress |= self._solve_dim(syms, n, axis, aff, x.shape[axis])
        missing = [s for s in self.scop.syms if s != self.length and s not in syms]
        if missing:
            names = ", ".join(self.user(s) for s in missing)
            raise ShapeError(f"{self.scop.name}() cannot read the size(s) {names} from its "
                             f"arguments: give them as keywords ({names.split(',')[0]}=...) "
                             "or pd.Jagged(values, lengths, block_shapes)")
        for length in np.unique(lengths).tolist():
            key = (length, *syms.values())
            if key not in self._checked:  # isl's test costs ~40 us a length
                self.check({**syms, self.length: length})
                if len(self._checked) < 65536:
                    self._checked.add(key)

    def _solve_dim(self, syms: dict[str, int], n: str, axis: int, aff: Any, extent: int
                   ) -> bool:
        """Bind the one unknown sym of ``aff`` (an affine dimension) from its extent."""
        lin = aff.linear()
        unknown = [s for s in lin[0] if s not in syms] if lin is not None else []
        if len(unknown) != 1:
            return False
        coef, const = lin
        s = unknown[0]
        num = extent - const - sum(c * syms[v] for v, c in coef.items() if v != s)
        if num % coef[s]:
            raise ShapeError(f"argument {self.user(n)!r}, dimension {axis}: expected {aff} "
                             f"for an integer {s}, got {extent}")
        syms[s] = num // coef[s]
        return True

    def _shape(self, a: Array, syms: Mapping[str, int], length: int) -> tuple[int, ...]:
        key = (a.name, length, *syms.values())
        shape = self._shapes.get(key)
        if shape is not None:
            return shape
        env = {**syms, self.length: int(length)}
        shape = tuple(d.eval(env) for d in a.shape)
        if any(e < 0 for e in shape):
            raise ShapeError(f"{self.user(a.name)!r}: a block's extent is negative at "
                             f"{self.user(self.length)} = {length}: {shape}")
        if len(self._shapes) < 65536:
            self._shapes[key] = shape
        return shape

    def block_shapes(self, a: Array, syms: Mapping[str, int], lengths: np.ndarray
                     ) -> list[tuple[int, ...]]:
        return [self._shape(a, syms, length) for length in lengths.tolist()]

    def _block_sizes(self, a: Array, syms: Mapping[str, int], lengths: np.ndarray
                     ) -> np.ndarray:
        if a.name not in self.ragged:
            size = int(np.prod(self._shape(a, syms, 0)))
            return np.full(len(lengths), size, np.int64)
        distinct, inverse = np.unique(lengths, return_inverse=True)  # once per length
        sizes = np.array([int(np.prod(self._shape(a, syms, n))) for n in distinct.tolist()],
                         np.int64)
        return sizes[inverse.reshape(-1)] if len(lengths) else np.zeros(0, np.int64)

    def _check(self, n: str, x: np.ndarray, syms: Mapping[str, int], lengths: np.ndarray,
               sizes: np.ndarray | None) -> None:
        a = self.scop.array(n)
        if n in self.rows:
            want = (int(lengths.sum()), *self._shape(a, syms, 0)[1:])
        elif n in self.ragged:
            want = (int(sizes.sum()),)
        elif n in self.batched:
            want = (len(lengths), *self._shape(a, syms, 0))
        else:
            want = self._shape(a, syms, 0)
        if x.shape != want:
            kind = "values" if n in self.ragged else "shape"
            raise ShapeError(f"argument {self.user(n)!r}: expected {kind} of shape {want} for "
                             f"lengths {lengths.tolist()} and sizes {self._sizes_text(syms)}, "
                             f"got {x.shape}")

    def _sizes_text(self, syms: Mapping[str, int]) -> str:
        return ", ".join(f"{self.user(s)}={v}" for s, v in syms.items()) or "-"

    # --- buffers -----------------------------------------------------------------------------
    def _prepare(self, call: RaggedCall, given: Mapping[str, Any]) -> None:
        """Contiguous data for every array; outputs allocated or their buffers checked."""
        written = [call.data[a.name] for a in self.positional if a.kind == "inout"] + \
            [call.data[a.name] for a in self.outputs if a.name in call.data]
        for a in [*self.positional, *self.outputs]:
            n = a.name
            if a.kind == "value":
                continue
            if n not in call.data:
                shape = self._alloc_shape(a, call)
                call.data[n] = np.empty(shape, self.np[n])  # the reference zeroes it
                continue
            x = call.data[n]
            if a.kind != "in":
                call.given[n] = given[n]
                if not x.flags.writeable:
                    raise ShapeError(f"{self.user(n)!r} is written but is read-only")
            elif any(np.may_share_memory(x, w) for w in written):
                call.data[n] = x = x.copy()
            if not x.flags.c_contiguous:
                y = np.ascontiguousarray(x)
                if a.kind != "in":
                    call.copy_back.append((x, y))
                call.data[n] = y

    def _alloc_shape(self, a: Array, call: RaggedCall) -> tuple[int, ...]:
        if a.name in self.rows:
            return (int(call.lengths.sum()), *self._shape(a, call.syms, 0)[1:])
        if a.name in self.ragged:
            return (int(call.sizes[a.name].sum()),)
        return (len(call.lengths), *self._shape(a, call.syms, 0))

    def results(self, call: RaggedCall) -> Any:
        """The outputs: given buffers as given, others as Jagged (or nested tensors)."""
        for view, dense in call.copy_back:
            view[...] = dense
        outs = []
        for a in self.outputs:
            n = a.name
            if n in call.given:
                outs.append(call.given[n])
                continue
            x = call.data[n]
            if n in self.rows:
                j = Jagged(x, call.lengths)
                outs.append(to_nested(j) if call.torch_in else j)
            elif n in self.ragged:
                outs.append(Jagged(x, call.lengths,
                                   self.block_shapes(a, call.syms, call.lengths)))
            else:
                outs.append(_torch_dense(x) if call.torch_in else x)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


def _torch_dense(x: np.ndarray) -> Any:
    import sys

    return sys.modules["torch"].from_numpy(x)


def _isl_check(scop: Scop, syms: Mapping[str, int]) -> None:
    from ..scop.interp import check_context  # isl: not imported where an artifact runs

    check_context(scop, syms)


def reference_call(op: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """Run the per-sequence reference on every sequence's blocks (the oracle)."""
    from ..scop.interp import run_reference

    info = op.info
    binder = RaggedBinder(op.scop, info.batch, info.length, info.batched)
    call = binder.bind(args, kwargs)
    scop = op.scop
    flat = {n: x.reshape(-1) if n in info.batched else x for n, x in call.data.items()}
    for b, length in enumerate(call.lengths.tolist()):
        pos, kw = sequence_args(binder, call, flat, b, length)
        run_reference(scop, tuple(pos), kw)
    return binder.results(call)


def sequence_args(binder: RaggedBinder, call: RaggedCall, flat: Mapping[str, Any], b: int,
                  length: int) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of sequence ``b``'s per-sequence call: each
    batched array's block of ``flat[name]`` (its values, flat: host or device arrays), the
    other arrays as they are, the scalar values and the index syms."""
    scop = binder.scop
    pos: list[Any] = []
    kw: dict[str, Any] = {}
    for a in scop.arg_arrays:
        n = a.name
        if a.kind == "value":
            x = call.values[n]
        elif n in binder.batched:
            off, size = int(call.offsets[n][b]), int(call.sizes[n][b])
            shape = binder._shape(a, call.syms, length)
            x = flat[n][off:off + size].reshape(shape) if size else \
                np.empty(shape, call.data[n].dtype)
        else:
            x = flat[n]
        if a.kind == "out":
            kw[scop.user_name(n)] = x
        else:
            pos.append(x)
    for s in scop.index_syms:
        kw[scop.user_name(s)] = call.syms[s]
    return pos, kw
