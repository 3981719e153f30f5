"""Ragged batches (issue 35): polydyn's ragged kernels against padding to the longest sequence.

Three per-sequence operators over a skewed batch (64 sequences, log-normal lengths clipped to
1..512, the longest 512): a projection with a shared 768 x 768 weight, layernorm over
D = 768, and causal attention scores (D = 64). Each runs as

- polydyn ragged: ``pd.Jagged`` in, each sequence on the variant of its own length;
- torch eager, padded: the batch padded to the longest sequence (masking the scores);
- polydyn dense, padded: polydyn's dense kernel of the same operator on the padded batch;
- torch nested: ``layout=torch.jagged`` nested tensors, where torch supports the operator.

With ``--target opencl`` the kernels are OpenCL ones, and the ragged kernels also run one
sequence after another (``RaggedKernel.together`` off), against their launches shared by
the sequences. Useful GFLOP/s count only the work of the real (unpadded) rows. Times are
medians of repeated calls, the implementations timed in turns. Usage:
``python bench/ragged.py [--target opencl] [--repeat 7] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import polydyn as pd
from polydyn import f32, out
from polydyn.bench.report import cpu_model

B, N, D, O = pd.sym("B N D O")  # noqa: E741
L = pd.ragged("L", B)


@pd.operator(assume="D >= 1 and O >= 1")
def rag_proj(X: f32[B, L, D], W: f32[D, O], Y: out(f32[B, L, O])):
    for b in range(B):
        for s in range(L[b]):
            for o in range(O):
                Y[b, s, o] = 0.0
                for k in range(D):
                    Y[b, s, o] += X[b, s, k] * W[k, o]


@pd.operator(assume="D >= 1 and O >= 1")
def dense_proj(X: f32[B, N, D], W: f32[D, O], Y: out(f32[B, N, O])):
    for b in range(B):
        for s in range(N):
            for o in range(O):
                Y[b, s, o] = 0.0
                for k in range(D):
                    Y[b, s, o] += X[b, s, k] * W[k, o]


@pd.operator(assume="D >= 1")
def rag_layernorm(X: f32[B, L, D], G: f32[D], Y: out(f32[B, L, D])):
    for b in range(B):
        for s in range(L[b]):
            mu = 0.0
            for d in range(D):
                mu += X[b, s, d]
            mu = mu / D
            var = 0.0
            for d in range(D):
                var += (X[b, s, d] - mu) * (X[b, s, d] - mu)
            r = 1.0 / pd.sqrt(var / D + 1e-5)
            for d in range(D):
                Y[b, s, d] = (X[b, s, d] - mu) * r * G[d]


@pd.operator(assume="D >= 1")
def dense_layernorm(X: f32[B, N, D], G: f32[D], Y: out(f32[B, N, D])):
    for b in range(B):
        for s in range(N):
            mu = 0.0
            for d in range(D):
                mu += X[b, s, d]
            mu = mu / D
            var = 0.0
            for d in range(D):
                var += (X[b, s, d] - mu) * (X[b, s, d] - mu)
            r = 1.0 / pd.sqrt(var / D + 1e-5)
            for d in range(D):
                Y[b, s, d] = (X[b, s, d] - mu) * r * G[d]


@pd.operator(assume="D >= 1")
def rag_scores(Q: f32[B, L, D], K: f32[B, L, D], S: out(f32[B, L, L])):
    for b in range(B):
        for i in range(L[b]):
            for j in range(L[b]):
                S[b, i, j] = 0.0
                if j <= i:
                    for k in range(D):
                        S[b, i, j] += Q[b, i, k] * K[b, j, k]


@pd.operator(assume="D >= 1")
def dense_scores(Q: f32[B, N, D], K: f32[B, N, D], S: out(f32[B, N, N])):
    for b in range(B):
        for i in range(N):
            for j in range(N):
                S[b, i, j] = 0.0
                if j <= i:
                    for k in range(D):
                        S[b, i, j] += Q[b, i, k] * K[b, j, k]


def skewed_lengths(batch: int = 64, longest: int = 512, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(4.0, 1.0, batch).astype(np.int64), 1, longest)
    lengths[0] = longest
    return lengths


def padded(j: pd.Jagged) -> np.ndarray:
    out_ = np.zeros((j.batch, int(j.lengths.max()), *j.values.shape[1:]), j.values.dtype)
    for b, block in enumerate(j.blocks()):
        out_[b, : len(block)] = block
    return out_


def timed(fns: dict, repeat: int) -> dict[str, float]:
    """Median seconds per implementation, timed in turns after one warm-up call each."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def one_by_one(kernel, *args):
    """A ragged OpenCL kernel run one sequence after another (``RaggedKernel.together``
    off): the launches it makes without grouping, for comparison."""
    kernel.together = False
    try:
        return kernel(*args)
    finally:
        kernel.together = True


