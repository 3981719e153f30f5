"""``@pd.operator``: an operator's Scop, parsed from its body when it is defined, and its
reference semantics (the original loop nest run on NumPy)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import FrontendError, SourceLoc, user_facing
from .from_python import scop_from_function
from .interp import run_reference


class Operator:
    """A decorated operator: its Scop (built at definition time) and its reference semantics."""

    @user_facing
    def __init__(self, fn: Callable[..., Any], assume: str | None):
        if isinstance(fn, Operator):
            code = fn.fn.__code__
            raise FrontendError("@pd.operator is applied twice to "
                                f"{fn.name!r}; apply it once",
                                SourceLoc(code.co_filename, code.co_firstlineno))
        self.fn = fn
        self.name = fn.__name__
        if assume is not None and not isinstance(assume, str):
            code = fn.__code__
            raise FrontendError(f"assume= must be a string of isl constraints over the syms, "
                                f"got {assume!r}", SourceLoc(code.co_filename,
                                                             code.co_firstlineno))
        self.assume = assume or ""
        self.scop = scop_from_function(fn, self.assume)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @user_facing
    def reference(self, *args: Any, **kwargs: Any) -> Any:
        """Run the loop nest in its original order on NumPy (exact semantics, slow)."""
        return run_reference(self.scop, args, kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.reference(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<polydyn operator {self.name}({', '.join(self.scop.args)})>"


def operator(fn: Callable[..., Any] | None = None, *, assume: str | None = None) -> Any:
    """``@pd.operator`` or ``@pd.operator(assume="N >= 1")``: parse the body into a Scop."""
    if fn is None:
        return functools.partial(operator, assume=assume)  # no frame of its own
    from .ragged import RaggedOperator, ragged_syms

    extents = ragged_syms(fn) if callable(fn) and not isinstance(fn, Operator) else {}
    if extents:  # a ragged batch (SPEC section 7): lowered to a per-sequence operator
        return _ragged(fn, assume, extents, RaggedOperator)
    return Operator(fn, assume)


@user_facing
def _ragged(fn: Callable[..., Any], assume: str | None, extents: dict, cls: type) -> Any:
    return cls(fn, assume or "", extents)
