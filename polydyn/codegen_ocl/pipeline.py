"""generate_opencl(): the OpenCL stages after scheduling, x = stage(x), with dumps.

    variants --map_variant--> launches per variant (host loops, kernels with isl ASTs)
             --spilled_scalars--> local scalars live across launches (kept in global memory)
             --OpenCLEmitter--> the .cl program     --host_source--> the Python host code
             --host_c_source--> the same host code in C (None where Python must serve)
    build_opencl(): --build_shared--> the C host library   --OpenCLKernel--> the callable
                    (program built now, for a device)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import islpy as isl
import numpy as np

from ..codegen_c.toolchain import build_shared
from ..errors import UnsupportedError
from ..options import Options
from ..parametric.variants import Variant
from ..runtime.opencl import DeviceContext, KernelInfo, OpenCLKernel
from ..scop.deps import Deps
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Array, Scop
from .emit import OpenCLEmitter, temporaries
from .host import all_kernels, host_source
from .host_c import Untranslatable, host_c_source
from .legality import check_launches
from .mapping import map_variant
from .plan import KernelSpec, VariantMapping
from .regtiles import parse_override
from .scalars import spilled_scalars, spills_of_variants
from .sequences import twin_spec, twins


@dataclass(frozen=True)
class Program:
    """The OpenCL program of an operator: the launches of each variant (``mappings``), the
    ``.cl`` source, the Python ``host`` code, the scalar arguments of each kernel
    (``infos``) and the local scalars kept in global memory (``spilled``; ``spills``: those
    each variant uses); ``host_c``: the host code in C (None: Python serves every call)."""

    mappings: tuple[VariantMapping, ...]
    source: str
    host: str
    infos: tuple[KernelInfo, ...]
    spilled: tuple[Any, ...]
    spills: tuple[frozenset[str], ...]
    host_c: str | None = None
    temps: tuple[Array, ...] = ()  # the temporaries the launches take, after the rewrites


def generate_opencl(scop: Scop, deps: Deps, scheduled: list[Variant], options: Options,
                    max_group: int, computed: isl.Schedule | None = None,
                    sequences: bool = False) -> Program:
    """The program for the scheduled variants, for a device whose work-groups hold at most
    ``max_group`` work-items (each kernel gets its own AST from the mapping). ``computed``:
    isl's schedule under the operator's context, when the caller has it (the mapping reuses
    it instead of running isl's scheduler again: minutes on some fuzz operators).
    ``sequences``: the program of a ragged operator's sequence, with the kernels' twins over
    a grid of sequences (``sequences.py``) where it has no temporaries nor scalars kept in
    global memory (those are sized per sequence)."""
    parse_override(options.ocl_regtile)  # a bad value is an error even where nothing fits
    mappings = [map_variant(scop, deps, v, k, max_group=max_group, computed=computed,
                            regtile=options.ocl_regtile)
                for k, v in enumerate(scheduled)]
    options.dump(scop.name, "7-opencl-launches.txt",
          "\n".join(f"{m.variant.name}: {m.describe()}" for m in mappings))
    for m in mappings:  # work-items of a launch run in any order
        check_launches(list(m.kernels), deps.all, f"{scop.name}, variant {m.variant.name}")

    spilled = spilled_scalars(scop, [list(m.kernels) for m in mappings])
    pairs = twins(mappings) if sequences and not spilled and not temporaries(scop) else []
    source = OpenCLEmitter(scop, tuple(spilled), options.ocl_permute).module(mappings, pairs)
    options.dump(scop.name, "8-source.cl", source)

    host = host_source(scop, mappings, spilled)
    options.dump(scop.name, "9-host.py", host)

    infos = [kernel_info(scop, spec, len(spilled)) for spec in all_kernels(mappings)]
    infos += [twin_info(scop, spec) for _, spec in pairs]
    spills = spills_of_variants(scop, [list(m.kernels) for m in mappings], spilled)
    try:
        host_c = host_c_source(scop, host, [i.local_size for i in infos], len(spilled))
        options.dump(scop.name, "9-host.c", host_c)
    except Untranslatable:
        host_c = None
    return Program(tuple(mappings), source, host, tuple(infos), tuple(spilled), tuple(spills),
                   host_c, tuple(temporaries(scop)))


def build_opencl(scop: Scop, program: Program, zero_init: frozenset[str], dc: DeviceContext,
                 op: Any = None, options: Options | None = None,
                 notes: tuple[str, ...] = ()) -> OpenCLKernel:
    """The callable: ``program`` built now for ``dc``'s device, with the C host library
    (built with ``options.cc``, cached) unless ``options.ocl_host`` is "python"; ``notes``:
    how the compiler rewrote the program before scheduling it."""
    return OpenCLKernel(scop, list(program.mappings), program.source, program.host,
                        list(program.infos), zero_init, dc, op=op,
                        spilled=list(program.spilled), spills=list(program.spills),
                        host_c=program.host_c or "",
                        host_library=host_library(scop, program, options or Options()),
                        notes=notes, temps=list(program.temps))


def host_library(scop: Scop, program: Program, options: Options) -> Path | None:
    """The C host library of ``program`` (None: ``ocl_host`` is "python", the host code has
    no C form, or there is no C compiler)."""
    if options.ocl_host not in HOST_PATHS:
        raise UnsupportedError(f"POLYDYN_OCL_HOST={options.ocl_host!r}: choose one of "
                               f"{', '.join(HOST_PATHS)}")
    if options.ocl_host == "python" or program.host_c is None or not shutil.which(options.cc):
        return None
    flags = ("-O2", "-fPIC", "-shared", "-std=gnu11")
    return build_shared(program.host_c, f"{scop.name}_host", options.replace(
        cflags=flags, sanitize=False))


def kernel_info(scop: Scop, spec: KernelSpec, n_spilled: int) -> KernelInfo:
    """Scalar argument dtypes in the order of ``OpenCLEmitter.kernel_params``."""
    n_offsets = len(spec.grid.tiles) if spec.grid else 0
    dtypes: list[Any] = [np.int64] * (len(scop.syms) + spec.n_host + n_offsets)
    for a in scop.arg_arrays:
        dtypes.append(np.dtype(NUMPY_NAME[a.dtype]) if a.kind == "value" else None)
    dtypes += [None] * (len(temporaries(scop)) + n_spilled + len(spec.dynamic_local))
    return KernelInfo(spec.name, spec.local_size, tuple(dtypes), spec.regtiles is not None)


def twin_info(scop: Scop, spec: KernelSpec) -> KernelInfo:
    """The launch facts of ``spec``'s twin over sequences: its two tables, then the
    arguments after the kernel's scalars."""
    info = kernel_info(scop, spec, 0)
    n_scalars = len(scop.syms) + (len(spec.grid.tiles) if spec.grid else 0)
    return KernelInfo(twin_spec(spec).name, spec.local_size,
                      (None, None, *info.arg_dtypes[n_scalars:]), False)


HOST_PATHS = ("c", "python")

__all__ = ["HOST_PATHS", "Program", "build_opencl", "generate_opencl", "host_library",
           "kernel_info"]
