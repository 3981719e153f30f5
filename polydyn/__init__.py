"""polydyn: polyhedral compilation of tensor operators whose sizes are known only at run time.

``import polydyn`` needs no isl: the compiler (``compile``, ``operator``...) is imported on
first use, so that ``pd.load`` runs an artifact where only numpy is installed.
"""

from typing import Any

from .errors import (
    ArtifactError,
    CompileError,
    FrontendError,
    InternalError,
    PolydynError,
    ScheduleError,
    ShapeError,
    UnsupportedError,
    UsageError,
)
from .options import Options
from .runtime.jagged import Jagged
from .runtime.kernel import Kernel
from .runtime.loader import load
from .schedule.recipe import Schedule
from .scop.dsl import (
    abs,
    cos,
    erf,
    exp,
    f32,
    f64,
    grid,
    i32,
    i64,
    index,
    inf,
    inout,
    log,
    out,
    ragged,
    sin,
    sqrt,
    sym,
    tanh,
    temp,
)
from .version import __version__

# names whose modules need isl: imported when first used
_LAZY = {"compile": "pipeline", "compile_c": "pipeline", "Operator": "scop.operator",
         "operator": "scop.operator"}


def __getattr__(name: str) -> Any:
    """The compiler's names on first use (they need isl); ``pd.torch`` imports
    ``polydyn.torch``, and so torch, only when asked for."""
    import importlib

    if name == "torch":
        return importlib.import_module(".torch", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'polydyn' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ArtifactError", "CompileError", "FrontendError", "InternalError", "Jagged", "Kernel",
    "Operator", "Options", "PolydynError", "Schedule", "ScheduleError", "ShapeError",
    "UnsupportedError", "UsageError", "__version__", "abs", "compile", "compile_c", "cos",
    "erf", "exp", "f32", "f64", "grid", "i32", "i64", "index", "inf", "inout", "load", "log",
    "operator", "out", "ragged", "sin", "sqrt", "sym", "tanh", "temp",
]
