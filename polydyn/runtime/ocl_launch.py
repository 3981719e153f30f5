"""The compiled host path of an OpenCL call: arguments packed into slots, one C call.

When every array of a call is a ``pyopencl.array.Array`` on one queue, of the operator's dtype
and rank, C-contiguous and at offset 0, and every shape sym is read straight from a dimension,
``CompiledHost.call`` binds the syms from the shapes, checks every shape, allocates the
outputs nobody passed and the temporaries (from the queue's pool), packs the sym values,
buffer handles and scalar values into the slots of ``codegen_ocl/host_c.py`` with one
``struct.pack_into`` and calls ``pd_launch`` through ctypes (the GIL released): the region
test, the arguments of each launch and the enqueues run in C. Any other call (NumPy
arguments, views, sizes outside the context, an input sharing a buffer with an output)
returns ``NotImplemented`` before anything is enqueued, and the Python host path serves it
(and raises the precise ShapeError); results are the same either way.

Per call in Python: the argument checks (a handful of attribute reads per array), one shape
function, one pack and one ctypes call, under the operator's lock (the kernel objects' argument
state is shared with the Python path).
"""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InternalError
from ..scop.affine import Aff
from ..scop.exprs import NUMPY_NAME
from .c_library import load_library

HEAD = 9  # slots before the syms: queue, kernels, variant, local limit, finish, error x3, units
ERR_CALL, ERR_KERNEL, ERR_ARG = 5, 6, 7
_CALLS = {1: "clSetKernelArg", 2: "clEnqueueNDRangeKernel", 3: "clEnqueueFillBuffer",
          4: "clFinish"}
# a value's bytes at the start of its 8-byte slot
_VALUE_FORMAT = {"f32": "f4x", "f64": "d", "i32": "i4x", "i64": "q"}
# OpenCL's out-of-memory codes: MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_RESOURCES,
# OUT_OF_HOST_MEMORY
_OUT_OF_MEMORY = (-4, -5, -6)


