"""Error classes: user errors (PolydynError tree) versus polydyn's own bugs (InternalError)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's operator source: file:line:col plus the line itself."""

    file: str
    line: int
    col: int = 0
    text: str = ""
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        if not self.text:
            return ""
        stripped = self.text.rstrip("\n")
        width = max(1, (self.end_col or self.col + 1) - self.col)
        if self.end_col is None or self.end_col <= self.col:
            width = 1
        return f"    {stripped}\n    {' ' * self.col}{'^' * width}"


class PolydynError(Exception):
    """Base of every error caused by the user's input (operator, call, schedule, options)."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        self.message = message
        self.loc = loc
        super().__init__(self._format())

    def _format(self) -> str:
        if self.loc is None:
            return self.message
        excerpt = self.loc.excerpt()
        head = f"{self.loc}: {self.message}"
        return f"{head}\n{excerpt}" if excerpt else head


class FrontendError(PolydynError):
    """The operator source (Python or C) is outside the supported subset."""


class ShapeError(PolydynError):
    """A call's arguments do not match the operator's signature or assumptions."""


class ScheduleError(PolydynError):
    """A schedule directive is malformed or would break a dependence."""


class CompileError(PolydynError):
    """The C or OpenCL compiler failed, or variants do not cover the context."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        full = f"{message}\n{log.rstrip()}" if log else message
        super().__init__(full)


class ArtifactError(PolydynError):
    """An artifact ``pd.load`` cannot run: missing or damaged files, another manifest format
    or polydyn version, or a CPU without the instructions it was built for."""


class UnsupportedError(PolydynError):
    """A well-formed request that polydyn does not handle (e.g. a missing OpenCL device)."""


class UsageError(PolydynError):
    """A mistake in how polydyn is called, on the command line or through the API (missing
    file, unknown operator or compile option, malformed size)."""


class InternalError(Exception):
    """A polydyn bug: an invariant of the compiler itself does not hold."""

    def __init__(self, message: str):
        super().__init__(f"internal error (this is a polydyn bug, please report it): {message}")


def user_facing(fn: _F) -> _F:
    """Wrap a public entry point: a PolydynError leaves it without polydyn's frames below the
    entry point and without the internal exception it replaced (POLYDYN_DEBUG=1 keeps both)."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PolydynError as err:
            if os.environ.get("POLYDYN_DEBUG", "0") not in ("", "0"):
                raise
            raise err.with_traceback(None) from None

    return entry  # type: ignore[return-value]
