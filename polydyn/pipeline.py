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
             sequences: bool = False, **option_kw: Any) -> Generated:
    """Every stage up to the generated text, for ``target``: "c" (the CPU of
    ``target.host_cpu``), "opencl" (the default device's limits) or a ``CpuTarget`` or
    ``GpuTarget`` to plan for; builds nothing. ``on_unit`` (C): called with each variant's
    translation unit as soon as its text exists. ``sequences`` (OpenCL): ``op`` is a ragged
    operator's sequence, and the kernels get their twins over a grid of sequences."""
    # the stages, imported on first use: a cache hit needs none of them
    from .codegen_c.emit import CEmitter
    from .codegen_c.functions import Unit, variant_codes

    options = (options or Options()).replace(**option_kw)
    machine = resolve_target(target, options)
    options = options.replace(target=machine.kind)
    own_scop = _scop_of(op)  # the operator's: what the Kernel binds, checks and refers to
    name = own_scop.name
    options.dump(name, "1-scop.txt", own_scop)
    # regions for register-tile shapes, B's packing and time tiling are a CPU matter: none
    # for OpenCL
    cpu = isinstance(machine, CpuTarget)
    plan = machine if cpu else AVX512  # OpenCL maps its own tiles
    sides = _sides(own_scop, variants, options, cpu, plan)
    if isinstance(machine, GpuTarget):  # maps each variant to kernels with their own ASTs
        from .codegen_ocl.pipeline import generate_opencl

        (side,) = sides
        stage("OpenCL mapping and code")
        program = generate_opencl(side.scop, side.deps, side.variants, options,
                                  machine.max_group, computed=side.own, sequences=sequences)
        sources = {f"{name}.cl": program.source, f"{name}.host.py": program.host}
        if program.host_c is not None:
            sources[f"{name}.host.c"] = program.host_c
        return Generated(own_scop, tuple(m.variant for m in program.mappings), sources,
                         side.zero_init, side.notes, program)
    scheduled = [v for side in sides for v in side.variants]
    options.dump(name, "5-schedules.txt",
          "\n".join(f"{v.name}: {v.schedule}" for v in scheduled))
    zero_init = frozenset().union(*(side.zero_init for side in sides))
    notes = tuple(dict.fromkeys(n for side in sides for n in side.notes))

    # each variant's AST and C function (in worker processes where there are CPUs to
    # spare): its translation unit goes to ``on_unit`` at once (a build starts compiling it
    # while other variants' ASTs are built)
    planned_for = machine.describe()
    emitter = CEmitter(sides[0].scop, zero_init, planned_for)
    units = [Unit(side.scop, side.deps, v, emitter.function_name(k), zero_init, planned_for)
             for k, (side, v) in enumerate((s, v) for s in sides for v in s.variants)]
    made = 0

    def on_code(code: Any) -> None:
        nonlocal made
        made += 1
        stage(f"AST builds and C code ({made}/{len(units)} variants)")
        if on_unit is not None:
            on_unit(unit_source(emitter.head(), code.function))

    stage(f"AST builds and C code (0/{len(units)} variants)")
    codes = variant_codes(units, with_tree=options.dump_dir is not None, on_code=on_code)
    functions = [code.function for code in codes]
    options.dump(name, "6-ast.txt", "\n".join(
        f"// {v.name}\n{code.tree}" for v, code in zip(scheduled, codes, strict=True)))
    source = emitter.module_of(scheduled, functions)
    options.dump(name, "7-source.c", source)
    sources = {f"{name}.c": source, f"{name}.h": emitter.header(scheduled)}
    if shim_supported(own_scop):
        sources[f"{name}.shim.c"] = shim_source(own_scop, _module_name(own_scop, source))
    return Generated(own_scop, tuple(scheduled), sources, zero_init, notes)


# Products whose operand runs along the output's rows in another subscript (nn.Linear's
# ``W[o, k]``) take register tiles reading a repacked copy of it from this many rows (one
# register tile's); with fewer, dot products (``scop.hold``): the copy, made per call, then
# costs more than the tiles gain (768 x 768, 2 threads: 4 rows 0.058 ms as dot products,
# 0.083 as tiles; 8 rows 0.098 and 0.074).
REPACK_ROWS = 6


