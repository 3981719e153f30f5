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
def compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CompileError(f"C compiler {cc!r} is not usable: {exc}") from None
    return out.stdout.splitlines()[0] if out.stdout else cc


def build_shared(source: str, name: str, options: Options) -> Path:
    """Compile ``source`` into ``lib<name>.so`` in the cache; the path of the library."""
    flags = options.all_cflags
    key = cache.content_key(["c", __version__, source, options.cc, *flags,
                             compiler_version(options.cc)])

    def build(tmp: Path) -> list[str]:
        src = tmp / f"{name}.c"
        lib = tmp / f"lib{name}.so"
        src.write_text(source)
        cmd = [options.cc, *flags, str(src), "-o", str(lib), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"the C compiler failed on the code generated for {name} "
                               f"({' '.join(cmd[:1] + list(flags))})", proc.stderr)
        return [src.name, lib.name]

    entry = cache.get_or_build(options.cache_dir, key, build, {"name": name})
    return entry / f"lib{name}.so"
