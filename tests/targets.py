"""The targets the tests compile for: C, and OpenCL where a platform is installed (PoCL here).

``op_targets`` parametrizes a sweep of operators over both. The rewrite passes these sweeps
check (forwarding, padding, held cells, fused epilogues) change the Scop, before any target,
and the OpenCL generator has sweeps of its own (``test_opencl*.py``, ``test_gpu_*.py``): so CI
runs every operator on C and a representative few on OpenCL, and the slow set
(``scripts/test.sh -m ""``) runs the rest on OpenCL too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import pytest

import polydyn as pd
from polydyn.runtime.opencl import opencl_available

OPENCL_MARKS = [pytest.mark.opencl,
                pytest.mark.skipif(not opencl_available(),
                                   reason="no OpenCL platform (install PoCL)")]
TARGETS = ["c", pytest.param("opencl", marks=OPENCL_MARKS)]


def op_targets(ops: Iterable[pd.Operator], opencl_in_ci: Collection[pd.Operator]) -> list:
    """``(op, target)`` parameters, ids ``<operator>-<target>``: every operator on C, and on
    OpenCL, in the slow set unless it is one of ``opencl_in_ci``."""
    ops = list(ops)
    unknown = [op.scop.name for op in opencl_in_ci if op not in ops]
    assert not unknown, f"opencl_in_ci names operators the sweep does not have: {unknown}"
    return [pytest.param(op, target, id=f"{op.scop.name}-{target}", marks=marks)
            for op in ops
            for target, marks in (("c", []), ("opencl", [
                *OPENCL_MARKS, *([] if op in opencl_in_ci else [pytest.mark.slow])]))]