@dataclass
class _Side:
    """An operator rewritten for one way of running its products (``rewritten``), with its
    dependences, isl's schedule and its variants' plans and schedules."""

    scop: Scop
    notes: tuple[str, ...]
    buffered: bool  # double-buffered (``scop.buffers``)
    repacked: bool  # rewritten for repacked register tiles
    deps: Any
    own: Any  # isl's schedule
    base: Any  # the schedule the variants start from
    plans: list[Any]  # VariantPlan
    variants: list[Variant]
    zero_init: frozenset[str]

    @staticmethod
    def rewritten(own_scop: Scop, variants: list[tuple[str, Any]] | None, cpu: bool,
                  repack: bool) -> tuple[Scop, tuple[str, ...], bool]:
        """The operator as scheduled, a sentence per rewrite, and whether it was
        double-buffered. ``repack``: sums stay in their cells where register tiles can read
        the operands that run along the cells' rows from repacked copies (``W[o, k]`` for
        ``Y[n, o]``); otherwise such sums are dot products in scalars."""
        from .scop.buffers import double_buffer
        from .scop.contract import contract_temporaries
        from .scop.epilogue import split_epilogues
        from .scop.expand import expand_row_scalars
        from .scop.forward import forward_accumulators
        from .scop.fuse import fuse_through_temporaries
        from .scop.hoist import hoist_invariants
        from .scop.hold import hold_cells
        from .scop.inline import inline_reduction_values
        from .scop.padding import pad_guarded_reads
        from .scop.reuse import reuse_values
        from .scop.selects import canonical_selects

        scop, selects = canonical_selects(own_scop)  # max and min written as conditionals
        scop, padded = pad_guarded_reads(scop)  # sums cut at an array's edges: a padded copy
        # a value of the iteration in the sums that read it: one statement per sum (not under
        # loop recipes: they name the statements as written)
        scop, inlined = (scop, ()) if _loop_recipes(variants) else inline_reduction_values(scop)
        # a temporary's writing and reading nests as one (not under loop recipes: they name
        # the loops as written)
        scop, fused = (scop, ()) if _loop_recipes(variants) else fuse_through_temporaries(scop)
        scop, contracted = contract_temporaries(scop)  # per-iteration temporaries: scalars
        scop, reused = reuse_values(scop)  # a function's value in two loops: computed once
        # invariant math of element-wise nests in scalars of the loops it depends on (the
        # CPU's vector loops; not under loop recipes: they name the statements as written)
        scop, hoisted = hoist_invariants(scop) if cpu and not _loop_recipes(variants) \
            else (scop, ())
        scop, held = hold_cells(scop, repack)  # dot products in scalars, not in their cells
        # sums kept in their cells, not scalars (again while one moves: ``v = s + b[o]``
        # then ``Y[n, o] = f(v)`` takes v into the cell first, s after)
        forwarded: tuple[str, ...] = ()
        while True:
            scop, more = forward_accumulators(scop, repack=repack)
            if not more:
                break
            forwarded += more
        # scalars of an iteration whose loop runs along the rows: temporaries, so that the
        # schedule can run that loop innermost (the CPU's vectors; a GPU keeps them private)
        scop, expanded = expand_row_scalars(scop) if cpu else (scop, ())
        scop, epilogues = split_epilogues(scop)  # math after a product: a vector pass of its own
        # the automatic CPU schedule: a temporary copied back each time step becomes the other
        # half of a double buffer
        scop, buffers = double_buffer(scop) if _buffered(variants, cpu) else (scop, ())
        notes = (selects + padded + inlined + fused + contracted + reused + hoisted + held +
                 forwarded + expanded + epilogues + buffers)
        return scop, notes, bool(buffers)

    @classmethod
    def planned(cls, rewritten: tuple[Scop, tuple[str, ...], bool], repacked: bool,
                variants: list[tuple[str, Any]] | None, options: Options, cpu: bool,
                plan: CpuTarget) -> _Side:
        """The rewritten operator's dependences, schedule and variant plans."""
        from .parametric.regions import plan_variants
        from .schedule.auto import isl_schedule, scheduler_schedule
        from .schedule.wavefront import wavefront_plan
        from .scop.deps import compute_deps, zero_init_arrays

        scop, notes, buffered = rewritten
        if notes:
            options.dump(scop.name, "1b-buffers.txt", scop)
        stage("dependences")
        deps = compute_deps(scop)
        options.dump(scop.name, "2-deps.txt", deps)
        stage("isl scheduler")
        own = scheduler_schedule(scop, deps, scop.context)
        base = isl_schedule(scop, deps, scop.context, own, cpu=cpu)
        options.dump(scop.name, "3-base-schedule.txt", base)
        stage("regions")
        wave = wavefront_plan(scop, own, options.max_tile) if cpu and not variants else None
        plans = plan_variants(scop, base, variants, options.max_tile, cpu=cpu, wave=wave,
                              target=plan, computed=own)
        options.dump(scop.name, "4-regions.txt",
                     "\n".join(f"{p.name}: {p.region}" for p in plans))
        return cls(scop, notes, buffered, repacked, deps, own, base, plans, [],
                   zero_init_arrays(scop, deps))

    def scheduled(self, plans: list[Any], target: CpuTarget) -> _Side:
        """A copy of this side with ``plans`` scheduled."""
        from .schedule.variant import schedule_variant

        variants = []
        for k, p in enumerate(plans):
            stage(f"scheduling variant {k + 1}/{len(plans)} ({p.name})")
            variants.append(schedule_variant(self.scop, self.deps, self.base, p, target,
                                             buffered=self.buffered, repacked=self.repacked))
        return replace(self, plans=plans, variants=variants)


