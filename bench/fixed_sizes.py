"""``python bench/fixed_sizes.py [--quick] [--out FILE]``: every bundled kernel compiled twice,
dynamic and with its sizes fixed (``--assume "N = ..."``, as ``polydyn compile --assume``
does), timed in turns in one process at those sizes. Prints a markdown table with the
variant each runs and the speed of the fixed compile relative to the dynamic one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polydyn as pd
from kernels import load
from polydyn.bench.report import cpu_model
from polydyn.bench.timing import Budget, measure_interleaved, wait_quiet
from polydyn.operator_files import with_assume
from polydyn.testing import call_args, make_inputs

CONV = {"KH": 3, "KW": 3}
POINTS = {
    "matmul": [{"N": 512, "M": 512, "K": 512}, {"N": 1531, "M": 1531, "K": 1531},
               {"N": 8, "M": 1024, "K": 1024}],
    "batched_matmul": [{"B": 8, "N": 64, "M": 64, "K": 64}],
    "bias_relu": [{"N": 128, "M": 1000}, {"N": 1024, "M": 1024}],
    "softmax": [{"N": 64, "L": 2048}, {"N": 512, "L": 4096}],
    "layernorm": [{"N": 128, "D": 768}, {"N": 512, "D": 1024}],
    "conv2d": [{"B": 1, "C": 64, "F": 64, "H": 56, "W": 56, **CONV},
               {"B": 8, "C": 64, "F": 64, "H": 28, "W": 28, **CONV},
               {"B": 4, "C": 3, "F": 32, "H": 224, "W": 224, **CONV}],
    "maxpool": [{"B": 1, "C": 64, "H": 112, "W": 112}],
    "transpose": [{"N": 1000, "M": 1000}],
    "jacobi2d": [{"N": 1000, "T": 20}],
}


def fixed(op: pd.Operator, sizes: dict[str, int]):
    return with_assume(op, " and ".join(f"{k} = {v}" for k, v in sizes.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="")
    opts = parser.parse_args()
    budget = Budget(seconds=1.0 if opts.quick else 3.0)
    lines = [f"Machine: {cpu_model()}, {len(os.sched_getaffinity(0))} CPUs", "",
             "| kernel | sizes | dynamic ms (variant) | fixed ms (variant) "
             "| fixed / dynamic speed |",
             "|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name, points in POINTS.items():
        op = load(name)[0]
        dynamic = pd.compile(op)
        for sizes in points:
            known = pd.compile(fixed(op, sizes))
            args, kw = call_args(dynamic, make_inputs(dynamic, sizes), sizes)
            fns = [lambda d=dynamic, a=args, w=kw: d(*a, **w),
                   lambda k=known, a=args, w=kw: k(*a, **w)]
            td, tf = measure_interleaved(fns, budget, rounds=2,
                                         before_round=lambda _: wait_quiet())
            shape = " ".join(f"{k}={v}" for k, v in sizes.items())
            line = (f"| {name} | {shape} | {td.median * 1e3:.3f} ({dynamic.select(**sizes).name})"
                    f" | {tf.median * 1e3:.3f} ({known.select(**sizes).name}) | "
                    f"{td.median / tf.median:.2f}x |")
            print(line, flush=True)
            lines.append(line)
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
