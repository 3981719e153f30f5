"""The system C compiler: flags, version, the CPU its flags target, and the (cached) build of
a shared library."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from .. import __version__
from ..errors import CompileError, UnsupportedError
from ..options import Options
from ..runtime import cache
from ..schedule.registers import ISAS, CpuTarget


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
