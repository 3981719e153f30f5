"""The system C compiler: flags, version, and the (cached) build of a shared library. (What
CPU its flags target is ``polydyn.target``'s question.)"""

from __future__ import annotations

import functools
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import CompileError
from ..options import Options
from ..runtime import cache
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
