"""The system C compiler: flags, version, and the (cached) build of a shared library. (What
CPU its flags target is ``polydyn.target``'s question.)"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
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
UNIT_OBJECT = "unit.o"  # a unit's cache entry (EarlyUnits)


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


def unit_flags(options: Options, includes: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The C compiler's flags for a library of generated code (``includes``: the CPython
    extension's include directories)."""
    return (*options.all_cflags, *libmvec_flags(options.cc), *(f"-I{d}" for d in includes))


def build_shared(source: str, name: str, options: Options, *, extension: str | None = None,
                 includes: tuple[str, ...] = (), early: EarlyUnits | None = None) -> Path:
    """Compile ``source`` into ``lib<name>.so`` in the cache (or, with ``extension``, into
    the CPython extension module of that name); the path of the library. ``early``: units
    already started while the module was generated, linked rather than compiled again."""
    import sys

    mvec = libmvec_flags(options.cc)
    flags = unit_flags(options, includes)
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
        builds = early if early is not None and early.flags == flags else \
            EarlyUnits(options, includes)
        try:
            # the largest units first, as many at once as this process may use CPUs
            for k in sorted(range(len(units)), key=lambda k: -len(units[k])):
                builds.start(units[k], f"{name}.{k}")
            objects = [builds.finish(unit, check) for unit in units]
            check(_cc([options.cc, *flags, *map(str, objects), "-o", str(lib), *libs, "-lm"]))
            builds.publish()
        finally:
            if builds is not early:
                builds.close()
        return [src.name, lib.name]

    entry = cache.get_or_build(options.cache_dir, key, build, {"name": name})
    return entry / filename


class EarlyUnits:
    """The translation units of one module being compiled, each started on its own C
    compiler process as soon as its text is known (``pipeline`` starts a variant's unit
    while the next variant's AST is built), as many at once as this process may use CPUs.
    ``finish`` waits for a unit's object; a unit is compiled once, whoever asks first. One
    per build: the objects live in a private directory that ``close`` removes. Each object
    is also a cache entry of its own, keyed by the unit's text and flags: a module that
    shares a variant's function with one built before (the same operator under other
    options, with other variants, or a fixed size beside the dynamic ones) links it rather
    than compiling it again."""

    def __init__(self, options: Options, includes: tuple[str, ...] = ()):
        self.cc = options.cc
        self.flags = unit_flags(options, includes)
        self.cache_dir = options.cache_dir
        self.dir = Path(tempfile.mkdtemp(prefix="polydyn-units-"))
        self.pool = ThreadPoolExecutor(max_workers=usable_cpus(),
                                       thread_name_prefix="polydyn-cc")
        self.jobs: dict[str, tuple[Path, Future]] = {}  # unit text -> (object, compile)
        self.compiled: list[tuple[str, Path]] = []  # (cache key, object) not from the cache
        self.lock = threading.Lock()

    def start(self, unit: str, stem: str | None = None) -> None:
        """Compile ``unit`` in the background (nothing if it is started already)."""
        with self.lock:
            if unit in self.jobs:
                return
            src = self.dir / f"{stem or 'unit'}.{len(self.jobs)}.c"
            src.write_text(unit)
            obj = src.with_suffix(".o")
            self.jobs[unit] = (obj, self.pool.submit(self._object, unit, src, obj))

    def _object(self, unit: str, src: Path, obj: Path) -> subprocess.CompletedProcess:
        """Write ``unit``'s object to ``obj``: a hard link to (or copy of) its cache entry,
        else compiled from ``src`` (and kept by ``publish``)."""
        key = cache.content_key(["unit", __version__, unit, self.cc, *self.flags, UNIT_FLAG,
                                 compiler_version(self.cc)])
        cmd = [self.cc, *self.flags, UNIT_FLAG, "-c", str(src), "-o", str(obj)]
        entry = cache.find(self.cache_dir, key)
        if entry is not None:
            try:
                _link_or_copy(entry / UNIT_OBJECT, obj)
                return subprocess.CompletedProcess(cmd, 0, "", "")
            except OSError:  # pruned meanwhile: compiled below
                pass
        proc = _cc(cmd)
        if proc.returncode == 0:
            with self.lock:
                self.compiled.append((key, obj))
        return proc

    def publish(self) -> None:
        """Keep the objects compiled for this module in the cache (once it has linked: a
        module that fails leaves nothing behind)."""
        for key, obj in self.compiled:
            def files(tmp: Path, obj: Path = obj) -> list[str]:
                _link_or_copy(obj, tmp / UNIT_OBJECT)
                return [UNIT_OBJECT]

            with contextlib.suppress(OSError):  # a read-only cache: nothing kept
                cache.get_or_build(self.cache_dir, key, files, {"unit": obj.stem})
        self.compiled = []

    def finish(self, unit: str, check: Callable[[subprocess.CompletedProcess], None]) -> Path:
        """The object of ``unit`` (compiled now if it was not started), after ``check``."""
        self.start(unit)
        obj, job = self.jobs[unit]
        check(job.result())
        return obj

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> EarlyUnits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def unit_source(head: str, function: str) -> str:
    """The translation unit ``split_units`` cuts for ``function`` from a module that
    ``head`` begins and ``UNIT_BREAK`` divides (parts joined with newlines)."""
    return f"{head}\n\n{function}\n"


def split_units(source: str) -> list[str] | None:
    """The translation units of a module that ``UNIT_BREAK`` divides, each with the head; None
    where one compiler process does as well (no break, one unit, or one CPU)."""
    head, *parts = source.split(UNIT_BREAK)
    if len(parts) < 2 or not in_units():
        return None
    return [head + part for part in parts]


def in_units() -> bool:
    """Whether modules build unit by unit (this process may use more than one CPU)."""
    return usable_cpus() >= 2


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cc(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)
