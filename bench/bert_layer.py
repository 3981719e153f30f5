"""A BERT-base encoder layer (CPU inference) built from polydyn operators, against PyTorch.

The layer is the usual post-norm one: fused QKV projection, scaled dot-product attention with
the padding mask (an additive mask per key position, as Hugging Face's extended attention mask:
0 where a token is real, -10000 where it is padding), output projection + residual, LayerNorm,
FFN with erf GELU, projection + residual, LayerNorm; hidden 768, 12 heads, FFN 3072. Each
batch's last sequence has its second half padded (every other one is full). polydyn runs it
twice: calling the kernels with tensors (eager), and as custom operators inside
torch.compile(dynamic=True, fullgraph=True).
Torch runs the same weights eagerly and under torch.compile(dynamic=True). Every point is
checked against torch eager (relative error 1e-4 of the output's scale), then timed.

    python bench/bert_layer.py [--points 1x16,1x64,...] [--repeats 5] [--out FILE.md]
        [--plot FILE.png]
"""

# the operators name tensors as the math does (X, W, QKV), as kernels/ do
# ruff: noqa: N803

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import polydyn as pd  # noqa: E402
import polydyn.torch  # noqa: E402
from kernels.layernorm import layernorm  # noqa: E402
from polydyn import f32, inout, out  # noqa: E402
from polydyn.bench.report import cpu_model  # noqa: E402

HIDDEN, HEADS, FFN = 768, 12, 3072
N, IN, OUTF, B, S, H, DH = pd.sym("N IN OUTF B S H DH")


@pd.operator
def linear(X: f32[N, IN], W: f32[IN, OUTF], bias: f32[OUTF], Y: out(f32[N, OUTF])):
    for n, o in pd.grid(N, OUTF):
        Y[n, o] = bias[o]
        for i in range(IN):
            Y[n, o] += X[n, i] * W[i, o]


@pd.operator
def linear_gelu(X: f32[N, IN], W: f32[IN, OUTF], bias: f32[OUTF], Y: out(f32[N, OUTF])):
    """The FFN's first projection with bias and erf GELU in its epilogue (scop/epilogue.py
    runs the GELU as a vector pass of its own after the product's register tiles)."""
    for n, o in pd.grid(N, OUTF):
        Y[n, o] = bias[o]
        for i in range(IN):
            Y[n, o] += X[n, i] * W[i, o]
        Y[n, o] = 0.5 * Y[n, o] * (1.0 + pd.erf(Y[n, o] * 0.7071067811865476))


@pd.operator
def linear_residual(X: f32[N, IN], W: f32[IN, OUTF], bias: f32[OUTF], R: f32[N, OUTF],
                    Y: out(f32[N, OUTF])):
    for n, o in pd.grid(N, OUTF):
        Y[n, o] = bias[o] + R[n, o]
        for i in range(IN):
            Y[n, o] += X[n, i] * W[i, o]


@pd.operator
def linear_out_major(X: f32[N, IN], W: f32[OUTF, IN], bias: f32[OUTF], Y: out(f32[N, OUTF])):
    """nn.Linear's own layout, the weight ``[out, in]`` (``--layout nn.Linear``)."""
    for n, o in pd.grid(N, OUTF):
        Y[n, o] = bias[o]
        for i in range(IN):
            Y[n, o] += X[n, i] * W[o, i]


@pd.operator
def linear_gelu_out_major(X: f32[N, IN], W: f32[OUTF, IN], bias: f32[OUTF],
                          Y: out(f32[N, OUTF])):
    for n, o in pd.grid(N, OUTF):
        s = 0.0
        for i in range(IN):
            s += X[n, i] * W[o, i]
        v = s + bias[o]
        Y[n, o] = 0.5 * v * (1.0 + pd.erf(v * 0.7071067811865476))


@pd.operator
def linear_residual_out_major(X: f32[N, IN], W: f32[OUTF, IN], bias: f32[OUTF],
                              R: f32[N, OUTF], Y: out(f32[N, OUTF])):
    for n, o in pd.grid(N, OUTF):
        Y[n, o] = bias[o] + R[n, o]
        for i in range(IN):
            Y[n, o] += X[n, i] * W[o, i]


@pd.operator
def attn_scores(QKV: f32[B, S, 3, H, DH], P: out(f32[B, H, S, S])):
    for b, h, i, j in pd.grid(B, H, S, S):
        P[b, h, i, j] = 0.0
        for d in range(DH):
            P[b, h, i, j] += QKV[b, i, 0, h, d] * QKV[b, j, 1, h, d]


@pd.operator(assume="S >= 1")
def masked_softmax(P: inout(f32[B, H, S, S]), mask: f32[B, S], scale: f32):
    """Scale, the padding mask and the softmax of each row of scores, in one operator."""
    for b, h, i in pd.grid(B, H, S):
        m = P[b, h, i, 0] * scale + mask[b, 0]
        for j in range(S):
            m = max(m, P[b, h, i, j] * scale + mask[b, j])
        total = 0.0
        for j in range(S):
            P[b, h, i, j] = pd.exp(P[b, h, i, j] * scale + mask[b, j] - m)
            total += P[b, h, i, j]
        for j in range(S):
            P[b, h, i, j] = P[b, h, i, j] / total


