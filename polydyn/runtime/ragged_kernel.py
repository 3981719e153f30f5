"""The callable of a ragged operator: binds the lengths and checks every Jagged argument
(``ragged_call.py``), then one call into the generated batch entry (C), which runs each
sequence's own variant. OpenCL runs the per-sequence kernel on each sequence's blocks from
the host, one after another (no grid over sequences yet)."""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import Any

import islpy as isl
import numpy as np

from ..errors import ShapeError, user_facing
from ..parametric.variants import Variant
from .c_library import load_library
from .ragged_call import RaggedBinder, RaggedCall

_CTYPE = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
          "i64": ctypes.c_int64}


class RaggedKernel:
    """A compiled ragged operator. ``k(*inputs, **outputs)`` takes ``pd.Jagged`` (or jagged
    nested tensors) for tensors with the ragged extent; ``inner`` is the per-sequence Kernel
    (its ``variants``, ``select`` and ``explain`` take ``L=`` as any size)."""

    def __init__(self, op: Any, inner: Any):
        self.op = op
        self.inner = inner
        self.scop = op.scop
        self.info = op.info
        self.name = op.name
        self.target = inner.target
        self.variants: list[Variant] = inner.variants
        self.source = inner.source
        self.machine = getattr(inner, "machine", None)
        self.binder = RaggedBinder(self.scop, self.info.batch, self.info.length,
                                   self.info.batched)
        self._extents = [_box_extents(s.domain) for s in self.scop.statements]
        self._work_memo: dict[tuple[int, ...], float] = {}
        self._batch = self._batch_function() if self.target == "c" else None

    def _batch_function(self) -> Any:
        from ..codegen_c.batch import batch_params

        fn = getattr(load_library(self.inner.library), f"{self.name}_batch")
        types: list[Any] = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self._params = batch_params(self.scop, self.info.length, self.info.batched)
        for kind, n in self._params:
            if kind == "sym":
                types.append(ctypes.c_int64)
            elif kind == "value":
                types.append(_CTYPE[self.scop.array(n).dtype])
            else:
                types.append(ctypes.c_void_p)
        fn.argtypes = types
        fn.restype = ctypes.c_int
        return fn

    # --- calling -----------------------------------------------------------------------------
    @user_facing
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.binder.bind(args, kwargs)
        if self._batch is not None:
            self._run_c(call)
        else:
            self._run_each(call)
        return self.binder.results(call)

    def _run_c(self, call: RaggedCall) -> None:
        lengths = np.ascontiguousarray(call.lengths, np.int64)
        order = np.argsort(-lengths, kind="stable").astype(np.int64)
        work = np.ascontiguousarray(self.work(lengths, call.syms)[order], np.float64)
        argv: list[Any] = [len(lengths), lengths.ctypes.data, order.ctypes.data,
                           work.ctypes.data]
        for kind, n in self._params:
            if kind == "sym":
                argv.append(call.syms[n])
            elif kind == "value":
                argv.append(call.values[n])
            elif kind == "array":
                argv.append(call.data[n].ctypes.data)
            else:
                argv.append(call.offsets[n].ctypes.data)
        rc = self._batch(*argv)
        if rc == -2:
            raise MemoryError(f"{self.name}: a temporary array could not be allocated")
        if rc != 0:
            raise ShapeError(f"{self.name}: the kernel refused the call (code {rc})")

    def _run_each(self, call: RaggedCall) -> None:
        """The per-sequence kernel on each sequence's blocks (targets with no batch entry).
        OpenCL: every array goes to the device once, each sequence reads and writes its
        blocks there, and the written arrays come back once."""
        scop = self.scop
        device = self._on_device(call)
        for b, length in enumerate(call.lengths.tolist()):
            pos, kw = [], {}
            for a in scop.arg_arrays:
                n = a.name
                if a.kind == "value":
                    x = call.values[n]
                elif n in self.info.batched:
                    off, size = int(call.offsets[n][b]), int(call.sizes[n][b])
                    shape = self.binder._shape(a, call.syms, length)
                    x = device[n][off:off + size].reshape(shape) if size else \
                        np.empty(shape, call.data[n].dtype)
                else:
                    x = device[n]
                if a.kind == "out":
                    kw[scop.user_name(n)] = x
                else:
                    pos.append(x)
            for s in scop.index_syms:
                kw[scop.user_name(s)] = call.syms[s]
            self.inner(*pos, **kw)
        for a in scop.arg_arrays:  # the written arrays back from the device
            x = device.get(a.name)
            if a.kind in ("out", "inout") and x is not None and not isinstance(x, np.ndarray):
                x.get(ary=call.data[a.name].reshape(-1))

    def _on_device(self, call: RaggedCall) -> dict[str, Any]:
        """Flat device copies of the arrays (OpenCL), or the host arrays themselves."""
        queue = getattr(self.inner, "queue", None)
        if queue is None:
            return {n: x.reshape(-1) if n in self.info.batched else x
                    for n, x in call.data.items()}
        import pyopencl.array as cla

        out = {}
        for n, x in call.data.items():
            flat = x.reshape(-1) if n in self.info.batched else x
            out[n] = cla.to_device(queue, flat) if flat.size else flat
        return out

    def work(self, lengths: np.ndarray, syms: Mapping[str, int]) -> np.ndarray:
        """Work per sequence: the statements' bounding boxes at L = L[b] (once per length)."""
        if not len(lengths):
            return np.zeros(0, np.float64)
        distinct, inverse = np.unique(lengths, return_inverse=True)
        out = np.empty(len(distinct), np.float64)
        rest = tuple(syms[s] for s in self.scop.syms if s != self.info.length)
        for k, length in enumerate(distinct.tolist()):
            w = self._work_memo.get((length, *rest))
            if w is None:
                w = self._count({**syms, self.info.length: length})
                if len(self._work_memo) < 65536:
                    self._work_memo[(length, *rest)] = w
            out[k] = w
        return out[inverse.reshape(-1)]

    def _count(self, sizes: Mapping[str, int]) -> float:
        """The statements' bounding-box sizes at these sizes (a triangle counts as its box)."""
        total = 0.0
        for extents in self._extents:
            size = 1.0
            for extent in extents:
                space = extent.get_domain_space()
                point = isl.Point.zero(space)
                for i in range(space.dim(isl.dim_type.param)):
                    value = isl.Val.int_from_si(space.get_ctx(),
                                                sizes[space.get_dim_name(isl.dim_type.param, i)])
                    point = point.set_coordinate_val(isl.dim_type.param, i, value)
                val = extent.eval(point)
                size *= 0.0 if val.is_nan() else max(0.0, float(val.to_python()))
            total += size
        return total

    # --- introspection -----------------------------------------------------------------------
    def select(self, **syms: int) -> Variant:
        """The variant a sequence of these sizes runs (``L=`` its length)."""
        return self.inner.select(**syms)

    def explain(self, **syms: int) -> str:
        return self.inner.explain(**syms)

    def __repr__(self) -> str:
        return (f"<polydyn RaggedKernel {self.name} target={self.target} "
                f"variants={[v.name for v in self.variants]}>")


def _box_extents(domain: isl.Set) -> list[isl.PwAff]:
    """Per dimension of a statement domain, its number of indices (a function of the syms)."""
    one = isl.Val.one(domain.get_ctx())
    return [domain.dim_max(d).sub(domain.dim_min(d)).add_constant_val(one).coalesce()
            for d in range(domain.dim(isl.dim_type.set))]