def _sides(own_scop: Scop, variants: list[tuple[str, Any]] | None, options: Options,
           cpu: bool, plan: CpuTarget) -> list[_Side]:
    """The operator's variants, from one rewrite of it or two, in dispatch order. Where a
    product's operand runs along its rows in another subscript (``scop.hold.repacked_rows``)
    the automatic CPU policy takes register tiles over repacked copies from ``REPACK_ROWS``
    rows, dot products below, then the former's generic variant (it covers the context);
    given variants take the rewrite their recipe names (``repack``) in runs of their order.
    Otherwise the dot products' rewrite alone."""
    import islpy as isl

    from .scop.hold import repacked_rows

    narrow = _Side.rewritten(own_scop, variants, cpu, repack=False)
    wanted = [_recipe_has(item, "repack") for item in variants or ()]
    if not cpu or (variants and not any(wanted)):
        only = _Side.planned(narrow, False, variants, options, cpu, plan)
        return [only.scheduled(only.plans, plan)]
    wide = _Side.rewritten(own_scop, variants, cpu, repack=True)
    if variants:  # the given order, in runs of one rewrite
        sides = {flag: _Side.planned(rewrite, flag, variants, options, cpu, plan)
                 for flag, rewrite in ((False, narrow), (True, wide)) if flag in wanted}
        runs: list[_Side] = []
        for k, flag in enumerate(wanted):
            if k and wanted[k - 1] == flag:
                continue
            end = next((j for j in range(k, len(wanted)) if wanted[j] != flag), len(wanted))
            runs.append(sides[flag].scheduled(sides[flag].plans[k:end], plan))
        return runs
    text = None if wide[1] == narrow[1] else repacked_rows(wide[0], REPACK_ROWS)
    dots = _Side.planned(narrow, False, variants, options, cpu, plan)
    if text is None:
        return [dots.scheduled(dots.plans, plan)]
    tiles = _Side.planned(wide, True, variants, options, cpu, plan)
    rows = isl.Set(text).intersect(own_scop.context)
    # the variants with two row loops exchanged (their regions: where the outer one is the
    # longer) have rows enough where either loop has
    either = isl.Set(repacked_rows(wide[0], REPACK_ROWS, any_row=True)).intersect(
        own_scop.context)
    *tiled, generic = tiles.plans
    tiled = [replace(p, region=region) for p in tiled
             if not (region := p.region.intersect(either if p.recipe.orders else rows)
                     .coalesce()).is_empty()]
    if not tiled:  # only the fallback would read the repacked copies, in plain loops
        return [dots.scheduled(dots.plans, plan)]
    few = own_scop.context
    for p in tiled:
        few = few.subtract(p.region)
    few = few.coalesce()
    names = {p.name for p in [*tiled, generic]}
    dotted = [replace(p, name=_dot_name(p.name, names), region=region)
              for p in dots.plans if not (region := p.region.intersect(few).coalesce()
                                          ).is_empty()]
    return [tiles.scheduled(tiled, plan), dots.scheduled(dotted, plan),
            tiles.scheduled([generic], plan)]


