"""Artifacts: a compiled kernel as a directory that ``pd.load`` runs without isl or a C compiler.

``manifest.json`` (versioned by ``FORMAT``) holds what the Kernel binds and checks with: the
syms, every array (kind, dtype, shape as text and as Aff trees), the context and each
variant's region as isl text and as Python conditions (``conditions.SizeTests``), recipes,
summaries, notes, the CPU the library was built for and the SHA-256 of every file. C
artifacts hold ``NAME.c``, ``NAME.h``, ``libNAME.so`` (the plain library, usable from C)
and, where the kernel has the CPython fast path, ``NAME.pyext.so`` (the same library with
it, for this Python only). OpenCL artifacts: ``runtime/bundle_ocl.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ..parametric.variants import Variant
from ..schedule.recipe import Schedule
from ..scop.affine import Aff
from ..scop.ir import Array, Scop
from ..version import __version__
from .conditions import SizeTests

FORMAT = 1
MANIFEST = "manifest.json"
# the CPU features a -march=native build may use; an artifact lists those of its build CPU
ISA_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "avx512f",
             "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
             "avx512ifma", "avx512vbmi", "avx512_fp16", "asimd", "sve")


def aff_to_json(aff: Aff) -> list[Any]:
    return [aff.op, [aff_to_json(a) if isinstance(a, Aff) else a for a in aff.args]]


def aff_from_json(data: list[Any]) -> Aff:
    op, args = data
    return Aff(op, tuple(aff_from_json(a) if isinstance(a, list) else a for a in args))


def cpu_flags() -> set[str]:
    """This CPU's feature flags (``/proc/cpuinfo``; empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def _machine(cflags: tuple[str, ...]) -> dict[str, Any]:
    native = any(f in ("-march=native", "-mcpu=native") for f in cflags)
    return {"arch": platform.machine(),
            "cpu_flags": sorted(cpu_flags() & set(ISA_FLAGS)) if native else []}


def manifest(kernel: Any, tests: SizeTests | None = None) -> dict[str, Any]:
    """The manifest of ``kernel`` (``tests``: its size tests, computed with isl if None)."""
    from .conditions import size_tests

    scop = kernel.scop
    tests = tests or kernel.tests or size_tests(scop, [v.region for v in kernel.variants])
    return {
        "format": FORMAT, "polydyn": __version__, "operator": scop.name,
        "target": kernel.target, "syms": list(scop.syms), "index_syms": list(scop.index_syms),
        "args": list(scop.args), "assume": scop.assume,
        "user_names": [list(p) for p in scop.user_names],
        "context": str(scop.context), "context_py": tests.context,
        "arguments": [{"name": a.name, "kind": a.kind, "dtype": a.dtype,
                       "shape": [str(d) for d in a.shape]} for a in scop.arg_arrays],
        "arrays": [{"name": a.name, "kind": a.kind, "dtype": a.dtype, "scope": list(a.scope),
                    "shape": [str(d) for d in a.shape],
                    "shape_aff": [aff_to_json(d) for d in a.shape]} for a in scop.arrays],
        "variants": [{"index": k, "name": v.name, "region": str(v.region),
                      "region_py": tests.regions[k], "schedule": v.summary,
                      "recipe": v.recipe.to_json()} for k, v in enumerate(kernel.variants)],
        "notes": list(kernel.notes),
        **({"launch_plan": kernel.launch_plan()} if hasattr(kernel, "launch_plan") else {}),
    }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(kernel: Any, out: Path, plain_library: Path | None, cflags: tuple[str, ...],
          module: str | None, extra: dict[str, Any] | None = None) -> list[str]:
    """Write the C artifact of ``kernel`` to ``out``; returns the file names written.
    ``extra``: more of the manifest (a ragged operator's ``ragged``)."""
    name = kernel.name
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.c").write_text(kernel.source)
    (out / f"{name}.h").write_text(kernel.header)
    files = {"source": f"{name}.c", "header": f"{name}.h"}
    if plain_library is not None:
        shutil.copyfile(plain_library, out / f"lib{name}.so")
        files["library"] = f"lib{name}.so"
    if module is not None:  # the same code with the CPython fast path (this Python's ABI)
        shutil.copyfile(kernel.library, out / f"{name}.pyext.so")
        files["extension"] = f"{name}.pyext.so"
    meta = {**manifest(kernel), **(extra or {})}
    meta["machine"] = _machine(cflags)
    meta["extension"] = {"module": module, "python": sys.implementation.cache_tag} \
        if module else None
    return _finish(out, meta, files)


