"""The main job: compile bundled kernels once each and run them over several shapes.

For every call it prints the variant the dispatcher chose, the check against the operator's
reference semantics (the loop nest run on NumPy, at sizes where that is affordable; above
them, against the kernel module's NumPy implementation) and the speed in GFLOP/s or GB/s,
with work figures counted from the Scop by isl.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polydyn as pd  # noqa: E402
from kernels import load  # noqa: E402
from polydyn.bench.work import choose_metric, rate, work  # noqa: E402
from polydyn.testing import call_args, check_kernel, make_inputs  # noqa: E402

REFERENCE_LIMIT = 300_000  # statement instances the reference interpreter runs in ~1 s

SHAPES = {
    "matmul": [dict(N=1, M=64, K=64), dict(N=37, M=29, K=41), dict(N=256, M=256, K=256),
               dict(N=500, M=500, K=500), dict(N=1000, M=3, K=64)],
    "softmax": [dict(N=7, L=13), dict(N=64, L=512), dict(N=512, L=4096)],
    "bias_relu": [dict(N=1, M=1024), dict(N=128, M=1000), dict(N=4096, M=4097)],
    "conv2d": [dict(B=1, C=3, F=4, H=9, W=9, KH=3, KW=3),
               dict(B=1, C=64, F=64, H=56, W=56, KH=3, KW=3)],
}


def seconds(fn, budget: float = 0.3) -> float:
    fn()
    best, spent, runs = float("inf"), 0.0, 0
    while spent < budget or runs < 3:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent, runs = min(best, dt), spent + dt, runs + 1
    return best


def check(name: str, k: pd.Kernel, sizes: dict, numpy_impl) -> str:
    w = work(k.scop, sizes)
    if w.instances <= REFERENCE_LIMIT:
        err = check_kernel(k, sizes)
        return f"matches reference (max err {err:.1e})"
    inputs = make_inputs(k, sizes)
    args, kw = call_args(k, inputs, sizes)
    got = k(*args, **kw)
    want = numpy_impl(*call_args(k, inputs, sizes)[0], **kw)
    scale = max(1.0, float(np.max(np.abs(want))))
    err = float(np.max(np.abs(np.asarray(got, np.float64) - want)))
    ok = err <= 1e-4 * scale
    if not ok:
        raise SystemExit(f"{name} {sizes}: differs from NumPy by {err}")
    return f"matches NumPy (max err {err:.1e})"


def main() -> int:
    print(f"polydyn {pd.__version__}: compile once, run any size\n")
    for name, shapes in SHAPES.items():
        op, numpy_impl = load(name)
        t = time.perf_counter()
        k = pd.compile(op)
        print(f"== {name}: {len(k.variants)} variants "
              f"({', '.join(v.name for v in k.variants)}), compiled in "
              f"{time.perf_counter() - t:.2f} s")
        for sizes in shapes:
            verdict = check(name, k, sizes, numpy_impl)
            inputs = make_inputs(k, sizes)
            args, kw = call_args(k, inputs, sizes)
            dt = seconds(lambda: k(*args, **kw))
            w = work(k.scop, sizes)
            metric = choose_metric(w)
            shown = ", ".join(f"{s}={v}" for s, v in sizes.items())
            print(f"  {shown:38} variant {k.select(**sizes).name:8} {verdict:34} "
                  f"{rate(w, dt, metric):8.1f} {metric}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
