"""What a long compile is doing, on a terminal: one line on stderr, rewritten in place.

``with reporting("compiling matmul"):`` around the work and ``stage("scheduling")`` at each
step; after ``AFTER`` seconds a background thread shows ``polydyn: compiling matmul:
scheduling (3.2 s)`` and refreshes the elapsed time until the work ends, then erases the
line. Nothing is written when stderr is not a terminal or POLYDYN_PROGRESS=0.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

AFTER = 1.0  # seconds of quiet before the line appears
PERIOD = 0.2  # seconds between redraws

_local = threading.local()


class _Reporter:
    def __init__(self, what: str, stream: TextIO):
        self.what = what
        self.stage = "starting"
        self.stream = stream
        self.start = time.perf_counter()
        self.width = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="polydyn-progress", daemon=True)

    def _run(self) -> None:
        if self.done.wait(AFTER):
            return
        while not self.done.is_set():
            self._draw()
            self.done.wait(PERIOD)

    def _draw(self) -> None:
        line = f"polydyn: {self.what}: {self.stage} ({time.perf_counter() - self.start:.1f} s)"
        line = line[:119]
        try:
            self.stream.write("\r" + line.ljust(self.width))
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream: stop quietly
            self.done.set()
        self.width = max(self.width, len(line))

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        if self.width:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()


def enabled(stream: TextIO) -> bool:
    if os.environ.get("POLYDYN_PROGRESS", "1") in ("0", ""):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


@contextlib.contextmanager
def reporting(what: str, stream: TextIO | None = None) -> Iterator[None]:
    """Report the stages of the work in the block (the outermost block only)."""
    stream = stream or sys.stderr
    if getattr(_local, "reporter", None) is not None or not enabled(stream):
        yield
        return
    reporter = _Reporter(what, stream)
    _local.reporter = reporter
    reporter.thread.start()
    try:
        yield
    finally:
        _local.reporter = None
        reporter.close()


def stage(name: str) -> None:
    """The step the work in the current ``reporting`` block is at (nothing outside one)."""
    reporter = getattr(_local, "reporter", None)
    if reporter is not None:
        reporter.stage = name
