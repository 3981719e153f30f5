"""polydyn: polyhedral compilation of tensor operators whose sizes are known only at run time."""

from .errors import (
    CompileError,
    FrontendError,
    InternalError,
    PolydynError,
    ScheduleError,
    ShapeError,
    UnsupportedError,
)
from .options import Options
from .pipeline import compile, compile_c
from .runtime.jagged import Jagged
from .runtime.kernel import Kernel
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
from .scop.operator import Operator, operator
from .version import __version__

__all__ = [
    "CompileError", "FrontendError", "InternalError", "Jagged", "Kernel", "Operator", "Options",
    "PolydynError", "Schedule", "ScheduleError", "ShapeError", "UnsupportedError", "__version__",
    "abs", "compile", "compile_c", "cos", "erf", "exp", "f32", "f64", "grid", "i32", "i64",
    "index", "inf", "inout", "log", "operator", "out", "ragged", "sin", "sqrt", "sym", "tanh",
    "temp",
]
