"""Open compiler bugs that the fuzzer keeps finding, recognized by their error message.

A failure that matches an entry is still reported (and counted as failed), but as *known*:
the CI fuzz test fails only on unknown failures, so one open bug does not hide the next.
Each entry names its minimal reproduction in tests/fuzz/regressions/ (run, as an expected
failure, by tests/test_fuzz.py). Remove the entry when the bug is fixed: the regression's
strict xfail then turns into a failure until its KNOWN_BUG line is removed too.

Only errors with a distinctive message can be listed; a wrong result (mismatch) never is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    name: str
    status: str
    pattern: str
    regression: str

    def matches(self, result: dict[str, Any]) -> bool:
        return result.get("status") == self.status and \
            re.search(self.pattern, result.get("message", "")) is not None


KNOWN: tuple[Known, ...] = ()
# Fixed since they were listed (their regressions stay in tests/fuzz/regressions/):
# isl-compute-flow-factor (islflow_mod_guard.py, islflow_scalar.py), tiling-path-no-children
# (tiling_path.py), schedule-path-out-of-bounds (distribute_path.py), empty-domains
# (empty_domain.py).

# Frontend fuzz: sources that hit an open frontend bug, (regex on the source, what), and
# gcc errors in generated C that come from an open bug. Fixed since listed: `@pd.operator`
# applied twice (AttributeError), user names equal to C library functions (invalid C).
KNOWN_FRONTEND: tuple[tuple[str, str], ...] = ()
KNOWN_C_ERRORS: tuple[tuple[str, str], ...] = ()


def known_compile_error(log: str) -> str | None:
    for pattern, what in KNOWN_C_ERRORS:
        if re.search(pattern, log):
            return what
    return None


def known_failure(result: dict[str, Any]) -> str | None:
    """The name of the open bug ``result`` is an instance of, if any."""
    for k in KNOWN:
        if k.matches(result):
            return k.name
    return None


def known_frontend_bug(source: str) -> str | None:
    for pattern, what in KNOWN_FRONTEND:
        if re.search(pattern, source):
            return what
    return None