def _loop_recipes(variants: list[tuple[str, Any]] | None) -> bool:
    """Whether a given variant's recipe is a loop recipe (``pd.Schedule()``, then loop
    directives), not the policy's or a policy recipe."""
    return any(isinstance(item, tuple | list) and len(item) == 2 and
               hasattr(item[1], "is_policy") and not (item[1].is_policy or item[1].is_auto)
               for item in variants or ())


def _recipe_has(item: Any, directive: str) -> bool:
    return isinstance(item, tuple | list) and len(item) == 2 and \
        getattr(item[1], "has", lambda _: False)(directive)


def _dot_name(name: str, taken: set[str]) -> str:
    """A dot-product variant's name: ``dot`` for its generic one, ``dot NAME`` where the
    register tiles' variants have the name already."""
    label = "dot" if name == "generic" else name
    return f"dot {label}" if label in taken else label


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

    def cached() -> Kernel | None:
        hit = key and artifact.load(options.cache_dir, key, scop)
        return hit and Kernel(scop, hit["variants"], hit["sources"][f"{scop.name}.c"],
                              hit["sources"][f"{scop.name}.h"], hit["library"], op=op,
                              target="c", module=hit["module"], notes=hit["notes"],
                              machine=machine)

    kernel = cached()
    if kernel:
        return kernel
    with _building(options, key):  # another process's entry, or built here
        return cached() or _build_c(op, scop, machine, variants, options, extra, key)


def _building(options: Options, key: str | None) -> Any:
    """``cache.building`` for ``key``, saying so while another process builds it (nothing
    without a key)."""
    if key is None:
        return nullcontext()
    return cache.building(options.cache_dir, key,
                          on_wait=lambda: stage("waiting for another process's build"))


def _build_c(op: Any, scop: Scop, machine: CpuTarget, variants: list[tuple[str, Any]] | None,
             options: Options, extra: str, key: str | None) -> Kernel:
    """The C kernel generated and built (and published under ``key``, if any)."""
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
                    device: Any, options: Options, sequences: bool = False) -> Any:
    """The OpenCLKernel: from the cache entry keyed before scheduling (an artifact directory,
    ``runtime/bundle_ocl.py``) when there is one, else generated, built and published.
    ``sequences``: a ragged operator's sequence (``generate``)."""
    from .errors import ArtifactError
    from .runtime.loader import load_artifact

    scop = _scop_of(op)
    settings = _ocl_settings(options, machine) + (["sequences"] if sequences else [])
    key = None if options.dump_dir else kernel_key(scop, variants, settings)

    def cached() -> Any:
        entry = key and cache.find(options.cache_dir, key)
        try:
            kernel = entry and load_artifact(entry, device, own_scop=scop, op=op)
        except ArtifactError:  # another CPU, a library gone: build again
            kernel = None
        if kernel:
            kernel.regenerate = lambda: generate(op, machine, variants, options,
                                                 sequences=sequences).program.mappings
        return kernel

    kernel = cached()
    if kernel:
        return kernel
    with _building(options, key):  # another process's entry, or built here
        return cached() or _build_opencl(op, scop, machine, variants, device, options,
                                         sequences, key)


def _build_opencl(op: Any, scop: Scop, machine: GpuTarget,
                  variants: list[tuple[str, Any]] | None, device: Any, options: Options,
                  sequences: bool, key: str | None) -> Any:
    """The OpenCLKernel generated and built (and published under ``key``, if any)."""
    from .codegen_ocl.pipeline import build_opencl  # the OpenCL stages: a miss only
    from .runtime.bundle_ocl import write_opencl
    from .runtime.opencl import resolve_device

    gen = generate(op, machine, variants, options, sequences=sequences)
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
    """The RaggedKernel of a ragged operator: its per-sequence operator compiled, with the
    batch entry (C) or the kernels' twins over sequences (OpenCL)."""
    from .codegen_c.batch import batch_source
    from .runtime.ragged_kernel import RaggedKernel

    if isinstance(machine, GpuTarget):  # kernels with twins over a grid of sequences
        inner = _compile_opencl(op.scop, machine, variants, device, options, sequences=True)
        inner.machine = machine
        return RaggedKernel(op.scop, op.info, inner, op)
    info = op.info
    extra = batch_source(op.scop, info.length, info.batched)
    return RaggedKernel(op.scop, info, _compile_c(op, machine, variants, options, extra), op)


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
    wants = [_recipe_has(item, "double_buffer") for item in variants]
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
