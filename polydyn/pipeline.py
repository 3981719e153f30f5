"""compile(): the one straight list of stages, x = stage(x), with a dump of each stage."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .codegen_c.pyshim import shim_source, shim_supported
from .codegen_c.toolchain import (
    EarlyUnits,
    build_shared,
    compiler_version,
    in_units,
    libmvec_flags,
    python_includes,
    unit_source,
)
from .errors import ScheduleError, UnsupportedError, user_facing
from .options import Options
from .parametric.variants import Variant
from .progress import reporting, stage
from .runtime import artifact, cache
from .runtime.artifact import kernel_key
from .runtime.cache import content_key
from .runtime.kernel import Kernel
from .scop.ir import Scop
from .scop.ragged import RaggedOperator
from .target import AVX512, CpuTarget, GpuTarget, Target, resolve_target


def _scop_of(op: Any) -> Scop:
    from .scop.operator import Operator

    if isinstance(op, Operator | RaggedOperator):
        return op.scop
    if isinstance(op, Scop):
        return op
    raise UnsupportedError(f"compile() takes an operator made with @pd.operator, got {op!r}")


@dataclass(frozen=True)
class Generated:
    """What code generation produced for one operator and target, before any build.

    ``scop`` is the operator's own Scop (what the Kernel binds and checks); ``scheduled``
    the variants; ``sources`` the generated text by file name (C: ``NAME.c``, ``NAME.h``,
    and the CPython entry point ``NAME.shim.c`` where it applies; OpenCL: ``NAME.cl`` and
    the host code ``NAME.host.py``, and in C ``NAME.host.c`` where it has a C form);
    ``program`` the OpenCL program's launch plan (None
    for C).
    """

    scop: Scop
    scheduled: tuple[Variant, ...]
    sources: dict[str, str]
    zero_init: frozenset[str]
    notes: tuple[str, ...] = ()
    program: Any = None

    @property
    def source(self) -> str:
        return self.sources[f"{self.scop.name}.{'cl' if self.program else 'c'}"]


@user_facing
def generate(op: Any, target: str | Target = "c", variants: list[tuple[str, Any]] | None = None,
             options: Options | None = None, on_unit: Callable[[str], None] | None = None,
             **option_kw: Any) -> Generated:
    """Every stage up to the generated text, for ``target``: "c" (the CPU of
    ``target.host_cpu``), "opencl" (the default device's limits) or a ``CpuTarget`` or
    ``GpuTarget`` to plan for; builds nothing. ``on_unit`` (C): called with each variant's
    translation unit as soon as its text exists."""
    # the stages, imported on first use: a cache hit needs none of them
    from .astgen import build_ast
    from .codegen_c.emit import CEmitter
    from .parametric.regions import plan_variants
    from .schedule.auto import isl_schedule, scheduler_schedule
    from .schedule.variant import code_region, schedule_variant
    from .schedule.wavefront import wavefront_plan
    from .scop.buffers import double_buffer
    from .scop.contract import contract_temporaries
    from .scop.deps import compute_deps, zero_init_arrays
    from .scop.epilogue import split_epilogues
    from .scop.forward import forward_accumulators
    from .scop.hold import hold_cells
    from .scop.selects import canonical_selects

    options = (options or Options()).replace(**option_kw)
    machine = resolve_target(target, options)
    options = options.replace(target=machine.kind)
    own_scop = _scop_of(op)  # the operator's: what the Kernel binds, checks and refers to
    name = own_scop.name
    options.dump(name, "1-scop.txt", own_scop)
    # regions for register-tile shapes, B's packing and time tiling are a CPU matter: none
    # for OpenCL
    cpu = isinstance(machine, CpuTarget)
    # the automatic CPU schedule: a temporary copied back each time step becomes the other
    # half of a double buffer
    scop, selects = canonical_selects(own_scop)  # max and min written as conditionals
    scop, contracted = contract_temporaries(scop)  # per-iteration temporaries: scalars
    scop, held = hold_cells(scop)  # dot products in scalars, not in their cells
    scop, forwarded = forward_accumulators(scop)  # sums kept in their cells, not scalars
    scop, epilogues = split_epilogues(scop)  # math after a product: a vector pass of its own
    scop, buffers = double_buffer(scop) if _buffered(variants, cpu) else (scop, ())
    notes = selects + contracted + held + forwarded + epilogues + buffers
    if notes:
        options.dump(name, "1b-buffers.txt", scop)

    stage("dependences")
    deps = compute_deps(scop)
    options.dump(name, "2-deps.txt", deps)

    stage("isl scheduler")
    own = scheduler_schedule(scop, deps, scop.context)
    base = isl_schedule(scop, deps, scop.context, own)
    options.dump(name, "3-base-schedule.txt", base)

    plan = machine if cpu else AVX512  # OpenCL maps its own tiles
    stage("regions")
    wave = wavefront_plan(scop, own, options.max_tile) if cpu and not variants else None
    plans = plan_variants(scop, base, variants, options.max_tile, cpu=cpu, wave=wave,
                          target=plan, computed=own)
    options.dump(name, "4-regions.txt", "\n".join(f"{p.name}: {p.region}" for p in plans))

    scheduled: list[Variant] = []
    for k, p in enumerate(plans):
        stage(f"scheduling variant {k + 1}/{len(plans)} ({p.name})")
        scheduled.append(schedule_variant(scop, deps, base, p, plan, buffered=bool(buffers)))
    options.dump(name, "5-schedules.txt",
          "\n".join(f"{v.name}: {v.schedule}" for v in scheduled))
    zero_init = zero_init_arrays(scop, deps)

    if isinstance(machine, GpuTarget):  # maps each variant to kernels with their own ASTs
        from .codegen_ocl.pipeline import generate_opencl

        stage("OpenCL mapping and code")
        program = generate_opencl(scop, deps, scheduled, options, machine.max_group,
                                  computed=own)
        sources = {f"{name}.cl": program.source, f"{name}.host.py": program.host}
        if program.host_c is not None:
            sources[f"{name}.host.c"] = program.host_c
        return Generated(own_scop, tuple(scheduled), sources, zero_init, notes, program)

    # each variant's AST, then its C function: its translation unit goes to ``on_unit`` at
    # once (a build starts compiling it while the next variant's AST is built)
    emitter = CEmitter(scop, zero_init, machine.describe())
    asts, functions = [], []
    for k, v in enumerate(scheduled):
        stage(f"AST build {k + 1}/{len(scheduled)} ({v.name})")
        asts.append(build_ast(v.schedule, code_region(v.region), scop, deps))
        stage(f"C code {k + 1}/{len(scheduled)} ({v.name})")
        functions.append(emitter.variant_function(emitter.function_name(k), v, asts[-1]))
        if on_unit is not None:
            on_unit(unit_source(emitter.head(), functions[-1]))
    options.dump(name, "6-ast.txt",
          "\n".join(f"// {v.name}\n{a.to_C_str()}" for v, a in zip(scheduled, asts)))
    source = emitter.module_of(scheduled, functions)
    options.dump(name, "7-source.c", source)
    sources = {f"{name}.c": source, f"{name}.h": emitter.header(scheduled)}
    if shim_supported(own_scop):
        sources[f"{name}.shim.c"] = shim_source(own_scop, _module_name(own_scop, source))
    return Generated(own_scop, tuple(scheduled), sources, zero_init, notes)


@user_facing
def compile(op: Any, target: str | Target = "c", variants: list[tuple[str, Any]] | None = None,
            device: Any = None, options: Options | None = None, **option_kw: Any) -> Kernel:
    """Compile an operator for ``target`` ("c", "opencl", or a ``CpuTarget`` or ``GpuTarget``
    to plan for); returns a callable Kernel. OpenCL programs are built for ``device`` (a
    pyopencl Device, Context or CommandQueue; None: the default), whose limits "opencl"
    plans for."""
    options = (options or Options()).replace(**option_kw)
    with reporting(f"compiling {getattr(op, 'name', 'an operator')}"):
        return _compile(op, target, variants, device, options)


def _compile(op: Any, target: str | Target, variants: list[tuple[str, Any]] | None,
             device: Any, options: Options) -> Kernel:
    machine = resolve_target(target, options, device)
    if isinstance(op, RaggedOperator):
        return _compile_ragged(op, machine, variants, device, options)
    if isinstance(machine, GpuTarget):
        kernel = _compile_opencl(op, machine, variants, device, options)
        kernel.machine = machine  # what the program was planned for (build_opencl: built for)
        return kernel
    return _compile_c(op, machine, variants, options)


def _compile_c(op: Any, machine: CpuTarget, variants: list[tuple[str, Any]] | None,
               options: Options, extra: str = "") -> Kernel:
    """The C kernel, from the cache or built; ``extra``: C appended to the module (a ragged
    operator's batch entry)."""
    scop = _scop_of(op)
    settings = [*_c_settings(options, machine), extra]
    # keyed before scheduling: a hit skips every stage (not with POLYDYN_DUMP, which wants them)
    key = None if options.dump_dir else kernel_key(scop, variants, settings)
    hit = key and artifact.load(options.cache_dir, key, scop)
    if hit:
        return Kernel(scop, hit["variants"], hit["sources"][f"{scop.name}.c"],
                      hit["sources"][f"{scop.name}.h"], hit["library"], op=op, target="c",
                      module=hit["module"], notes=hit["notes"], machine=machine)
    # the variants' units compile while the next ones are generated (one process: no
    # units to start)
    with EarlyUnits(options, _shim_includes(scop, options) or ()) if in_units() \
            else nullcontext() as early:
        gen = generate(op, machine, variants, options,
                       on_unit=None if early is None else early.start)
        name = gen.scop.name
        if extra:  # the shim's module is named after the source: named again
            sources = {**gen.sources, f"{name}.c": gen.source + "\n" + extra}
            if f"{name}.shim.c" in sources:
                sources[f"{name}.shim.c"] = shim_source(scop,
                                                        _module_name(scop, sources[f"{name}.c"]))
            gen = replace(gen, sources=sources)
        stage("C compiler")
        library, module = build_c_module(gen.scop, gen.source, options,
                                         gen.sources.get(f"{name}.shim.c"), early)
    if key:
        artifact.save(options.cache_dir, key, gen.sources, list(gen.scheduled), gen.notes,
                      library, module)
    return Kernel(gen.scop, list(gen.scheduled), gen.source, gen.sources[f"{name}.h"],
                  library, op=op, target="c", module=module, notes=gen.notes, machine=machine)


def _compile_opencl(op: Any, machine: GpuTarget, variants: list[tuple[str, Any]] | None,
                    device: Any, options: Options) -> Any:
    """The OpenCLKernel: from the cache entry keyed before scheduling (an artifact directory,
    ``runtime/bundle_ocl.py``) when there is one, else generated, built and published."""
    from .errors import ArtifactError
    from .runtime.bundle_ocl import write_opencl
    from .runtime.loader import load_artifact
    from .runtime.opencl import resolve_device

    scop = _scop_of(op)
    key = None if options.dump_dir else kernel_key(scop, variants,
                                                    _ocl_settings(options, machine))
    entry = key and cache.find(options.cache_dir, key)
    if entry:
        try:
            kernel = load_artifact(entry, device, own_scop=scop, op=op)
        except ArtifactError:  # another CPU, a library gone: build again
            kernel = None
        if kernel is not None:
            kernel.regenerate = lambda: generate(op, machine, variants, options).program.mappings
            return kernel
    from .codegen_ocl.pipeline import build_opencl  # the OpenCL stages: a miss only

    gen = generate(op, machine, variants, options)
    stage("OpenCL build")
    kernel = build_opencl(gen.scop, gen.program, gen.zero_init, resolve_device(device), op,
                          options, gen.notes)
    if key:
        cache.get_or_build(options.cache_dir, key, lambda tmp: write_opencl(kernel, tmp),
                           {"kernel": gen.scop.name})
    return kernel


def _ocl_settings(options: Options, machine: GpuTarget) -> list[str]:
    """What besides the operator and its variants decides an OpenCL kernel: the device's
    limits, the options (all but where files go) and the C compiler of the host library."""
    import dataclasses
    import shutil

    kept = [f"{f.name}={getattr(options, f.name)!r}" for f in dataclasses.fields(options)
            if f.name not in ("cache_dir", "dump_dir", "debug")]
    cc = compiler_version(options.cc) if shutil.which(options.cc) else "no cc"
    return ["opencl", repr(machine), cc, *kept]


def _compile_ragged(op: RaggedOperator, machine: Target,
                    variants: list[tuple[str, Any]] | None, device: Any,
                    options: Options) -> Any:
    """The RaggedKernel of a ragged operator: its per-sequence operator compiled (C: with the batch entry)."""
    from .codegen_c.batch import batch_source
    from .runtime.ragged_kernel import RaggedKernel

    if isinstance(machine, GpuTarget):  # the sequences run one after another (see guide)
        return RaggedKernel(op, compile(op.scop, machine, variants, device, options))
    info = op.info
    extra = batch_source(op.scop, info.length, info.batched)
    return RaggedKernel(op, _compile_c(op, machine, variants, options, extra))


def _c_settings(options: Options, machine: CpuTarget) -> list[str]:
    """What besides the operator and its variants decides a C kernel: the options that
    change code, the CPU the schedule plans for, the compiler and the Python it links to."""
    import sys

    return ["c", options.cc, *options.all_cflags, compiler_version(options.cc),
            *libmvec_flags(options.cc), repr(machine),
            f"max_tile={options.max_tile}", f"shim={python_includes() is not None}",
            sys.version]


def _buffered(variants: list[tuple[str, Any]] | None, cpu: bool) -> bool:
    """Whether to double-buffer the operator (``scop.buffers``): the automatic CPU policy
    does; given variants do when their recipes say ``double_buffer`` (all or none)."""
    if not variants:
        return cpu
    wants = [isinstance(item, tuple | list) and len(item) == 2 and
             getattr(item[1], "has", lambda _: False)("double_buffer") for item in variants]
    if any(wants) and not all(wants):
        raise ScheduleError("double_buffer rewrites the operator for every variant: give it "
                            "in every variant's recipe or in none")
    return all(wants)


def _module_name(scop: Scop, source: str) -> str:
    return f"pd_{scop.name}_{content_key([source])[:12]}"


def _shim_includes(scop: Scop, options: Options) -> tuple[str, ...] | None:
    """The include directories of the CPython shim compiled into ``scop``'s library; None
    where there is no shim (no Python headers, a sanitized build, an unsupported call)."""
    includes = python_includes()
    if includes is None or options.sanitize or not shim_supported(scop):
        return None
    return tuple(includes)


def build_c_module(scop: Scop, source: str, options: Options, shim: str | None = None,
                   early: EarlyUnits | None = None) -> tuple[Path, str | None]:
    """The kernel library, with the CPython fast-path shim compiled in when the Python
    headers are present (``module`` is then its extension module name); ``early``: units
    already started (``toolchain.EarlyUnits``)."""
    includes = _shim_includes(scop, options)
    if includes is None:
        return build_shared(source, scop.name, options, early=early), None
    module = _module_name(scop, source)
    full = source + "\n" + (shim or shim_source(scop, module))
    return build_shared(full, scop.name, options, extension=module, includes=includes,
                        early=early), module


@user_facing
def compile_c(path_or_source: Any, function: str | None = None, target: str | Target = "c",
              **kw: Any) -> Kernel:
    """Compile a C function's static control part (SPEC section 5); same options as compile."""
    from .scop.from_c import operator_from_c

    return compile(operator_from_c(path_or_source, function), target=target, **kw)
