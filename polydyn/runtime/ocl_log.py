"""OpenCL build logs: what a failed build said, and which warnings say nothing."""

from __future__ import annotations

import re
from typing import Any

# NVIDIA's OpenCL compiler (drivers since 550) says this of every kernel; it is harmless
BENIGN = re.compile(r"\(\): Warning: Function \w+ is a kernel, so overriding noinline "
                    r"attribute\. The function may be inlined when called\.")
# pyopencl's own lines around a build log
FRAMING = ("Non-empty compiler output", "From-source build succeeded", "Build on <",
           "Built kernel retrieved from cache")


def only_benign(text: str) -> bool:
    """Whether a build's warning text and log say nothing but ``BENIGN`` (at least once)."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    said = [x for x in lines if not x.startswith(FRAMING)]
    return bool(said) and all(BENIGN.fullmatch(x) for x in said)


def build_log(cl: Any, program: Any, context: Any, exc: Exception | None) -> str:
    """The build logs of ``program`` on the devices of ``context`` (``cl``: pyopencl)."""
    logs = []
    for dev in context.devices:
        try:
            log = program.get_build_info(dev, cl.program_build_info.LOG)
        except cl.Error:
            log = ""
        if log and log.strip():
            logs.append(log.strip())
    return "\n".join(logs) or ("" if exc is None else str(exc))


__all__ = ["BENIGN", "FRAMING", "build_log", "only_benign"]
