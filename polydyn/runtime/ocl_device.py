"""OpenCL devices, contexts and program builds: which device a kernel runs on (``resolve_device``,
the default: the first GPU of any platform), its limits, and the programs built from generated
source once per process with the options each platform needs (``build_program``)."""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError, UnsupportedError
from .ocl_log import build_log, only_benign

BUILD_OPTIONS = ("-cl-std=CL1.2",)
# NVIDIA's compiler takes inline PTX: lane kernels combine within a warp by shuffles
# (codegen_ocl/combine.py); POLYDYN_OCL_SHUFFLE=local runs them through local memory (tests)
NVIDIA_OPTIONS = ("-DPD_NV_SHUFFLE",)
# The 32-bit index build (codegen_ocl.emit, INDEX_32_OR_64) runs calls whose arrays have fewer
# elements than this and whose sizes are smaller: a margin of 2^30 below int's range covers
# the tile bounds past an array's end that index arithmetic reaches.
INDEX32_DEFINES = ("-DPD_INDEX32",)
INDEX32_LIMIT = 2**30


def _cl() -> Any:
    try:
        import pyopencl
        import pyopencl.array
    except ImportError as exc:  # pragma: no cover - pyopencl is a dependency
        raise UnsupportedError(f"target='opencl' needs pyopencl ({exc})") from None
    return pyopencl


# --------------------------------------------------------------------------------------------
# Devices, contexts, programs


@dataclass(frozen=True)
class DeviceContext:
    """A context, the device programs are built for, and the queue of calls with NumPy
    arguments. (The device's limits, as the mapping plans for them: ``polydyn.target.
    GpuTarget.of_device``.)"""

    context: Any
    device: Any
    queue: Any

    @property
    def local_limit(self) -> int:
        """Bytes of __local memory a work-group may use for buffers sized at launch."""
        from ..codegen_ocl.limits import LOCAL_BUDGET

        return int(min(self.device.local_mem_size, LOCAL_BUDGET))

    def describe(self) -> str:
        return f"{self.device.name.strip()} ({self.device.platform.name.strip()})"


_LOCK = threading.Lock()
_CONTEXTS: dict[Any, DeviceContext] = {}
_PROGRAMS: dict[tuple[Any, ...], Any] = {}


def resolve_device(device: Any = None) -> DeviceContext:
    """``device``: a pyopencl Device, Context or CommandQueue; None: PYOPENCL_CTX if set, else
    the first GPU of any platform, else the first device of the first platform that has one
    (``default_device``). Contexts are shared per process."""
    cl = _cl()
    with _LOCK:
        if device is not None and not isinstance(device, cl.CommandQueue | cl.Context |
                                                 cl.Device):
            raise UnsupportedError(f"device= takes a pyopencl Device, Context or CommandQueue, "
                                   f"got {type(device).__name__}")
        key: Any = ("default",) if device is None else (type(device).__name__, device.int_ptr)
        hit = _CONTEXTS.get(key)
        if hit is not None:
            return hit
        if device is None:
            dc = _default_context(cl)
        elif isinstance(device, cl.CommandQueue):
            dc = DeviceContext(device.context, device.device, device)
        elif isinstance(device, cl.Context):
            dc = DeviceContext(device, device.devices[0], cl.CommandQueue(device))
        else:
            ctx = cl.Context([device])
            dc = DeviceContext(ctx, device, cl.CommandQueue(ctx))
        _CONTEXTS[key] = dc
        return dc


def _default_context(cl: Any) -> DeviceContext:
    if os.environ.get("PYOPENCL_CTX"):
        ctx = cl.create_some_context(interactive=False)
        return DeviceContext(ctx, ctx.devices[0], cl.CommandQueue(ctx))
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise UnsupportedError(f"no OpenCL platform is available ({exc}); install one (e.g. "
                               "Debian's pocl-opencl-icd) or use target='c'") from None
    device = default_device(cl, platforms)
    if device is None:
        raise UnsupportedError("no OpenCL device is available; install one (e.g. Debian's "
                               "pocl-opencl-icd) or use target='c'")
    ctx = cl.Context([device])
    return DeviceContext(ctx, device, cl.CommandQueue(ctx))


def default_device(cl: Any, platforms: list[Any]) -> Any:
    """The first GPU of any platform, else the first device of the first platform that has
    one (None if none has): with PoCL's CPU device and a GPU's platform both installed, the
    GPU, whichever platform the ICD loader lists first."""
    devices = []
    for platform in platforms:
        try:
            devices += platform.get_devices()
        except cl.Error:
            continue
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices or [None])[0]


def devices_in_use() -> list[str]:
    """The devices this process made contexts for, with their drivers (for reports)."""
    with _LOCK:
        return sorted({f"{dc.describe()}, driver {dc.device.driver_version.strip()}"
                       for dc in _CONTEXTS.values()})


def opencl_available() -> bool:
    """True when some OpenCL platform has a device (for tests and the CLI)."""
    try:
        resolve_device(None)
    except (UnsupportedError, Exception):
        return False
    return True


def build_program(context: Any, source: str, name: str, defines: tuple[str, ...] = ()) -> Any:
    """The program for ``source`` on ``context`` (with ``defines``: ``-D`` options), built
    once per process (pyopencl also keeps the binaries on disk); a build failure raises
    CompileError with the build log."""
    cl = _cl()
    platforms = [d.platform.name for d in context.devices]
    options = BUILD_OPTIONS + defines + \
        (NVIDIA_OPTIONS if platforms and all("NVIDIA" in p for p in platforms) else ()) + \
        (("-DPD_NV_SHUFFLE", "-DPD_SHUFFLE_LOCAL") if os.environ.get(
            "POLYDYN_OCL_SHUFFLE") == "local" else ())
    key = (source, context.int_ptr, tuple(d.int_ptr for d in context.devices), options)
    with _LOCK:
        hit = _PROGRAMS.get(key)
        if hit is not None:
            return hit
        program = cl.Program(context, source)
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                program.build(options=list(options))
        except cl.Error as exc:
            raise CompileError(f"the OpenCL compiler failed on the code generated for {name} "
                               f"(options {' '.join(options)})",
                               _build_log(program, context, exc)) from None
        for w in said:  # the build's warnings, but NVIDIA's note on every kernel
            if not (issubclass(w.category, cl.CompilerWarning) and
                    only_benign(f"{w.message}\n{_build_log(program, context, None)}")):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        _PROGRAMS[key] = program
        return program


def _build_log(program: Any, context: Any, exc: Exception | None) -> str:
    return build_log(_cl(), program, context, exc)
