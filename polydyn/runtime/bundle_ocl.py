"""OpenCL artifacts: the ``.cl`` program, its Python host code, the C host code and its
library (where there is one) and, in the manifest (``runtime/bundle.py``), the launch plan,
each kernel's scalar argument dtypes, the arrays zeroed before a call and the local scalars
kept in global memory. ``load_opencl`` rebuilds the OpenCLKernel from them (the program is
built for the device then, by its OpenCL driver) with pyopencl and numpy, no isl.
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ArtifactError, InternalError
from ..scop.ir import Array
from . import bundle


@dataclass(frozen=True)
class LoadedScalar:
    """A spilled local scalar as the runtime uses it (``codegen_ocl.scalars.SpilledScalar``
    less the isl expressions the kernels were generated from)."""

    name: str
    dtype: str

    @property
    def buffer(self) -> str:
        return f"pd_s_{self.name}"


@dataclass(frozen=True)
class LoadedMapping:
    """A variant and its launches as the manifest describes them."""

    variant: Any
    plan: dict[str, Any]

    def describe(self) -> dict[str, Any]:
        return self.plan


def _dtype_name(d: Any) -> str | None:
    return None if d is None else np.dtype(d).name


def write_opencl(kernel: Any, out: Path, extra: dict[str, Any] | None = None) -> list[str]:
    """Write the OpenCL artifact of ``kernel`` to ``out``; returns the file names written.
    ``extra``: more of the manifest (a ragged operator's ``ragged``)."""
    out.mkdir(parents=True, exist_ok=True)
    name = kernel.name
    (out / f"{name}.cl").write_text(kernel.source)
    (out / f"{name}.host.py").write_text(kernel.host_source)
    files = {"source": f"{name}.cl", "host": f"{name}.host.py"}
    if kernel.host_c:
        (out / f"{name}.host.c").write_text(kernel.host_c)
        files["host_c"] = f"{name}.host.c"
    if kernel.host_library is not None:
        shutil.copyfile(kernel.host_library, out / f"lib{name}_host.so")
        files["host_library"] = f"lib{name}_host.so"
    meta = {**bundle.manifest(kernel), **(extra or {})}
    meta["machine"] = {"arch": platform.machine(), "cpu_flags": []}  # built -O2
    meta["opencl"] = {
        "kernels": [{"name": k.name, "local_size": list(k.local_size),
                     "arg_dtypes": [_dtype_name(d) for d in k.arg_dtypes],
                     "index32": k.index32}
                    for k in kernel._kernels],
        "zero_init": sorted(kernel._zero_init),
        "spilled": [{"name": sc.name, "dtype": sc.dtype} for sc in kernel._spilled],
        "spills": [sorted(s) for s in kernel._spills],
        # the temporaries the launches take (the rewrites may have contracted some)
        "temps": [{"name": a.name, "dtype": a.dtype,
                   "shape_aff": [bundle.aff_to_json(d) for d in a.shape]}
                  for a in kernel._temps],
    }
    return bundle._finish(out, meta, files)


def load_opencl(path: Path, meta: dict[str, Any], scop: Any, variants: list[Any],
                tests: Any, device: Any = None, op: Any = None) -> Any:
    """The OpenCLKernel of the artifact at ``path`` (its manifest ``meta`` read and checked),
    its program built for ``device`` (None: the default device)."""
    from .opencl import KernelInfo, OpenCLKernel, resolve_device

    files = meta["files"]
    try:
        ocl = meta["opencl"]
        infos = [KernelInfo(k["name"], tuple(k["local_size"]),
                            tuple(None if d is None else np.dtype(d) for d in k["arg_dtypes"]),
                            bool(k.get("index32", False)))
                 for k in ocl["kernels"]]
        plans = meta["launch_plan"]["variants"]
        mappings = [LoadedMapping(v, p) for v, p in zip(variants, plans, strict=True)]
        spilled = [LoadedScalar(s["name"], s["dtype"]) for s in ocl["spilled"]]
        spills = [frozenset(s) for s in ocl["spills"]]
        # each temporary with its shape (a rewrite may add one: scop.padding); a name
        # alone is an operator's own
        temps = [scop.array(t) if isinstance(t, str) else Array(
            t["name"], t["dtype"], tuple(bundle.aff_from_json(d) for d in t["shape_aff"]),
            "temp") for t in ocl["temps"]]
        source = (path / files["source"]).read_text()
        host = (path / files["host"]).read_text()
        host_c = (path / files["host_c"]).read_text() if "host_c" in files else ""
    except (KeyError, TypeError, ValueError, OSError, InternalError) as exc:
        raise ArtifactError(f"{path / bundle.MANIFEST}: malformed OpenCL artifact "
                            f"({exc!r})") from None
    library = (path / files["host_library"]).resolve() if "host_library" in files else None
    return OpenCLKernel(scop, mappings, source, host, infos, frozenset(ocl["zero_init"]),
                        resolve_device(device), op=op, spilled=spilled, spills=spills,
                        host_c=host_c, host_library=library,
                        notes=tuple(meta.get("notes", ())), tests=tests, temps=temps)