def icd_loader() -> str:
    """The OpenCL ICD loader pyopencl uses (its wheels bundle one), else the system's."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "/libOpenCL" in path and path.startswith("/"):
                    return path
    except OSError:
        pass
    return "libOpenCL.so.1"


def supported(kernel: Any) -> bool:
    """The compiled path binds what the C fast path binds: every shape sym read straight from
    a dimension of an input (``N``, not ``N + 2``) or given as a keyword (index syms)."""
    binder = kernel._binder
    return not binder.unbound and all(aff.op == "var" for *_, aff in binder.plan)


def _aff_py(aff: Aff, index: Mapping[str, int]) -> str:
    """An Aff as a Python expression over ``s`` (the sym values, in Scop order)."""
    op, a = aff.op, aff.args
    if op == "var":
        return f"s[{index[a[0]]}]"
    if op == "const":
        return str(a[0])
    if op == "neg":
        return f"(-{_aff_py(a[0], index)})"
    if op in ("min", "max"):
        return f"{op}({', '.join(_aff_py(x, index) for x in a)})"
    return f"({_aff_py(a[0], index)} {op} {_aff_py(a[1], index)})"


class CompiledHost:
    """The C host library of one operator, and the per-call packing for it."""

    def __init__(self, kernel: Any, library: Path):
        lib = load_library(library)
        if lib.pd_init(icd_loader().encode()) != 0:
            raise OSError("the OpenCL ICD loader cannot be opened")
        self._launch = lib.pd_launch
        self._launch.argtypes = [ctypes.c_void_p]
        self._launch.restype = ctypes.c_int
        self.k = kernel
        self.calls = 0  # calls served (tests check that the path is taken)
        scop = kernel.scop
        binder = kernel._binder
        syms = list(scop.syms)
        index = {s: k for k, s in enumerate(syms)}
        self.n_syms = len(syms)
        self.n_pos = len(binder.positional)
        position = {a.name: k for k, a in enumerate(binder.positional)}
        arrays = [a for a in scop.arg_arrays if a.kind != "value"]
        temps = kernel._temps
        # the arrays of a call (argument order): name, positional index (None: an output)
        self.arrays = [(a.name, position.get(a.name)) for a in arrays]
        self.dtypes = [np.dtype(NUMPY_NAME[a.dtype]) for a in arrays]
        self.out_positions = [(k, a.name) for k, a in enumerate(arrays) if a.kind == "out"]
        self.out_by_user = {scop.user_name(a.name): a.name for a in binder.outputs}
        self.sym_by_user = {scop.user_name(s): index[s] for s in scop.index_syms}
        # (sym index, argument position, dimension) of every sym read from a shape
        self.reads = [(index[s], position[name], d) for s, name, d, _ in binder.plan]
        self.values = [(position[a.name], a.dtype in ("f32", "f64"))
                       for a in scop.arg_arrays if a.kind == "value"]
        shapes = [a.shape for a in arrays] + [a.shape for a in temps]
        self.shapes = eval(  # the expected shape of every array and temporary
            f"lambda s: ({''.join(f'({_shape_py(sh, index)}), ' for sh in shapes)})")
        self.temps = [(len(arrays) + k, np.dtype(NUMPY_NAME[a.dtype]).itemsize)
                      for k, a in enumerate(temps)]
        # the kernel arguments after the syms: (positional index of a value, else None,
        # index among the arrays and temporaries)
        self.tail = []
        for a in scop.arg_arrays:
            self.tail.append((position[a.name], -1) if a.kind == "value" else
                             (None, len([t for t in self.tail if t[0] is None])))
        self.tail += [(None, len(arrays) + k) for k in range(len(temps))]
        # the argument position of each array and temporary
        self.arg_of = {k: j for j, (pos, k) in enumerate(self.tail) if pos is None}
        self.no_zero = (0,) * len(self.tail)
        # outputs and temporaries read before written are zeroed first (in C)
        self.zeroed = [k for k, a in enumerate([*arrays, *temps])
                       if a.kind in ("out", "temp") and a.name in kernel._zero_init]
        fmt = ["=2Q3q24xq", "q" * len(syms)]
        fmt += [_VALUE_FORMAT[a.dtype] if a.kind == "value" else "Q" for a in scop.arg_arrays]
        fmt += ["Q" * len(temps), "q" * len(self.tail)]
        self.pack = struct.Struct("".join(fmt))
        self.slots = (ctypes.c_int64 * (self.pack.size // 8))()
        self.address = ctypes.addressof(self.slots)
        self.finish = not self.out_positions
        # (id(queue), narrow) -> queue, kernel handles, their address
        self._queues: dict[tuple[int, bool], tuple[Any, Any, int]] = {}
        self._array_type = _cla().Array

    # --- per queue ----------------------------------------------------------------------------
    def _kernels_on(self, queue: Any, narrow: bool) -> int:
        """The address of the kernel handles on ``queue``'s context (a C array), of the
        32-bit index build with ``narrow``."""
        hit = self._queues.get((id(queue), narrow))
        if hit is not None and hit[0] is queue:
            return hit[2]
        knls = self.k._program(queue.context, narrow)
        handles = (ctypes.c_void_p * max(1, len(knls)))(*[x.int_ptr for x in knls])
        self._queues[(id(queue), narrow)] = (queue, handles, ctypes.addressof(handles))
        return ctypes.addressof(handles)

    # --- the call -----------------------------------------------------------------------------
    def call(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], variant: int) -> Any:
        """The call's outputs, or NotImplemented (nothing done) when the Python path must
        serve it. ``variant``: -1 (select) or the index of a variant whose region holds."""
        if len(args) != self.n_pos:
            return NotImplemented
        given: dict[str, Any] = {}
        sym_vals = [0] * self.n_syms
        if (kwargs or self.sym_by_user) and not self._keywords(kwargs, given, sym_vals):
            return NotImplemented
        if self.values and not self._values_ok(args):
            return NotImplemented
        for s, pos, d in self.reads:
            shape = getattr(args[pos], "shape", ())
            if len(shape) <= d:
                return NotImplemented
            sym_vals[s] = shape[d]
        try:
            expected = self.shapes(sym_vals)
        except TypeError:  # a shape that is not a tuple of ints
            return NotImplemented
        arrays = [args[pos] if pos is not None else given.get(name)
                  for name, pos in self.arrays]
        queue = self._queue_of(arrays, expected)
        if queue is None:
            return NotImplemented
        for k, dtype in self.missing(arrays):  # outputs nobody passed
            if min(expected[k], default=0) < 0:
                return NotImplemented
            arrays[k] = _cla().empty(queue, expected[k], dtype, allocator=self.k._pool(queue))
        return self._run(queue, sym_vals, arrays, expected, args, given, variant)

    def _values_ok(self, args: tuple[Any, ...]) -> bool:
        """Scalar arguments are Python ints (floats too, for a float value)."""
        for pos, is_float in self.values:
            t = type(args[pos])
            if not (t is int or (is_float and t is float)):
                return False
        return True

    def _keywords(self, kwargs: Mapping[str, Any], given: dict[str, Any],
                  sym_vals: list[int]) -> bool:
        """Sort the keywords into output buffers and index syms; False: some other."""
        for key, val in kwargs.items():
            out = self.out_by_user.get(key)
            if out is not None:
                given[out] = val
            elif key in self.sym_by_user and type(val) is int:
                sym_vals[self.sym_by_user[key]] = val
            else:
                return False
        return len(kwargs) - len(given) == len(self.sym_by_user)

    def _queue_of(self, arrays: list[Any], expected: tuple[Any, ...]) -> Any:
        """The queue of the first array when every array given is a device array on it, of
        the expected dtype and shape, C-contiguous at offset 0; else None."""
        queue = None
        array_type = self._array_type
        for x, dtype, shape in zip(arrays, self.dtypes, expected, strict=False):
            if x is None:
                continue
            if (type(x) is not array_type or x.dtype != dtype or x.shape != shape or
                    x.offset or not x.flags.c_contiguous or x.queue is None or
                    (queue is not None and x.queue is not queue)):
                return None
            queue = x.queue
        return queue

    def missing(self, arrays: list[Any]) -> list[tuple[int, Any]]:
        return [(k, self.dtypes[k]) for k, x in enumerate(arrays) if x is None]

    def _run(self, queue: Any, sym_vals: list[int], arrays: list[Any],
             expected: tuple[Any, ...], args: tuple[Any, ...], given: Mapping[str, Any],
             variant: int) -> Any:
        handles = [0 if x.base_data is None else x.base_data.int_ptr for x in arrays]
        temps = []  # kept until the call returns: the pool reuses them for later commands
        for k, itemsize in self.temps:
            size = max(0, itemsize * math.prod(expected[k]))
            temps.append((self.k._pool(queue).allocate(size), size) if size else (None, 0))
            handles.append(temps[-1][0].int_ptr if size else 0)
        tail = [args[pos] if pos is not None else handles[k] for pos, k in self.tail]
        zero = self.no_zero
        if self.zeroed:
            nbytes = [x.nbytes for x in arrays] + [size for _, size in temps]
            zero = [0] * len(tail)
            for k in self.zeroed:
                zero[self.arg_of[k]] = nbytes[k]
        kernels = self._kernels_on(queue, self.k.narrow_ok(expected, sym_vals))
        with self.k._lock:
            try:
                self.pack.pack_into(self.slots, 0, queue.int_ptr, kernels, variant,
                                    self.k.local_limit, self.finish, self.k.compute_units,
                                    *sym_vals, *tail, *zero)
            except (struct.error, OverflowError):  # a value the C path cannot take
                return NotImplemented
            rc = self._launch(self.address)
            if rc:
                if rc == 1:
                    return NotImplemented
                self._raise(rc)
            self.calls += 1
        outs = [given.get(name, arrays[k]) for k, name in self.out_positions]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _raise(self, rc: int) -> None:
        slots = self.slots
        call = _CALLS.get(slots[ERR_CALL], "an OpenCL call")
        where = []
        if slots[ERR_KERNEL] >= 0:
            where.append(f"kernel {self.k._kernels[slots[ERR_KERNEL]].name}")
        if slots[ERR_ARG] >= 0:
            where.append(f"argument {slots[ERR_ARG]}")
        what = f"{self.k.name}: {call} failed with OpenCL error {rc}" + \
            (f" ({', '.join(where)})" if where else "")
        if rc in _OUT_OF_MEMORY:
            raise MemoryError(what)
        raise InternalError(what)


def _shape_py(shape: tuple[Aff, ...], index: Mapping[str, int]) -> str:
    return "".join(f"{_aff_py(d, index)}, " for d in shape)


def _cla() -> Any:
    import pyopencl.array

    return pyopencl.array


def load(kernel: Any, library: Path | None) -> CompiledHost | None:
    """The compiled host of ``kernel`` (None: none built, or the ICD loader is missing)."""
    if library is None or not supported(kernel):
        return None
    try:
        return CompiledHost(kernel, library)
    except OSError:
        return None
