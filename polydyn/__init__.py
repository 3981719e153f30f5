"""polydyn: polyhedral compilation of tensor operators whose sizes are known only at run time."""

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    CompileError,
    FrontendError,
    InternalError,
    PolydynError,
    ScheduleError,
    ShapeError,
    UnsupportedError,
)
from .options import Options  # noqa: E402
from .pipeline import compile, compile_c  # noqa: E402
from .runtime.kernel import Kernel  # noqa: E402
from .schedule.recipe import Schedule  # noqa: E402
from .scop.dsl import (  # noqa: E402
    Operator,
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
    operator,
    out,
    sin,
    sqrt,
    sym,
    tanh,
    temp,
)

__all__ = [
    "CompileError", "FrontendError", "InternalError", "Kernel", "Operator", "Options",
    "PolydynError", "Schedule", "ScheduleError", "ShapeError", "UnsupportedError", "__version__",
    "abs", "compile", "compile_c", "cos", "erf", "exp", "f32", "f64", "grid", "i32", "i64",
    "index", "inf", "inout", "log", "operator", "out", "sin", "sqrt", "sym", "tanh", "temp",
]