def cases(lengths: np.ndarray, torch, target: str = "c") -> list[tuple[str, float, dict]]:
    """(name, useful flops, implementations) per operator; each implementation is checked
    against NumPy before timing. OpenCL: the ragged kernels also one sequence at a time."""
    rng = np.random.default_rng(1)
    total = int(lengths.sum())
    compile_ = (lambda op: pd.compile(op, target="opencl")) if target == "opencl" else \
        pd.compile

    def alone(impls: dict, kernel, *args) -> dict:
        if target == "opencl":
            np.testing.assert_allclose(one_by_one(kernel, *args).values, kernel(*args).values,
                                       rtol=1e-4, atol=1e-4)
            impls["polydyn ragged, one by one"] = lambda: one_by_one(kernel, *args)
        return impls

    def jag(d: int) -> pd.Jagged:
        return pd.Jagged(rng.standard_normal((total, d)).astype(np.float32), lengths)

    def nested(j: pd.Jagged):
        return torch.nested.nested_tensor_from_jagged(torch.from_numpy(j.values),
                                                      offsets=torch.from_numpy(j.offsets))

    out_cases = []
    # projection: Y = X W per sequence, W 768 x 768
    x, w = jag(768), rng.standard_normal((768, 768)).astype(np.float32) / 28
    kr1, kd1 = compile_(rag_proj), compile_(dense_proj)
    xp, tw = padded(x), torch.from_numpy(w)
    txp, xn = torch.from_numpy(xp), nested(x)
    np.testing.assert_allclose(kr1(x, w).values, x.values @ w, rtol=1e-3, atol=1e-3)
    out_cases.append(("projection 768x768", 2.0 * total * 768 * 768, alone({
        "polydyn ragged": lambda: kr1(x, w), "torch padded": lambda: torch.matmul(txp, tw),
        "polydyn dense padded": lambda: kd1(xp, w), "torch nested": lambda: torch.matmul(xn, tw),
    }, kr1, x, w)))
    # layernorm over D = 768
    g = rng.standard_normal(768).astype(np.float32)
    kr2, kd2 = compile_(rag_layernorm), compile_(dense_layernorm)
    tg = torch.from_numpy(g)
    np.testing.assert_allclose(
        kr2(x, g).values, torch.nn.functional.layer_norm(torch.from_numpy(x.values), (768,),
                                                        tg).numpy(), rtol=1e-3, atol=1e-3)
    ln = torch.nn.functional.layer_norm
    out_cases.append(("layernorm D=768", 8.0 * total * 768, alone({
        "polydyn ragged": lambda: kr2(x, g), "torch padded": lambda: ln(txp, (768,), tg),
        "polydyn dense padded": lambda: kd2(xp, g), "torch nested": lambda: ln(xn, (768,), tg),
    }, kr2, x, g)))
    # causal scores, D = 64
    q, k = jag(64), jag(64)
    kr3, kd3 = compile_(rag_scores), compile_(dense_scores)
    qp, kp = padded(q), padded(k)
    tq, tk = torch.from_numpy(qp), torch.from_numpy(kp)
    n = qp.shape[1]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    s = kr3(q, k)
    for qb, kb, sb in zip(q.blocks(), k.blocks(), s.blocks(), strict=True):
        np.testing.assert_allclose(sb, np.tril(qb @ kb.T), rtol=1e-3, atol=1e-3)
    flops = float(sum(2.0 * 64 * m * (m + 1) / 2 for m in lengths.tolist()))
    qn, kn = nested(q), nested(k)

    def nested_scores():
        return torch.matmul(qn, kn.transpose(-2, -1))

    impls = {"polydyn ragged": lambda: kr3(q, k),
             "torch padded": lambda: torch.matmul(tq, tk.transpose(1, 2)).masked_fill_(
                 ~causal, 0.0),
             "polydyn dense padded": lambda: kd3(qp, kp)}
    try:
        nested_scores()
        impls["torch nested"] = nested_scores
    except Exception as exc:  # torch's jagged matmul of two ragged operands
        print(f"torch nested scores: not supported ({type(exc).__name__})")
    out_cases.append(("causal scores D=64", flops, alone(impls, kr3, q, k)))
    return out_cases



