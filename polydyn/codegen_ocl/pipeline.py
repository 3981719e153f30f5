"""generate_opencl(): the OpenCL stages after scheduling, x = stage(x), with dumps.

    variants --map_variant--> launches per variant (host loops, kernels with isl ASTs)
             --spilled_scalars--> local scalars live across launches (kept in global memory)
             --OpenCLEmitter--> the .cl program     --host_source--> the Python host code
    build_opencl(): --OpenCLKernel--> the callable (program built now, for a device)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import islpy as isl
import numpy as np

from ..options import Options
from ..parametric.variants import Variant
from ..runtime.opencl import DeviceContext, KernelInfo, OpenCLKernel
from ..scop.deps import Deps
from ..scop.ir import NUMPY_NAME, Scop
from .emit import OpenCLEmitter, temporaries
from .host import all_kernels, host_source
from .legality import check_launches
from .mapping import KernelSpec, VariantMapping, map_variant
from .scalars import spilled_scalars, spills_of_variants


@dataclass(frozen=True)
class Program:
    """The OpenCL program of an operator: the launches of each variant (``mappings``), the
    ``.cl`` source, the Python ``host`` code, the scalar arguments of each kernel
    (``infos``) and the local scalars kept in global memory (``spilled``; ``spills``: those
    each variant uses)."""

    mappings: tuple[VariantMapping, ...]
    source: str
    host: str
    infos: tuple[KernelInfo, ...]
    spilled: tuple[Any, ...]
    spills: tuple[frozenset[str], ...]


def generate_opencl(scop: Scop, deps: Deps, scheduled: list[Variant], options: Options,
                    max_group: int, computed: isl.Schedule | None = None) -> Program:
    """The program for the scheduled variants, for a device whose work-groups hold at most
    ``max_group`` work-items (each kernel gets its own AST from the mapping). ``computed``:
    isl's schedule under the operator's context, when the caller has it (the mapping reuses
    it instead of running isl's scheduler again: minutes on some fuzz operators)."""
    mappings = [map_variant(scop, deps, v, k, max_group=max_group, computed=computed)
                for k, v in enumerate(scheduled)]
    options.dump(scop.name, "7-opencl-launches.txt",
          "\n".join(f"{m.variant.name}: {m.describe()}" for m in mappings))
    for m in mappings:  # work-items of a launch run in any order
        check_launches(list(m.kernels), deps.all, f"{scop.name}, variant {m.variant.name}")

    spilled = spilled_scalars(scop, [list(m.kernels) for m in mappings])
    source = OpenCLEmitter(scop, tuple(spilled), options.ocl_permute).module(mappings)
    options.dump(scop.name, "8-source.cl", source)

    host = host_source(scop, mappings, spilled)
    options.dump(scop.name, "9-host.py", host)

    infos = [kernel_info(scop, spec, len(spilled)) for spec in all_kernels(mappings)]
    spills = spills_of_variants(scop, [list(m.kernels) for m in mappings], spilled)
    return Program(tuple(mappings), source, host, tuple(infos), tuple(spilled), tuple(spills))


def build_opencl(scop: Scop, program: Program, zero_init: frozenset[str], dc: DeviceContext,
                 op: Any = None, notes: tuple[str, ...] = ()) -> OpenCLKernel:
    """The callable: ``program`` built now for ``dc``'s device; ``notes``: how the compiler
    rewrote the program before scheduling it."""
    return OpenCLKernel(scop, list(program.mappings), program.source, program.host,
                        list(program.infos), zero_init, dc, op=op,
                        spilled=list(program.spilled), spills=list(program.spills), notes=notes)


def kernel_info(scop: Scop, spec: KernelSpec, n_spilled: int) -> KernelInfo:
    """Scalar argument dtypes in the order of ``OpenCLEmitter.kernel_params``."""
    n_offsets = len(spec.grid.tiles) if spec.grid else 0
    dtypes: list[Any] = [np.int64] * (len(scop.syms) + spec.n_host + n_offsets)
    for a in scop.arg_arrays:
        dtypes.append(np.dtype(NUMPY_NAME[a.dtype]) if a.kind == "value" else None)
    dtypes += [None] * (len(temporaries(scop)) + n_spilled + len(spec.dynamic_local))
    return KernelInfo(spec.name, spec.local_size, tuple(dtypes))


__all__ = ["Program", "build_opencl", "generate_opencl", "kernel_info"]