def _finish(out: Path, meta: dict[str, Any], files: dict[str, str]) -> list[str]:
    """Record the files with their checksums and write the manifest (last, atomically)."""
    meta["files"] = files
    meta["sha256"] = {f: _digest(out / f) for f in files.values()}
    tmp = out / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, out / MANIFEST)
    return [*files.values(), MANIFEST]


def read_manifest(path: Path, verify: bool = True) -> dict[str, Any]:
    """The manifest of the artifact at ``path``, checked: format, version, CPU and (with
    ``verify``; a cache entry's were checked when it was found) the files' checksums."""
    try:
        meta = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no {MANIFEST} (not a directory `polydyn compile -o` "
                            "wrote)") from None
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path / MANIFEST}: unreadable ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise ArtifactError(f"{path}: artifact format {got!r}, this polydyn ({__version__}) "
                            f"reads format {FORMAT}: compile the operator again")
    if meta.get("polydyn") != __version__:
        raise ArtifactError(f"{path}: built by polydyn {meta.get('polydyn')}, this is polydyn "
                            f"{__version__}: compile the operator again with this version")
    for name, digest in (meta.get("sha256", {}) if verify else {}).items():
        try:
            ok = _digest(path / name) == digest
        except OSError:
            raise ArtifactError(f"{path}: {name} is missing") from None
        if not ok:
            raise ArtifactError(f"{path}: {name} is damaged (its checksum does not match)")
    _check_machine(path, meta.get("machine") or {})
    return meta


def _check_machine(path: Path, machine: dict[str, Any]) -> None:
    arch = machine.get("arch")
    if arch and arch != platform.machine():
        raise ArtifactError(f"{path}: built for {arch} CPUs, this one is "
                            f"{platform.machine()}: compile the operator on this machine")
    need = set(machine.get("cpu_flags", ()))
    have = cpu_flags()
    missing = sorted(need - have) if have else []
    if missing:
        raise ArtifactError(f"{path}: built for a CPU with {', '.join(missing)}, which this "
                            "CPU lacks: compile the operator on this machine (or with "
                            "POLYDYN_CFLAGS selecting an older -march)")


def scop_of(meta: dict[str, Any]) -> Scop:
    """The Scop a loaded kernel binds and checks with: syms, arrays and names, no isl."""
    arrays = tuple(Array(a["name"], a["dtype"], tuple(aff_from_json(d) for d in a["shape_aff"]),
                         a["kind"], tuple(a["scope"])) for a in meta["arrays"])
    return Scop(meta["operator"], tuple(meta["syms"]), None, arrays, tuple(meta["args"]),
                tuple(meta["index_syms"]), (), (), assume=meta.get("assume", ""),
                user_names=tuple(tuple(p) for p in meta.get("user_names", ())))


def variants_of(meta: dict[str, Any]) -> list[Variant]:
    """The variants, their regions as isl text (no isl objects)."""
    return [Variant(v["name"], v["region"], None, Schedule.from_json(v["recipe"]),
                    v["schedule"]) for v in meta["variants"]]


def tests_of(meta: dict[str, Any]) -> SizeTests:
    return SizeTests(meta["context_py"], [v["region_py"] for v in meta["variants"]])