def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--target", choices=("c", "opencl"), default="c")
    parser.add_argument("--out", default=None,
                        help="default bench/results/ragged.md (ragged_opencl.md for OpenCL)")
    args = parser.parse_args()
    opencl = args.target == "opencl"
    out_path = args.out or f"bench/results/ragged{'_opencl' if opencl else ''}.md"
    torch.set_num_threads(os.cpu_count() or 1)
    lengths = skewed_lengths()
    load_before = os.getloadavg()[0]
    names = ["polydyn ragged", *(["polydyn ragged, one by one"] if opencl else []),
             "torch padded", "polydyn dense padded", "torch nested"]
    where = ""
    if opencl:
        from polydyn.runtime.opencl import resolve_device

        where = (f" OpenCL device: {resolve_device(None).describe()} (NumPy arrays in and "
                 "out: each call copies them); torch on the CPU.")
    lines = [
        f"Batch: {len(lengths)} sequences, lengths log-normal clipped to 1..512 (sum "
        f"{int(lengths.sum())}, max {int(lengths.max())}, median {int(np.median(lengths))}; "
        f"padding does {len(lengths) * int(lengths.max()) / lengths.sum():.1f}x the rows). "
        f"Machine: {cpu_model()}, {os.cpu_count()} cores; "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads). Medians of "
        f"{args.repeat} calls, in turns.{where}", "",
        "| operator | " + " | ".join(f"{n} ms (useful GFLOP/s)" for n in names) +
        " | ragged speedup over torch padded | over polydyn dense padded |" +
        (" over one by one |" if opencl else ""),
        "|---|" + "---|" * (len(names) + 2 + opencl),
    ]
    for name, flops, impls in cases(lengths, torch, args.target):
        t = timed(impls, args.repeat)
        cells = [f"{t[n] * 1e3:.2f} ({flops / t[n] / 1e9:.1f})" if n in t else "n/a"
                 for n in names]
        base = t["polydyn ragged"]
        lines.append(f"| {name} | " + " | ".join(cells) +
                     f" | {t['torch padded'] / base:.2f}x | "
                     f"{t['polydyn dense padded'] / base:.2f}x |" +
                     (f" {t['polydyn ragged, one by one'] / base:.2f}x |" if opencl else ""))
        print(lines[-1], flush=True)
    lines += ["", f"Load average (1 min) {load_before:.1f} before the run and "
              f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores: other processes "
              "share the CPUs, so absolute times move between runs; the implementations are "
              "timed in turns, so the ratios are the steadier figures."]
    text = "\n".join(lines) + "\n"
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
