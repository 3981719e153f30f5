"""Fixed costs: compile time (cold: empty artifact cache; warm: cached), number of variants,
and the per-call overhead of a compiled kernel at a tiny size against a NumPy ufunc call and a
ctypes call of an empty C function."""

from __future__ import annotations

import ctypes
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .timing import Budget, measure


def compile_cost(op: Any, repeats: int = 1) -> dict[str, Any]:
    """Cold compile (isl + C compiler, all variants, a fresh POLYDYN_CACHE_DIR), then a warm
    compile of the same operator from that cache; medians over ``repeats``."""
    from ..options import Options
    from ..pipeline import compile as pd_compile

    cold, warm = [], []
    kernel = None
    for _ in range(max(1, repeats)):
        cache = Path(tempfile.mkdtemp(prefix="polydyn-bench-cache-"))
        try:
            options = Options().replace(cache_dir=cache)
            start = time.perf_counter()
            kernel = pd_compile(op, options=options)
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            pd_compile(op, options=options)
            warm.append(time.perf_counter() - start)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    assert kernel is not None
    return {"operator": kernel.name, "cold_s": statistics.median(cold),
            "warm_s": statistics.median(warm), "variants": len(kernel.variants),
            "variant_names": [v.name for v in kernel.variants],
            "source_lines": kernel.source.count("\n") if hasattr(kernel, "source") else None,
            "repeats": len(cold)}


def compile_costs(ops: Sequence[Any], repeats: int = 1) -> list[dict[str, Any]]:
    return [compile_cost(op, repeats) for op in ops]


EMPTY_C = "#include <stdint.h>\nint empty(int64_t n, int64_t m, void *x, void *b, void *y) " \
          "{ (void)n; (void)m; (void)x; (void)b; (void)y; return 0; }\n"


def empty_c_function(workdir: Path) -> Any:
    """``int empty(int64 N, int64 M, void *X, void *b, void *Y)`` from a shared library, with a
    cached ctypes prototype (the shape of a dispatcher call for bias_relu)."""
    from ..options import Options

    options = Options()
    src, lib = workdir / "empty.c", workdir / "libempty.so"
    src.write_text(EMPTY_C)
    subprocess.run([options.cc, "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)],
                   check=True, capture_output=True)
    fn = ctypes.CDLL(str(lib)).empty
    fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def call_overhead(bias_relu: tuple[Any, Any], quick: bool = False) -> list[dict[str, Any]]:
    """Microseconds per call at a tiny size (the bundled ``(operator, numpy function)`` of
    bias_relu, N=1, M=8), median of batched calls."""
    from ..pipeline import compile as pd_compile
    from .baselines import torch_function

    op, numpy_impl = bias_relu
    kernel = pd_compile(op)
    x = np.ones((1, 8), np.float32)
    b = np.ones(8, np.float32)
    y = np.empty((1, 8), np.float32)
    budget = Budget(seconds=0.3 if quick else 1.0, min_samples=5, min_sample=2e-3)
    cases: list[tuple[str, Any]] = [
        ("numpy ufunc np.add(x, b, out=y)", lambda: np.add(x, b, out=y)),
        ("numpy_impl (allocates)", lambda: numpy_impl(x, b)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            empty = empty_c_function(Path(tmp))
            px, pb, py = x.ctypes.data, b.ctypes.data, y.ctypes.data
            cases.append(("ctypes call of an empty C function",
                          lambda: empty(1, 8, px, pb, py)))
        except (OSError, subprocess.CalledProcessError):
            pass
        cases += [("polydyn k(X, b, Y=Y) (output given)", lambda: kernel(x, b, Y=y)),
                  ("polydyn k(X, b) (output allocated)", lambda: kernel(x, b))]
        fn = torch_function(kernel.scop)
        if fn is not None:
            import torch

            tx, tb = torch.from_numpy(x), torch.from_numpy(b)
            cases.append(("torch eager F.relu(X + b)", lambda: fn(tx, tb)))
        rows = []
        for name, call in cases:
            t = measure(call, budget)
            rows.append({"call": name, "median_us": t.median * 1e6, "min_us": t.min * 1e6,
                         "spread": t.spread})
    return rows
