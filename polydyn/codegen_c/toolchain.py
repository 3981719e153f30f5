"""The system C compiler: flags, version, and the (cached) build of a shared library."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from .. import __version__
from ..errors import CompileError
from ..options import Options
from ..runtime import cache


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

    def build(tmp: Path) -> list[str]:
        src = tmp / f"{name}.c"
        lib = tmp / filename
        src.write_text(source)
        cmd = [options.cc, *flags, str(src), "-o", str(lib), *(["-lmvec"] if mvec else []),
               "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"the C compiler failed on the code generated for {name} "
                               f"({' '.join(cmd[:1] + list(flags))})", proc.stderr)
        return [src.name, lib.name]

    entry = cache.get_or_build(options.cache_dir, key, build, {"name": name})
    return entry / filename
