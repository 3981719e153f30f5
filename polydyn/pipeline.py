"""compile(): the one straight list of stages, x = stage(x), with a dump of each stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .astgen import build_ast
from .codegen_c.emit import CEmitter
from .codegen_c.pyshim import shim_source, shim_supported
from .codegen_c.toolchain import build_shared, cpu_target, python_includes
from .errors import UnsupportedError, user_facing
from .options import Options
from .parametric.regions import plan_variants
from .parametric.variants import Variant
from .runtime.cache import content_key
from .runtime.kernel import Kernel
from .schedule.auto import isl_schedule, scheduler_schedule
from .schedule.registers import AVX512
from .schedule.variant import code_region, schedule_variant
from .schedule.wavefront import wavefront_plan
from .scop.buffers import double_buffer
from .scop.deps import compute_deps, zero_init_arrays
from .scop.ir import Scop

TARGETS = ("c", "opencl")


def _scop_of(op: Any) -> Scop:
    from .scop.dsl import Operator

    if isinstance(op, Operator):
        return op.scop
    if isinstance(op, Scop):
        return op
    raise UnsupportedError(f"compile() takes an operator made with @pd.operator, got {op!r}")


@user_facing
def compile(op: Any, target: str = "c", variants: list[tuple[str, Any]] | None = None,
            device: Any = None, options: Options | None = None, **option_kw: Any) -> Kernel:
    """Compile an operator for ``target`` ("c" or "opencl"); returns a callable Kernel."""
    if target not in TARGETS:
        raise UnsupportedError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    options = (options or Options()).replace(target=target, **option_kw)
    own_scop = _scop_of(op)  # the operator's: what the Kernel binds, checks and refers to
    name = own_scop.name
    options.dump(name, "1-scop.txt", own_scop)
    # regions for register-tile shapes, B's packing and time tiling are a CPU matter: none
    # for OpenCL
    cpu = target == "c"
    # the automatic CPU schedule: a temporary copied back each time step becomes the other
    # half of a double buffer
    scop, notes = double_buffer(own_scop) if cpu and not variants else (own_scop, ())
    if notes:
        options.dump(name, "1b-buffers.txt", scop)

    deps = compute_deps(scop)
    options.dump(name, "2-deps.txt", deps)

    own = scheduler_schedule(scop, deps, scop.context)
    base = isl_schedule(scop, deps, scop.context, own)
    options.dump(name, "3-base-schedule.txt", base)

    machine = cpu_target(options) if cpu else AVX512  # OpenCL maps its own tiles
    wave = wavefront_plan(scop, own, options.max_tile) if cpu and not variants else None
    plans = plan_variants(scop, base, variants, options.max_tile, cpu=cpu, wave=wave,
                          target=machine)
    options.dump(name, "4-regions.txt", "\n".join(f"{p.name}: {p.region}" for p in plans))

    scheduled: list[Variant] = [schedule_variant(scop, deps, base, plan, machine)
                                for plan in plans]
    options.dump(name, "5-schedules.txt",
          "\n".join(f"{v.name}: {v.schedule}" for v in scheduled))

    if target == "opencl":  # maps each variant to kernels and builds their own ASTs
        from .codegen_ocl.pipeline import compile_opencl

        return compile_opencl(scop, deps, scheduled, [], options, device, op)

    asts = [build_ast(v.schedule, code_region(v.region), scop, deps) for v in scheduled]
    options.dump(name, "6-ast.txt",
          "\n".join(f"// {v.name}\n{a.to_C_str()}" for v, a in zip(scheduled, asts)))

    emitter = CEmitter(scop, zero_init_arrays(scop, deps), machine.describe())
    source = emitter.module(scheduled, asts)
    header = emitter.header(scheduled)
    options.dump(name, "7-source.c", source)

    library, module = build_c_module(own_scop, source, options)
    return Kernel(own_scop, scheduled, source, header, library, op=op, target="c",
                  module=module, notes=notes)


def build_c_module(scop: Scop, source: str, options: Options) -> tuple[Path, str | None]:
    """The kernel library, with the CPython fast-path shim compiled in when the Python
    headers are present (``module`` is then its extension module name)."""
    includes = python_includes()
    if includes is None or options.sanitize or not shim_supported(scop):
        return build_shared(source, scop.name, options), None
    module = f"pd_{scop.name}_{content_key([source])[:12]}"
    full = source + "\n" + shim_source(scop, module)
    return build_shared(full, scop.name, options, extension=module,
                        includes=tuple(includes)), module


@user_facing
def compile_c(path_or_source: Any, function: str | None = None, target: str = "c",
              **kw: Any) -> Kernel:
    """Compile a C function's static control part (SPEC section 5); same options as compile."""
    from .scop.from_c import operator_from_c

    return compile(operator_from_c(path_or_source, function), target=target, **kw)
