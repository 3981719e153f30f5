"""The callable of a ragged operator: binds the lengths and checks every Jagged argument
(``ragged_call.py``), then one call into the generated batch entry (C), which runs each
sequence's own variant. OpenCL launches each kernel once for all the sequences that run it
at the same step of their variants (``ocl_sequences.py``)."""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import ShapeError, user_facing
from ..parametric.variants import Variant
from ..scop.ir import RaggedInfo, Scop
from . import ocl_sequences
from .c_library import load_library
from .conditions import EVAL_NAMES
from .ragged_call import RaggedBinder, RaggedCall, sequence_args

_CTYPE = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
          "i64": ctypes.c_int64}


class RaggedKernel:
    """A compiled ragged operator. ``k(*inputs, **outputs)`` takes ``pd.Jagged`` (or jagged
    nested tensors) for tensors with the ragged extent; ``inner`` is the per-sequence Kernel
    (its ``variants``, ``select`` and ``explain`` take ``L=`` as any size). ``scop`` is the
    per-sequence Scop and ``info`` relates it to the batch; ``work`` (a Python expression
    over the syms, default ``work_expression(scop)``) weighs each sequence for sharing the
    threads. A loaded artifact gives all but ``op`` from its manifest (no isl)."""

    def __init__(self, scop: Scop, info: RaggedInfo, inner: Any, op: Any = None,
                 work: str | None = None):
        self.op = op
        self.inner = inner
        self.scop = scop
        self.info = info
        self.name = scop.name
        self.target = inner.target
        self.variants: list[Variant] = inner.variants
        self.source = inner.source
        self.machine = getattr(inner, "machine", None)
        self.binder = RaggedBinder(scop, info.batch, info.length, info.batched,
                                   inner._check_context)
        self.work_expr = work_expression(scop) if work is None else work
        self._work_code = compile(self.work_expr, "<polydyn work>", "eval")
        self._work_memo: dict[tuple[int, ...], float] = {}
        self._batch = self._batch_function() if self.target == "c" else None
        # OpenCL: each kernel's twin over the groups of many sequences (ocl_sequences.py);
        # empty where no kernel has one
        twins = ocl_sequences.twin_ids(inner._kernels) if self.target == "opencl" else []
        self._twin_of = twins if any(t is not None for t in twins) else []
        # OpenCL: the sequences share launches (False: one sequence after another, the
        # baseline bench/ragged.py measures them against)
        self.together = True

    def manifest(self) -> dict[str, Any]:
        """What an artifact's manifest holds of the batch (``runtime/bundle.py``)."""
        return {"batch": self.info.batch, "length": self.info.length,
                "batched": sorted(self.info.batched), "work": self.work_expr}

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
        """The sequences on OpenCL: every array goes to the device once, the sequences'
        kernels run together (``ocl_sequences.py``), any sequence that cannot share launches
        runs the per-sequence kernel on its blocks there, and the written arrays come back
        once. (Without a device, the per-sequence kernel on each sequence's blocks.)"""
        device = self._on_device(call)
        alone: Any = range(len(call.lengths))
        if self.together and self._twin_of and len(call.lengths):
            for a in self.scop.arg_arrays:  # outputs read before written start at 0, once
                x = device.get(a.name)
                if a.kind == "out" and a.name in self.inner._zero_init and x.size:
                    x.fill(0)
            alone = ocl_sequences.launch_together(self.inner, call, device, self.info.length,
                                                  self.info.batched, self._twin_of)
        lengths = call.lengths.tolist()
        for b in alone:
            self._run_one(call, device, b, lengths[b])
        for a in self.scop.arg_arrays:  # the written arrays back from the device
            x = device.get(a.name)
            if a.kind in ("out", "inout") and x is not None and not isinstance(x, np.ndarray):
                x.get(ary=call.data[a.name].reshape(-1))

    def _run_one(self, call: RaggedCall, device: Mapping[str, Any], b: int,
                 length: int) -> None:
        """The per-sequence kernel on sequence ``b``'s blocks."""
        pos, kw = sequence_args(self.binder, call, device, b, length)
        self.inner(*pos, **kw)

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
        return float(eval(self._work_code, EVAL_NAMES, dict(sizes)))

    # --- introspection -----------------------------------------------------------------------
    def select(self, **syms: int) -> Variant:
        """The variant a sequence of these sizes runs (``L=`` its length)."""
        return self.inner.select(**syms)

    def explain(self, **syms: int) -> str:
        return self.inner.explain(**syms)

    def __repr__(self) -> str:
        return (f"<polydyn RaggedKernel {self.name} target={self.target} "
                f"variants={[v.name for v in self.variants]}>")


def work_expression(scop: Scop) -> str:
    """A Python expression over the syms: the points of the statements' bounding boxes (a
    triangle counts as its box; a statement with no instances as 0). Needs isl."""
    import islpy as isl

    from ..codegen_ocl.pyexpr import pw_aff_to_py, set_to_py

    terms = []
    for stmt in scop.statements:
        domain = stmt.domain
        where = domain.params()
        ctx = scop.context.intersect(where.align_params(scop.context.get_space()))
        if ctx.is_empty():
            continue
        one = isl.Val.one(domain.get_ctx())
        dims = [pw_aff_to_py(domain.dim_max(d).sub(domain.dim_min(d)).add_constant_val(one)
                             .coalesce(), ctx) for d in range(domain.dim(isl.dim_type.set))]
        box = " * ".join(f"max(0, {e})" for e in dims) or "1"
        terms.append(f"(({box}) if {set_to_py(where, scop.context)} else 0)")
    return " + ".join(terms) or "0"
