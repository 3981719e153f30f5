"""``pd.load``: the Kernel of an artifact directory (format in ``runtime/bundle.py``), with
no isl and no C compiler."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ArtifactError, user_facing
from . import bundle
from .bundle_ocl import load_opencl
from .kernel import Kernel


@user_facing
def load(path: str | os.PathLike[str], device: Any = None) -> Any:
    """The Kernel in the directory ``polydyn compile op.py -o DIR`` wrote (SPEC section 2);
    needs numpy (and pyopencl for OpenCL), not isl or a C compiler. An OpenCL program is
    built for ``device`` (a pyopencl Device, Context or CommandQueue; None: the default)."""
    return load_artifact(Path(path), device)


def load_artifact(path: Path, device: Any = None, own_scop: Any = None, op: Any = None) -> Any:
    """``load``, with the operator's own Scop and Operator where the caller has them (a
    cache hit of ``compile``: the cache checked the files' checksums)."""
    meta = bundle.read_manifest(path, verify=own_scop is None)
    try:
        scop, variants, tests = (bundle.scop_of(meta), bundle.variants_of(meta),
                                  bundle.tests_of(meta))
    except (KeyError, TypeError, ValueError, SyntaxError) as exc:
        raise ArtifactError(f"{path / bundle.MANIFEST}: malformed ({exc!r})") from None
    if own_scop is not None:  # isl is at hand: regions as isl sets, as compile gives them
        import islpy as isl

        scop, space = own_scop, own_scop.context.get_space()
        variants = [v.replace(region=isl.Set(v.region).align_params(space)) for v in variants]
    if meta.get("target") == "opencl":
        return _ragged(meta, load_opencl(path, meta, scop, variants, tests, device, op), op)
    files = meta["files"]
    ext = meta.get("extension")
    if ext and ext.get("python") == sys.implementation.cache_tag and "extension" in files:
        library, module = path / files["extension"], ext["module"]
    elif "library" in files:
        library, module = path / files["library"], None
    else:
        raise ArtifactError(f"{path}: no library for this Python (built for "
                            f"{ext and ext.get('python')})")
    try:
        kernel = Kernel(scop, variants, (path / files["source"]).read_text(),
                        (path / files["header"]).read_text(), library.resolve(), target="c",
                        op=op, module=module, notes=tuple(meta.get("notes", ())), tests=tests)
    except OSError as exc:
        raise ArtifactError(f"{path}: the library does not load here ({exc})") from None
    return _ragged(meta, kernel, op)


def _ragged(meta: dict[str, Any], kernel: Any, op: Any) -> Any:
    """``kernel``, or the RaggedKernel around it where the manifest describes a batch."""
    ragged = meta.get("ragged")
    if ragged is None:
        return kernel
    from ..scop.ir import RaggedInfo
    from .ragged_kernel import RaggedKernel

    try:
        info = RaggedInfo(ragged["batch"], ragged["length"], frozenset(ragged["batched"]))
        return RaggedKernel(kernel.scop, info, kernel, op, ragged["work"])
    except (KeyError, TypeError, SyntaxError) as exc:
        raise ArtifactError(f"malformed ragged section in the manifest of {kernel.name} "
                            f"({exc!r})") from None
