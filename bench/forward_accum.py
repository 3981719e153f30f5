# ruff: noqa: N803
"""``python bench/forward_accum.py [--quick]``: operators that keep a reduction in a local
scalar, compiled with and without forwarding the scalar into its cell (scop/forward.py),
timed in turns in one process beside the bundled phrasing where there is one.

Cases: matmul 512^3 with a scalar accumulator (against kernels/matmul.py); nn.Linear's
layout ``Y[n, o] = b[o] + sum_i X[n, i] * W[o, i]`` at 128 x 768 x 768 with the scalar (and
its bundled-style phrasing with the cell), and with the weight input-major; a row max
512 x 4096; maxpool 8 x 64 x 112 x 112.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polydyn as pd
import polydyn.pipeline as pipeline
from kernels import load
from polydyn import f32, out
from polydyn.bench.timing import Budget, measure_interleaved, wait_quiet
from polydyn.testing import call_args, make_inputs

N, M, K, D = pd.sym("N M K D")


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_acc(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


@pd.operator()
def linear_acc(X: f32[N, K], W: f32[D, K], b: f32[D], Y: out(f32[N, D])):
    for n in range(N):
        for o in range(D):
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * W[o, k]
            Y[n, o] = acc + b[o]


@pd.operator()
def linear_cell(X: f32[N, K], W: f32[D, K], b: f32[D], Y: out(f32[N, D])):
    for n in range(N):
        for o in range(D):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[o, k]


@pd.operator()
def linear_kd_acc(X: f32[N, K], W: f32[K, D], b: f32[D], Y: out(f32[N, D])):
    """The weight stored input-major (``x @ W + b``): forwarded, the bias as an epilogue."""
    for n in range(N):
        for o in range(D):
            acc = 0.0
            for k in range(K):
                acc += X[n, k] * W[k, o]
            Y[n, o] = acc + b[o]


@pd.operator()
def rowmax_acc(X: f32[N, M], Y: out(f32[N])):
    for i in range(N):
        m = -pd.inf
        for j in range(M):
            m = max(m, X[i, j])
        Y[i] = m


def compile_both(op):
    """(without forwarding, with forwarding): separate caches, so neither reuses the other."""
    keep = pipeline.forward_accumulators
    pipeline.forward_accumulators = lambda scop: (scop, ())
    try:
        before = pd.compile(op, cache_dir=Path(tempfile.mkdtemp(prefix="pd-before-")))
    finally:
        pipeline.forward_accumulators = keep
    after = pd.compile(op)
    return before, after


def caller(kernel, sizes):
    args, kw = call_args(kernel, make_inputs(kernel, sizes), sizes)
    return lambda: kernel(*args, **kw)


def run(name, op, sizes, flops, bundled=None, budget=None, label="bundled phrasing"):
    before, after = compile_both(op)
    kernels = [("scalar, not forwarded", before), ("scalar, forwarded", after)]
    if bundled is not None:
        kernels.append((label, pd.compile(bundled)))
    print(f"{name} {sizes}  notes: {after.notes}")
    fns = [caller(k, sizes) for _, k in kernels]
    times = measure_interleaved(fns, budget, rounds=3, before_round=lambda _: wait_quiet())
    for (label, _), t in zip(kernels, times, strict=True):
        rate = f"{flops / t.median / 1e9:8.1f} GFLOP/s" if flops else \
            f"{sum(v.nbytes for v in make_inputs(op, sizes).values()) / t.median / 1e9:8.1f} GB/s"
        print(f"  {label:24} {t.median * 1e3:9.3f} ms  {rate}  spread {t.spread:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    budget = Budget(seconds=2.0) if parser.parse_args().quick else Budget(seconds=6.0)
    run("matmul", matmul_acc, {"N": 512, "M": 512, "K": 512}, 2 * 512 ** 3,
        load("matmul")[0], budget)
    run("linear", linear_acc, {"N": 128, "D": 768, "K": 768}, 2 * 128 * 768 * 768,
        linear_cell, budget, "the cell's phrasing")
    run("linear, W[k, o]", linear_kd_acc, {"N": 128, "D": 768, "K": 768},
        2 * 128 * 768 * 768, None, budget)
    run("rowmax", rowmax_acc, {"N": 512, "M": 4096}, 0, None, budget)
    run("maxpool", load("maxpool")[0], {"B": 8, "C": 64, "H": 112, "W": 112}, 0, None,
        budget)


if __name__ == "__main__":
    main()
