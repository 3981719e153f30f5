"""Compile options (frozen) and the POLYDYN_* environment variables."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """POLYDYN_CACHE_DIR, else the platform's cache directory: ``$XDG_CACHE_HOME/polydyn``
    or ``~/.cache/polydyn`` on Linux (platformdirs elsewhere, where installed)."""
    if os.environ.get("POLYDYN_CACHE_DIR"):
        return Path(os.environ["POLYDYN_CACHE_DIR"])
    if os.name == "posix" and not sys.platform.startswith("darwin"):
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
        return base / "polydyn"
    try:
        import platformdirs
    except ImportError:
        return Path.home() / ".cache" / "polydyn"
    return Path(platformdirs.user_cache_dir("polydyn", appauthor=False))


def _env_flags(name: str) -> tuple[str, ...]:
    return tuple(os.environ.get(name, "").split())


# gcc 12's -O3 loop distribution miscompiles some multi-statement integer nests under
# -march=native (a load moved past a store to the same element; tests/fuzz/regressions/
# gcc_loop_distribution.py, reproduced in plain C without restrict or OpenMP). polydyn
# distributes loops itself, so the pass only adds risk.
_NO_LOOP_DISTRIBUTION = ("-fno-tree-loop-distribution",)


@dataclass(frozen=True)
class Options:
    """Everything besides the operator that changes the generated artifact.

    ``cc``/``cflags``: the C compiler and its flags (POLYDYN_CC, POLYDYN_CFLAGS adds flags);
    ``sanitize``: build kernels with AddressSanitizer/UBSan (POLYDYN_SANITIZE=1);
    ``isa``/``l2_bytes``: the CPU the C schedule plans for (POLYDYN_ISA: avx512, avx2, sse
    or neon; POLYDYN_L2_BYTES); None: what the C compiler's flags enable
    (``-march=native``: this machine's) and this machine's L2 (``target.host_cpu``; a
    ``CpuTarget`` given as ``target=`` replaces both);
    ``ocl_permute``: the order OpenCL work-items run in, for tests (POLYDYN_OCL_PERMUTE);
    ``ocl_regtile``: register tiles on OpenCL work-items (POLYDYN_OCL_REGTILE);
    ``ocl_host``: what runs an OpenCL call's host code (POLYDYN_OCL_HOST): "c" (default: a
    compiled library built with ``cc``, for calls on device arrays; without ``cc``, Python)
    or "python"; it changes no generated text, only whether the host library is built;
    ``cache_dir``: POLYDYN_CACHE_DIR, else ``default_cache_dir()`` (threads: OMP_NUM_THREADS,
    read by the OpenMP runtime).
    """

    target: str = "c"  # the target's name: "c" or "opencl" (the pipeline sets it)
    cc: str = field(default_factory=lambda: os.environ.get("POLYDYN_CC", "cc"))
    cflags: tuple[str, ...] = field(default_factory=lambda: (
        "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=gnu11",
        "-fno-math-errno", *_NO_LOOP_DISTRIBUTION, *_env_flags("POLYDYN_CFLAGS")))
    sanitize: bool = field(default_factory=lambda: os.environ.get("POLYDYN_SANITIZE") == "1")
    isa: str | None = field(default_factory=lambda: os.environ.get("POLYDYN_ISA") or None)
    l2_bytes: int | None = field(default_factory=lambda: int(os.environ["POLYDYN_L2_BYTES"])
                                 if os.environ.get("POLYDYN_L2_BYTES") else None)
    cache_dir: Path = field(default_factory=default_cache_dir)
    dump_dir: Path | None = field(default_factory=lambda: Path(os.environ["POLYDYN_DUMP"])
                                  if os.environ.get("POLYDYN_DUMP") else None)
    # Upper bound on every tile size (POLYDYN_MAX_TILE): small tiles let tests reach every
    # variant and region boundary at sizes the reference interpreter runs quickly.
    max_tile: int | None = field(default_factory=lambda: int(os.environ["POLYDYN_MAX_TILE"])
                                 if os.environ.get("POLYDYN_MAX_TILE") else None)
    # Test-only: the order work-groups and work-items run in (POLYDYN_OCL_PERMUTE): "" (the
    # device's), "reverse" (group and local ids reversed), "groups" (group ids only) or
    # "rotate" (ids rotated by half their range). Every id the computation uses goes through
    # the same bijection, so a race-free kernel gives the same results; on PoCL, which runs a
    # group's work-items in order, a loop mapped to work-items that carries a dependence
    # then gives wrong ones.
    ocl_permute: str = field(default_factory=lambda: os.environ.get("POLYDYN_OCL_PERMUTE", ""))
    # Register tiles on OpenCL work-items (POLYDYN_OCL_REGTILE): "" (the mapping decides),
    # "off" (one output per work-item) or "TMxTN" (that many outputs per work-item, where a
    # kernel fits; codegen_ocl/regtiles.py). It changes the generated source.
    ocl_regtile: str = field(default_factory=lambda: os.environ.get("POLYDYN_OCL_REGTILE", ""))
    ocl_host: str = field(default_factory=lambda: os.environ.get("POLYDYN_OCL_HOST", "c"))
    debug: int = field(default_factory=lambda: int(os.environ.get("POLYDYN_DEBUG", "0") or 0))

    def __post_init__(self) -> None:
        for name in ("cache_dir", "dump_dir"):  # a str or another os.PathLike from the caller
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))

    def replace(self, **kw: Any) -> Options:
        from dataclasses import fields

        from .errors import UsageError

        known = {f.name for f in fields(self)}
        unknown = sorted(set(kw) - known)
        if unknown:
            raise UsageError(f"unknown compile option(s) {', '.join(map(repr, unknown))}; "
                             f"the options are {', '.join(sorted(known))}")
        return replace(self, **kw)

    def dump(self, name: str, stage: str, text: Any) -> None:
        """Write one stage's output under ``dump_dir``/``name`` (POLYDYN_DUMP), if set."""
        if self.dump_dir is None:
            return
        path = Path(self.dump_dir) / name
        path.mkdir(parents=True, exist_ok=True)
        (path / stage).write_text(f"{text}\n")

    @property
    def all_cflags(self) -> tuple[str, ...]:
        if self.sanitize:
            return (*self.cflags, "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                    "-O1")
        return self.cflags