@pd.operator
def attn_context(P: f32[B, H, S, S], QKV: f32[B, S, 3, H, DH], Ctx: out(f32[B, S, H, DH])):
    for b, i, h, d in pd.grid(B, S, H, DH):
        Ctx[b, i, h, d] = 0.0
        for j in range(S):
            Ctx[b, i, h, d] += P[b, h, i, j] * QKV[b, j, 2, h, d]


def weights(seed: int = 0) -> dict[str, torch.Tensor]:
    """BERT-base-sized random weights, nn.Linear layout ([out, in])."""
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape: int, scale: float = 0.02) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * scale

    return {"wqkv": rand(3 * HIDDEN, HIDDEN), "bqkv": rand(3 * HIDDEN),
            "wo": rand(HIDDEN, HIDDEN), "bo": rand(HIDDEN),
            "g1": 1 + rand(HIDDEN, scale=0.1), "b1": rand(HIDDEN),
            "wi": rand(FFN, HIDDEN), "bi": rand(FFN),
            "wf": rand(HIDDEN, FFN), "bf": rand(HIDDEN),
            "g2": 1 + rand(HIDDEN, scale=0.1), "b2": rand(HIDDEN)}


def padding_mask(b: int, s: int) -> torch.Tensor:
    """The additive mask [b, s]: the last sequence's second half is padding."""
    mask = torch.zeros(b, s)
    mask[-1, (s + 1) // 2:] = -10000.0
    return mask


def torch_layer(w: dict[str, torch.Tensor], x: torch.Tensor, mask: torch.Tensor
                ) -> torch.Tensor:
    """The reference: the layer in torch operations."""
    b, s, _ = x.shape
    qkv = F.linear(x, w["wqkv"], w["bqkv"]).view(b, s, 3, HEADS, HIDDEN // HEADS)
    q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
    scores = q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS) + mask[:, None, None, :]
    p = torch.softmax(scores, dim=-1)
    ctx = (p @ v).transpose(1, 2).reshape(b, s, HIDDEN)
    h = F.layer_norm(F.linear(ctx, w["wo"], w["bo"]) + x, (HIDDEN,), w["g1"], w["b1"], 1e-5)
    f = F.gelu(F.linear(h, w["wi"], w["bi"]))
    return F.layer_norm(F.linear(f, w["wf"], w["bf"]) + h, (HIDDEN,), w["g2"], w["b2"], 1e-5)


def polydyn_layer(ops: dict, w: dict[str, torch.Tensor], layout: str = "input-major"):
    """The layer from polydyn kernels (or their custom operators): ``ops`` by name. With
    ``layout`` "input-major" the projections read ``[in, out]`` copies of the weights made
    once here; with "nn.Linear" the weights as nn.Linear holds them (``ops`` then the
    ``OPERATORS_NN`` ones)."""
    wt = w if layout == "nn.Linear" else \
        {k: v.t().contiguous() if v.dim() == 2 else v for k, v in w.items()}  # [in, out]
    scale = 1.0 / math.sqrt(HIDDEN // HEADS)

    def layer(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        x2 = x.reshape(b * s, HIDDEN)
        qkv = ops["linear"](x2, wt["wqkv"], wt["bqkv"]).view(b, s, 3, HEADS, HIDDEN // HEADS)
        p = ops["attn_scores"](qkv)
        ops["masked_softmax"](p, mask, scale)  # in place
        ctx = ops["attn_context"](p, qkv).view(b * s, HIDDEN)
        h = ops["layernorm"](ops["linear_residual"](ctx, wt["wo"], wt["bo"], x2),
                             wt["g1"], wt["b1"])
        f = ops["linear_gelu"](h, wt["wi"], wt["bi"])
        y = ops["layernorm"](ops["linear_residual"](f, wt["wf"], wt["bf"], h),
                             wt["g2"], wt["b2"])
        return y.view(b, s, HIDDEN)

    return layer


OPERATORS = {"linear": linear, "linear_gelu": linear_gelu, "linear_residual": linear_residual,
             "attn_scores": attn_scores, "masked_softmax": masked_softmax,
             "attn_context": attn_context, "layernorm": layernorm}
# the projections written for nn.Linear's [out, in] weights, the GELU's sum in a scalar
OPERATORS_NN = {**OPERATORS, "linear": linear_out_major, "linear_gelu": linear_gelu_out_major,
                "linear_residual": linear_residual_out_major}


def timed_in_turns(fns: dict, x: torch.Tensor, mask: torch.Tensor, repeats: int
                   ) -> dict[str, float]:
    """Median milliseconds of each implementation, one call each in turn per round (the order
    rotated each round), so that a burst of outside load hits them alike."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            fns[name](x, mask)
            times[name].append(time.perf_counter() - t0)
    return {n: sorted(t)[len(t) // 2] * 1e3 for n, t in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points",
                        default="1x1,1x16,1x64,1x128,1x256,1x512,2x64,4x128,4x384,16x64",
                        help="batch x seqlen points, comma-separated")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--layout", choices=("input-major", "nn.Linear"), default="nn.Linear",
                        help="how the projections' operators read the weights")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "bert_layer.md")
    parser.add_argument("--plot", type=Path, default=None,
                        help="also plot latency against sequence length (batch 1 points)")
    args = parser.parse_args()
    points = [tuple(int(v) for v in p.split("x")) for p in args.points.split(",")]
    torch.manual_seed(0)
    w = weights()

    t0 = time.perf_counter()
    operators = OPERATORS_NN if args.layout == "nn.Linear" else OPERATORS
    kernels = {name: pd.compile(op) for name, op in operators.items()}
    pd_compile = time.perf_counter() - t0
    custom = {name: polydyn.torch.custom_op(k, name=f"bert::{name}")
              for name, k in kernels.items()}
    impls = {"torch eager": lambda x, mask: torch_layer(w, x, mask),
             "polydyn eager": polydyn_layer(kernels, w, args.layout)}
    compiled = {"torch.compile": torch.compile(lambda x, mask: torch_layer(w, x, mask),
                                               dynamic=True),
                "polydyn in torch.compile": torch.compile(
                    polydyn_layer(custom, w, args.layout), dynamic=True, fullgraph=True)}
    compile_s = dict.fromkeys(compiled, 0.0)
    frames_before = dict.fromkeys(compiled, 0)
    rows = []
    with torch.no_grad():
        for b, s in points:
            x = torch.randn(b, s, HIDDEN)
            mask = padding_mask(b, s)
            want = torch_layer(w, x, mask)
            row = {"point": f"{b}x{s}"}
            for name, fn in {**impls, **compiled}.items():
                frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
                t = time.perf_counter()
                got = fn(x, mask)  # first call: the check, and for compiled ones any compile
                if name in compiled:
                    compile_s[name] += time.perf_counter() - t
                    frames_before[name] += (
                        torch._dynamo.utils.counters["stats"]["unique_graphs"] - frames)
                err = ((got - want).abs().max() / want.abs().max()).item()
                if err > 1e-4:
                    raise SystemExit(f"{name} at {b}x{s}: relative error {err:.2e} > 1e-4")
                row[name + " err"] = err
            row.update(timed_in_turns({**impls, **compiled}, x, mask, args.repeats))
            rows.append(row)
            print(row, flush=True)
    text = report(rows, list({**impls, **compiled}), compile_s, frames_before, pd_compile,
                  args.repeats, args.layout)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if args.plot is not None:
        plot(rows, list({**impls, **compiled}), args.plot)
    print(text)
    return 0


def plot(rows: list[dict], names: list[str], path: Path) -> None:
    """Latency against sequence length at batch 1, one line per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ones = sorted((int(r["point"].split("x")[1]), r) for r in rows
                  if r["point"].startswith("1x"))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        ax.plot([s for s, _ in ones], [r[name] for _, r in ones], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length (batch 1)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("BERT-base encoder layer, CPU inference")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)



def report(rows, names, compile_s, graphs, pd_compile, repeats, layout) -> str:
    threads = torch.get_num_threads()
    weights = "nn.Linear's [out, in]" if layout == "nn.Linear" else "an [in, out] copy's"
    lines = [
        f"Projections read the weights in {weights} layout. "
        f"Machine: {cpu_model()}, {os.cpu_count()} cores (load average at the end below); "
        f"torch {torch.__version__} ({threads} threads); OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; Python {platform.python_version()}. "
        f"Median of {repeats} calls after a checked first call, the implementations timed "
        "in turns, under torch.no_grad().",
        "",
        "| batch x seqlen | " + " | ".join(f"{n} (ms)" for n in names) +
        " | polydyn / torch eager | max rel. error |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    for row in rows:
        errs = max(row[n + " err"] for n in names)
        lines.append(f"| {row['point']} | " + " | ".join(f"{row[n]:.2f}" for n in names) +
                     f" | {row['torch eager'] / row['polydyn eager']:.2f}x | {errs:.1e} |")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    lines += ["", f"polydyn compile of the 7 operators: {pd_compile:.1f} s (cache as found). "
              f"Load average at the end of the run (1, 5, 15 min): {load}."]
    for name in compile_s:
        lines.append(f"{name}: {graphs[name]} graph(s) compiled over {len(rows)} shapes "
                     f"({graphs[name] - 1 if graphs[name] else 0} recompilation(s)), "
                     f"{compile_s[name]:.1f} s in first calls.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
