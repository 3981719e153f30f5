"""Open compiler bugs that the fuzzer keeps finding, recognized by their error message (and
for wrong results and crashes, by the operators where they were diagnosed).

A failure that matches an entry is still reported (and counted as failed), but as *known*:
the CI fuzz test fails only on unknown failures, so one open bug does not hide the next.
Each entry names its minimal reproduction in tests/fuzz/regressions/ (run, as an expected
failure, by tests/test_fuzz.py). Remove the entry when the bug is fixed: the regression's
strict xfail then turns into a failure until its KNOWN_BUG line is removed too.

An error with a distinctive message is recognized by it wherever it occurs. A wrong result
(mismatch) or a crash says nothing about its cause, so such an entry also names the fuzz
operators (``ops``) known to hit it, and matches only those: a new operator that fails the
same way is unknown until someone has looked at it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    """An open bug: the status and message pattern of its failures, on ``target`` only when
    given (a bug of one code generator), in the operators ``ops`` only when given."""

    name: str
    status: str
    pattern: str
    regression: str
    target: str | None = None
    ops: tuple[str, ...] = ()

    def matches(self, result: dict[str, Any], op: str | None = None) -> bool:
        return result.get("status") == self.status and \
            self.target in (None, result.get("target")) and \
            (not self.ops or op in self.ops) and \
            re.search(self.pattern, result.get("message", "")) is not None


KNOWN: tuple[Known, ...] = (
    # compiles that take minutes (seeds 301-302, README.md): too slow to shrink, so no
    # regression file; `python -m tests.fuzz --one <digits>` reproduces each
    Known("isl-scheduler-slow", "timeout", r"while compiling",
          "(not shrunk) python -m tests.fuzz --one 30200082", ops=("fz30200082",)),
)
# Fixed since they were listed (their regressions stay in tests/fuzz/regressions/):
# isl-coalesce-regtile (opencl_regtile_coalesce.py),
# isl-compute-flow-factor (islflow_mod_guard.py, islflow_scalar.py), tiling-path-no-children
# (tiling_path.py), schedule-path-out-of-bounds (distribute_path.py), empty-domains
# (empty_domain.py), tile-twice-anchored (recipe_tile_nested_twice.py),
# opencl-promotion-max-val (opencl_promotion_max_val.py), opencl-local-copy-index
# (opencl_local_copy_index.py), opencl-host-loop-stride (opencl_host_loop_stride.py, with
# opencl_reduction_extra_instance.py and opencl_window_chain.py), opencl-scalar-across-work-items
# (opencl_scalar_across_work_items.py), opencl-out-of-domain-write, opencl-recipe-heap and
# opencl-recipe-tile-host-loops (opencl_out_of_domain_write.py, opencl_recipe_tile_parallel.py),
# c-ast-stack-overflow (c_ast_stack_overflow.py), opencl-promotion-tile-anchored
# (opencl_promotion_tile_anchored.py, opencl_recipe_anchored_tile.py), opencl-mapping-slow
# (fz30100016, fz30100002; opencl_promotion_compile_time.py).

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


def known_failure(result: dict[str, Any], op: str | None = None) -> str | None:
    """The name of the open bug ``result`` (a failing unit of the operator named ``op``) is an
    instance of, if any."""
    for k in KNOWN:
        if k.matches(result, op):
            return k.name
    return None


def known_frontend_bug(source: str) -> str | None:
    for pattern, what in KNOWN_FRONTEND:
        if re.search(pattern, source):
            return what
    return None
