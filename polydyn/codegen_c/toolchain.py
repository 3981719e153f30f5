"""The system C compiler: flags, version, the CPU its flags target, and the (cached) build of
a shared library."""

from __future__ import annotations

import functools
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import CompileError, UnsupportedError
from ..options import Options
from ..runtime import cache
from ..schedule.registers import ISAS, CpuTarget
from ..version import __version__

# Between the translation units of a generated module (codegen_c.emit): the text before the
# first break is every unit's head, each part after one a unit (a variant's function; the
# last: the variants' prototypes, the dispatcher and the Python shim).
UNIT_BREAK = "/* -- polydyn: translation unit -- */"
# Defines PD_VARIANT (static in the single file) for a unit of its own: linked, not exported.
UNIT_FLAG = '-DPD_VARIANT=__attribute__((visibility("hidden")))'


@functools.lru_cache(maxsize=8)
def libmvec_flags(cc: str) -> tuple[str, ...]:
    """``-DPD_LIBMVEC ... -lmvec`` when the compiler can link glibc's vector math library."""
    try:
        out = subprocess.run([cc, "-print-file-name=libmvec.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ()
    return ("-DPD_LIBMVEC",) if out and Path(out).is_absolute() and Path(out).exists() else ()


@functools.lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CompileError(f"C compiler {cc!r} is not usable: {exc}") from None
    return out.stdout.splitlines()[0] if out.stdout else cc


@functools.lru_cache(maxsize=8)
def compiler_isa(cc: str, flags: tuple[str, ...]) -> str:
    """The widest vector instruction set (a key of ``registers.ISAS``) that ``cc`` with
    ``flags`` compiles for, from its predefined macros; "sse" (16-byte vectors, 16
    registers) where it names none of them."""
    try:
        out = subprocess.run([cc, *flags, "-dM", "-E", "-x", "c", "/dev/null"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CompileError(f"C compiler {cc!r} is not usable: {exc}") from None
    macros = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    for macro, isa in (("__AVX512F__", "avx512"), ("__AVX2__", "avx2"), ("__AVX__", "avx2"),
                       ("__ARM_NEON", "neon")):
        if macro in macros:
            return isa
    return "sse"


@functools.lru_cache(maxsize=1)
def host_l2_bytes() -> int:
    """This machine's L2 per core, from Linux's cache description or glibc's ``getconf``
    (1 MiB where neither says)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() != "2" or \
                    (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit() and int(digits) > 0:
            return int(digits) * scale
    try:
        out = subprocess.run(["getconf", "LEVEL2_CACHE_SIZE"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return int(out) if out.isdigit() and int(out) > 0 else 1 << 20


def cpu_target(options: Options) -> CpuTarget:
    """The CPU the C schedule plans for: ``options.isa`` and ``options.l2_bytes``, or what
    the compiler's flags enable and this machine's L2."""
    isa = options.isa or compiler_isa(options.cc, options.all_cflags)
    if isa not in ISAS:
        raise UnsupportedError(f"unknown instruction set isa={isa!r} (POLYDYN_ISA); choose one "
                               f"of {', '.join(ISAS)}")
    l2 = options.l2_bytes or host_l2_bytes()
    if l2 < 1 << 14:
        raise UnsupportedError(f"l2_bytes={l2} (POLYDYN_L2_BYTES): expected at least 16384")
    return CpuTarget.of(isa, l2)


def python_includes() -> list[str] | None:
    """Include directories for a CPython extension (None when the headers are missing)."""
    import sysconfig

    import numpy

    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        return None
    return [include, numpy.get_include()]


def build_shared(source: str, name: str, options: Options, *, extension: str | None = None,
                 includes: tuple[str, ...] = ()) -> Path:
    """Compile ``source`` into ``lib<name>.so`` in the cache (or, with ``extension``, into
    the CPython extension module of that name); the path of the library."""
    import sys

    mvec = libmvec_flags(options.cc)
    flags = (*options.all_cflags, *mvec, *(f"-I{d}" for d in includes))
    key = cache.content_key(["c", __version__, source, options.cc, *flags,
                             compiler_version(options.cc), extension or "",
                             sys.version if extension else ""])
    filename = f"{extension}.so" if extension else f"lib{name}.so"
    libs = ["-lmvec"] if mvec else []

    def check(proc: subprocess.CompletedProcess) -> None:
        if proc.returncode != 0:
            raise CompileError(f"the C compiler failed on the code generated for {name} "
                               f"({' '.join([options.cc, *flags])})", proc.stderr)

    def build(tmp: Path) -> list[str]:
        src = tmp / f"{name}.c"
        lib = tmp / filename
        src.write_text(source)
        units = split_units(source)
        if units is None:
            check(_cc([options.cc, *flags, str(src), "-o", str(lib), *libs, "-lm"]))
            return [src.name, lib.name]
        paths = [tmp / f"{name}.{k}.c" for k in range(len(units))]
        for path, unit in zip(paths, units, strict=True):
            path.write_text(unit)
        # the largest units first, as many at once as this process may use CPUs
        order = sorted(paths, key=lambda p: -p.stat().st_size)
        with ThreadPoolExecutor(max_workers=_cpus()) as pool:
            procs = list(pool.map(lambda p: _cc([options.cc, *flags, UNIT_FLAG, "-c", str(p),
                                                 "-o", str(p.with_suffix(".o"))]), order))
        for proc in procs:
            check(proc)
        objects = [p.with_suffix(".o") for p in paths]
        check(_cc([options.cc, *flags, *map(str, objects), "-o", str(lib), *libs, "-lm"]))
        for path in (*paths, *objects):  # the entry keeps the whole source and the library
            path.unlink()
        return [src.name, lib.name]

    entry = cache.get_or_build(options.cache_dir, key, build, {"name": name})
    return entry / filename


def split_units(source: str) -> list[str] | None:
    """The translation units of a module that ``UNIT_BREAK`` divides, each with the head; None
    where one compiler process does as well (no break, one unit, or one CPU)."""
    head, *parts = source.split(UNIT_BREAK)
    if len(parts) < 2 or _cpus() < 2:
        return None
    return [head + part for part in parts]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cc(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)
