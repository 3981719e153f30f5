"""OpenCL artifacts: the program, its host code and launch plan, for ``pd.load``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from . import bundle


def write_opencl(kernel: Any, out: Path) -> list[str]:
    """Write the OpenCL artifact of ``kernel`` to ``out``; returns the file names written."""
    out.mkdir(parents=True, exist_ok=True)
    name = kernel.name
    (out / f"{name}.cl").write_text(kernel.source)
    meta = bundle.manifest(kernel)
    return bundle._finish(out, meta, {"source": f"{name}.cl"})


def load_opencl(path: Path, meta: dict[str, Any], scop: Any, variants: Any, tests: Any) -> Any:
    raise ArtifactError(f"{path}: loading OpenCL artifacts is not supported yet")
