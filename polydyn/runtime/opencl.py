"""The OpenCL runtime: buffers and launches (devices and program builds: ``ocl_device.py``).

``OpenCLKernel`` has the C Kernel's surface (binding, checks, errors, ``params``, ``explain``,
``select``, ``run_variant``) and runs the selected variant's launches from the host code that
``codegen_ocl/host.py`` printed. NumPy arguments are copied to the device and back;
``pyopencl.array.Array`` arguments stay on the device, and the outputs of a call that passed
any are returned as ``pyopencl.array.Array`` too. A call whose arrays are all contiguous
device arrays on one queue runs the same host code compiled to C (``ocl_launch.py``) where the
operator has it; every other call runs it in Python here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ShapeError, user_facing
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Scop
from . import ocl_launch
from .conditions import SizeTests
from .kernel import KernelBase, with_sources
from .ocl_device import (  # noqa: F401 - the names callers import from here
    BUILD_OPTIONS,
    INDEX32_DEFINES,
    INDEX32_LIMIT,
    DeviceContext,
    _cl,
    build_program,
    default_device,
    devices_in_use,
    only_benign,
    opencl_available,
    resolve_device,
)

# The comments before each variant's kernels in a program (codegen_ocl.emit), and before the
# kernels over sequences: a variant's source is the text from its mark to the next.
VARIANT_MARK = "/* ---- variant "
SEQUENCES_MARK = "/* ---- over sequences */"

# --------------------------------------------------------------------------------------------
# The callable


@dataclass(frozen=True)
class KernelInfo:
    """What the host needs to launch one kernel: its name, OpenCL local size and the dtypes
    of its scalar arguments (None for buffers)."""

    name: str
    local_size: tuple[int, ...]
    arg_dtypes: tuple[Any, ...]
    # the kernel runs the 32-bit index build where a call allows it: register tiles, whose
    # index arithmetic it sped up by a fifth on an H100; the others run the 64-bit build, no
    # slower for them there (bench/HISTORY.md, GPU), and need no second program
    index32: bool = False


class OpenCLKernel(KernelBase):
    """A compiled operator on OpenCL. Same calling convention and errors as the C Kernel.

    Attributes beyond Kernel's: ``host_source`` (the Python host code), ``host_c`` (the same
    in C; "" where it has none), ``host_path`` ("c" when calls on device arrays run the
    compiled host code, else "python"), ``host_calls`` (calls the compiled host code ran),
    ``mappings`` (the launches of each variant), ``context``/``queue``/``device`` (the default
    device).
    """

    def __init__(self, scop: Scop, mappings: list[Any], source: str, host_source: str,
                 kernels: list[KernelInfo], zero_init: frozenset[str], dc: DeviceContext,
                 op: Any = None, spilled: list[Any] = (), spills: list[frozenset[str]] = (),
                 host_c: str = "", host_library: Path | None = None,
                 notes: tuple[str, ...] = (), tests: SizeTests | None = None,
                 temps: list[Any] = ()):
        super().__init__(scop, with_sources([m.variant for m in mappings],
                                            _variant_kernels(source)),
                         source, op, "opencl", notes, tests=tests)
        self._mappings = mappings
        self.regenerate: Any = None  # a cache hit's: makes the compiler's own mappings
        self.header = ""
        self.library = None
        self.host_source = host_source
        # the program's temporaries: the operator's, less those the rewrites contracted,
        # and those they added (a padded copy: scop.padding)
        self._temps = list(temps)
        self._arrays = {a.name: a for a in (*scop.arrays, *self._temps)}
        self._np = {a.name: np.dtype(NUMPY_NAME[a.dtype]) for a in self._arrays.values()
                    if a.kind != "local"}
        self._spilled = list(spilled)  # local scalars in global memory (SpilledScalar)
        self._np_spilled = {sc.name: np.dtype(NUMPY_NAME[sc.dtype]) for sc in spilled}
        # the spilled scalars each variant uses (the others get no buffer; default: all)
        self._spills = list(spills) or [frozenset(self._np_spilled)] * len(mappings)
        self._zero_init = zero_init
        self._kernels = kernels
        self._dc = dc
        self._lock = threading.Lock()
        self._cl_kernels: dict[Any, list[Any]] = {}
        self._index32 = scop.narrow_indices  # a 32-bit index build exists (narrow_ok)
        self._pools: dict[Any, Any] = {}  # device memory pools, per queue
        namespace: dict[str, Any] = {"_LOCAL_LIMIT": dc.local_limit,
                                     "_UNITS": int(dc.device.max_compute_units)}
        exec(compile(host_source, f"<polydyn host code for {scop.name}>", "exec"), namespace)
        self._host = namespace
        self._select = namespace["select"]
        self._runs = [namespace[f"variant_{k}"] for k in range(len(mappings))]
        # build now (a build failure is a compile-time error): the 32-bit index build where
        # there is one, which runs every call short of INDEX32_LIMIT; the other when needed
        self._program(dc.context, narrow=self._index32)
        self.host_c = host_c
        self.host_library = host_library  # the C host code's library (None: none)
        self._compiled = ocl_launch.load(self, host_library)

    @property
    def mappings(self) -> list[Any]:
        """The launches of each variant (``codegen_ocl.plan.VariantMapping``)."""
        if self.regenerate is not None:
            self._mappings, self.regenerate = list(self.regenerate()), None
        return self._mappings

    @property
    def host_path(self) -> str:
        return "python" if self._compiled is None else "c"

    @property
    def host_calls(self) -> int:
        return 0 if self._compiled is None else self._compiled.calls

    @property
    def local_limit(self) -> int:
        """Bytes of __local memory that buffers sized at launch may take (conv2d's windows);
        beyond it the plain twin of the kernel runs. Settable (0: never)."""
        return int(self._host["_LOCAL_LIMIT"])

    @local_limit.setter
    def local_limit(self, value: int) -> None:
        self._host["_LOCAL_LIMIT"] = int(value)

    @property
    def compute_units(self) -> int:
        """The work-groups that fill the device: a launch with alternatives (smaller register
        tiles, one point per work-item) runs the first whose groups reach it
        (``codegen_ocl/host.py``). The device's compute units; settable (tests force each
        choice)."""
        return int(self._host["_UNITS"])

    @compute_units.setter
    def compute_units(self, value: int) -> None:
        self._host["_UNITS"] = int(value)

    @property
    def context(self) -> Any:
        return self._dc.context

    @property
    def queue(self) -> Any:
        return self._dc.queue

    @property
    def device(self) -> Any:
        return self._dc.device

    # --- programs ------------------------------------------------------------------------------
    def _program(self, context: Any, narrow: bool = False) -> list[Any]:
        """The kernel objects of this operator on ``context`` (built on first use); with
        ``narrow``, those of its kernels that take it (``KernelInfo.index32``) from its
        build with 32-bit index arithmetic (``narrow_ok``), the others from the 64-bit one."""
        key = (context.int_ptr, narrow)
        hit = self._cl_kernels.get(key)
        if hit is not None:
            return hit
        if narrow and not any(info.index32 for info in self._kernels):
            objs = self._program(context, False)
        else:
            cl = _cl()
            program = build_program(context, self.source, self.name,
                                    INDEX32_DEFINES if narrow else ())
            wide = self._program(context, False) if narrow and not all(
                info.index32 for info in self._kernels) else None
            objs = []
            for j, info in enumerate(self._kernels):
                if wide is not None and not info.index32:
                    objs.append(wide[j])
                    continue
                knl = cl.Kernel(program, info.name)
                knl.set_scalar_arg_dtypes(list(info.arg_dtypes))
                objs.append(knl)
        self._cl_kernels[key] = objs
        return objs

    def narrow_ok(self, shapes: Iterable[tuple[int, ...]], sizes: Iterable[int]) -> bool:
        """Whether a call whose arrays have these shapes and whose syms these values runs
        the 32-bit index build: the operator allows it (``Scop.narrow_indices``) and every
        array's element count and every size stay under ``INDEX32_LIMIT`` (an index, an
        offset or a tile's bound beyond the last element then fits in 32 bits)."""
        return self._index32 and max(sizes, default=0) < INDEX32_LIMIT and \
            max((math.prod(s) for s in shapes), default=0) < INDEX32_LIMIT

    # --- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the compiled host raises no user error (it declines with NotImplemented), so it
        # runs outside the user_facing wrapper, as the C target's fast path does
        compiled = self._compiled
        if compiled is not None:
            result = compiled.call(args, kwargs, -1)
            if result is not NotImplemented:
                return result
        return self._checked_call(args, kwargs)

    @user_facing
    def _checked_call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        return self._call(args, kwargs, variant=None)

    def _call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], variant: int | None) -> Any:
        if variant is not None and self._compiled is not None:  # run_variant
            self._check_region(variant, self._bind(args, kwargs).syms)
            result = self._compiled.call(args, kwargs, variant)
            if result is not NotImplemented:
                return result
        cla = _cl().array
        on_device = {name: x for name, x in self._named(args, kwargs).items()
                     if isinstance(x, cla.Array)}
        bound = self._bind(args, kwargs)
        syms = bound.syms
        if variant is None:
            variant = self._select_index(syms)  # the host dispatcher tests the context too
        else:
            self._check_region(variant, syms)
        queue = self._queue_for(on_device)
        shapes = [self._binder.output_shape(a, syms) for a in self.scop.arrays
                  if a.kind != "local"]
        narrow = self.narrow_ok(shapes, syms.values()) and not self._spills[variant]
        knls = self._program(queue.context, narrow)
        call = _Call(self, queue, self._pool(queue), bound, on_device)
        with self._lock:
            call.upload(self._spills[variant])
            sym_vals = [syms[s] for s in self.scop.syms]
            self._runs[variant](call.launcher(knls, sym_vals), *sym_vals)
            return call.finish()

    def _pool(self, queue: Any) -> Any:
        """Buffers for copies, outputs and temporaries come from a pool per queue (an
        allocation per call costs more than a small kernel on a GPU); the queue is in order,
        so memory a pending kernel still uses is reused only by later commands."""
        pool = self._pools.get(queue.int_ptr)
        if pool is None:
            tools = _cl().tools
            pool = tools.MemoryPool(tools.ImmediateAllocator(queue))
            self._pools[queue.int_ptr] = pool
        return pool

    def _named(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        named = dict(zip(self._binder.names, args, strict=False))
        named.update(kwargs)
        return named

    def _queue_for(self, on_device: Mapping[str, Any]) -> Any:
        if not on_device:
            return self._dc.queue
        contexts = {x.context.int_ptr for x in on_device.values()}
        if len(contexts) > 1:
            raise ShapeError(f"{self.name}(): the pyopencl arrays passed belong to different "
                             "OpenCL contexts")
        first = next(iter(on_device.values()))
        if first.queue is not None:
            return first.queue
        if first.context.int_ptr == self._dc.context.int_ptr:
            return self._dc.queue
        return resolve_device(first.context).queue

    def _select_index(self, syms: Mapping[str, int]) -> int:
        index = self._select(*[syms[s] for s in self.scop.syms])
        if index < 0:
            self._check_context(syms)  # outside assume: its own message
            raise ShapeError(f"no variant of {self.name} covers the sizes "
                             f"{', '.join(f'{k}={v}' for k, v in syms.items())}")
        return index

    # --- introspection -----------------------------------------------------------------------
    def _bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """Bind with device arrays standing in as host arrays of their shape and dtype."""
        return self._binder.bind(tuple(_stand_in(x) for x in args),
                                 {k: _stand_in(v) for k, v in kwargs.items()})

    @user_facing
    def explain(self, **syms: int) -> str:
        text = super().explain(**syms)
        index = self.variants.index(self.select(**syms))
        syms = self._sizes(syms)
        lines = [text, f"  on {self._dc.describe()}:"]
        vals = [int(syms[s]) for s in self.scop.syms]

        def record(kid: int, hosts: tuple[int, ...], offsets: tuple[int, ...],
                   groups: tuple[int, ...], local_bytes: tuple[int, ...] = ()) -> None:
            info = self._kernels[kid]
            at = f" at {', '.join(f'h{j}={h}' for j, h in enumerate(hosts))}" if hosts else ""
            lines.append(f"    launch {info.name}{at}: {len(groups)}-D, groups "
                         f"{'x'.join(str(g) for g in reversed(groups))} of "
                         f"{'x'.join(str(t) for t in info.local_size)} work-items" +
                         (f", {sum(local_bytes)} bytes of local memory sized at launch"
                          if local_bytes else ""))

        self._runs[index](record, *vals)
        if len(lines) > 12:
            lines = [*lines[:11], f"    ... {len(lines) - 11} more launches"]
        return "\n".join(lines)

    def launch_plan(self) -> dict[str, Any]:
        """JSON-serializable launches of every variant (grid expressions in the syms)."""
        return {"device": self._dc.describe(),
                "build_options": list(BUILD_OPTIONS),
                "variants": [m.describe() for m in self._mappings]}


_STAND_INS: dict[tuple[Any, ...], np.ndarray] = {}


def _stand_in(x: Any) -> Any:
    """A device array as a zero-stride NumPy array of its shape and dtype, so that the Binder
    checks it exactly as it checks host arrays (without touching its data); one per shape
    and dtype, kept (nothing writes them: their one element is never read either)."""
    cla = _cl().array
    if not isinstance(x, cla.Array):
        return x
    key = (x.shape, x.dtype)
    hit = _STAND_INS.get(key)
    if hit is None:
        if len(_STAND_INS) >= 1024:
            _STAND_INS.clear()
        hit = _STAND_INS[key] = np.lib.stride_tricks.as_strided(
            np.zeros(1, x.dtype), shape=x.shape, strides=(0,) * len(x.shape))
    return hit


class _Call:
    """The buffers of one call: device copies of host arrays, device arrays used in place,
    temporaries; and what goes back to the host at the end."""

    def __init__(self, kernel: OpenCLKernel, queue: Any, pool: Any, bound: Any,
                 on_device: Mapping[str, Any]):
        self.k = kernel
        self.queue = queue
        self.pool = pool
        self.bound = bound
        self.on_device = on_device
        self.buffers: dict[str, Any] = {}
        self.back: list[tuple[str, Any, Any]] = []  # (name, destination, device array)

    def upload(self, spills: frozenset[str]) -> None:
        """Device buffers for the arguments, temporaries and the spilled scalars in
        ``spills`` (the variant's; the others are passed as null pointers)."""
        k = self.k
        written = [self.on_device[n] for n, kind in k._order
                   if kind in ("out", "inout") and n in self.on_device]
        for name, kind in k._order:
            if kind == "value":
                continue
            if name in self.on_device:
                self.buffers[name] = self._device_arg(name, kind, written)
            elif name in self.bound.arrays:
                self.buffers[name] = self._host_arg(name, kind)
            else:  # an output nobody passed
                self.buffers[name] = self._fresh(name)
        for a in k._temps:
            self.buffers[a.name] = self._fresh(a.name)
        counts = k._host["spill_sizes"](*[self.bound.syms[s] for s in k.scop.syms]) \
            if spills else [0] * len(k._spilled)
        for sc, count in zip(k._spilled, counts, strict=True):
            self.buffers[sc.buffer] = None if sc.name not in spills else _cl().array.empty(
                self.queue, (int(count),), k._np_spilled[sc.name], allocator=self.pool)

    def _fresh(self, name: str) -> Any:
        cla = _cl().array
        a = self.k._arrays[name]
        shape = self.k._binder.output_shape(a, self.bound.syms)
        dev = cla.empty(self.queue, shape, self.k._np[name], allocator=self.pool)
        if name in self.k._zero_init and dev.size:
            dev.fill(0)
        return dev

    def _host_arg(self, name: str, kind: str) -> Any:
        cla = _cl().array
        x = self.bound.arrays[name]
        if kind == "out":
            dev = self._fresh(name)
        else:
            dev = cla.to_device(self.queue, np.ascontiguousarray(x), allocator=self.pool)
        if kind != "in":
            self.back.append((name, x, dev))
        return dev

    def _device_arg(self, name: str, kind: str, written: list[Any]) -> Any:
        cl = _cl()
        x = self.on_device[name]
        if x.context.int_ptr != self.queue.context.int_ptr:
            raise ShapeError(f"argument {name!r}: its pyopencl array belongs to another "
                             "OpenCL context than the call's queue")
        if x.size and not x.flags.c_contiguous:
            raise ShapeError(f"argument {name!r}: a pyopencl array must be C-contiguous "
                             f"(got strides {x.strides}); pass a NumPy array or a "
                             "contiguous copy")
        aliased = kind == "in" and x.size and any(  # same buffer as an output (or inout)
            w.size and w.base_data.int_ptr == x.base_data.int_ptr for w in written)
        if x.size == 0 or (x.offset == 0 and not aliased):
            if kind == "out" and name in self.k._zero_init and x.size:
                x.fill(0, queue=self.queue)
            return x
        # an offset (a slice) or an input sharing memory with an output: work on a copy
        dev = self._fresh(name) if kind == "out" else None
        if dev is None:
            dev = _cl().array.empty(self.queue, x.shape, x.dtype, allocator=self.pool)
            cl.enqueue_copy(self.queue, dev.data, x.base_data, src_offset=x.offset,
                            byte_count=x.nbytes)
        if kind != "in":
            self.back.append((name, x, dev))
        return dev

    def launcher(self, knls: list[Any], sym_vals: list[int]) -> Any:
        cl = _cl()
        k = self.k
        tail = []
        for name, kind in k._order:
            tail.append(self.bound.values[name] if kind == "value" else
                        self.buffers[name].data if self.buffers[name].size else None)
        tail += [self.buffers[a.name].data if self.buffers[a.name].size else None
                 for a in k._temps]
        tail += [None if self.buffers[sc.buffer] is None else self.buffers[sc.buffer].data
                 for sc in k._spilled]

        def launch(kid: int, hosts: tuple[int, ...], offsets: tuple[int, ...],
                   groups: tuple[int, ...], local_bytes: tuple[int, ...] = ()) -> None:
            if min(groups) <= 0:
                return
            info = k._kernels[kid]
            local = info.local_size
            glob = tuple(g * t for g, t in zip(reversed(groups), local, strict=True))
            buffers = [cl.LocalMemory(int(b)) for b in local_bytes]
            knls[kid](self.queue, glob, local, *sym_vals, *hosts, *offsets, *tail, *buffers)

        return launch

    def finish(self) -> Any:
        cl = _cl()
        cla = cl.array
        for name, dest, dev in self.back:
            if isinstance(dest, cla.Array):
                cl.enqueue_copy(self.queue, dest.base_data, dev.data, dst_offset=dest.offset,
                                byte_count=dest.nbytes)
            elif dest.size:
                dest[...] = dev.get(queue=self.queue).reshape(dest.shape)
            self.buffers[name] = dest
        device_results = bool(self.on_device)
        outs = []
        for a in self.k._outputs:
            if a.name in self.bound.given_outputs:
                outs.append(self.on_device.get(a.name, self.bound.result(a.name, None)))
            elif device_results:
                outs.append(self.buffers[a.name])
            else:
                outs.append(self.bound.result(a.name, self.buffers[a.name].get(
                    queue=self.queue)))
        if not outs:
            self.queue.finish()
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


def _variant_kernels(source: str) -> list[str]:
    """An OpenCL program's kernels per variant: from each variant's mark to the next mark."""
    parts = source.split(SEQUENCES_MARK)[0].split(VARIANT_MARK)[1:]
    return [VARIANT_MARK + part for part in parts]
