"""What limits the OpenCL target on a GPU, in one short run: matmul as polydyn compiles it for
any size against the same product compiled with its sizes fixed (``--assume``: full blocks,
no guards, constant reduction tiles) and by register-tile shape; matmul by the mapping's
sizes given in recipes (``run_sizes``: work-items per group, reduction steps per local
tile, buffers, vector copies); conv2d with its parallel loops in outer-product order or
isl's (``run_conv``); GEMV both ways by kernel width (``run_gemv``); ragged batches with
launches shared or not (``run_ragged``); the row reductions (softmax, layernorm) at the GPU
issue's sizes, in the 32- and the 64-bit index build. torch-cuda runs each beside it.

Run from the repository root on a machine whose default OpenCL device is the GPU:
``python bench/gpu_probe.py``. Prints one line per measurement and NVIDIA's register report
for the matmul kernels where the device is NVIDIA's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import polydyn as pd
from kernels.layernorm import layernorm
from kernels.matmul import matmul
from kernels.softmax import softmax
from polydyn.bench.timing import Budget, measure
from polydyn.operator_files import with_assume


def timed(call, sync, seconds: float = 0.3) -> float:
    """The median time of ``call()`` with ``sync()`` after each (polydyn.bench.timing)."""
    return measure(lambda: (call(), sync()), Budget(seconds=seconds)).median


def torch_time(fn, *arrays):
    import torch

    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = [torch.from_numpy(a).cuda() for a in arrays]
    return timed(lambda: fn(*dev), torch.cuda.synchronize)


def fixed(op, sizes):
    return with_assume(op, " and ".join(f"{k} = {v}" for k, v in sizes.items()))


def run_matmul(n: int) -> None:
    import pyopencl.array as cla
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    want = a.astype(np.float64) @ b
    flop = 2 * n**3
    t = torch_time(torch.mm, a, b)
    line = [f"torch {flop / t / 1e12:.2f}" if t else "torch -"]
    # "auto": polydyn's own choice (4x4 or the alternative whose groups fill the device);
    # "4x4" etc.: those register tiles alone (POLYDYN_OCL_REGTILE)
    configs = [("auto", matmul, ""), ("4x4", matmul, "4x4"), ("2x2", matmul, "2x2")] \
        if n < 1000 else [("auto", matmul, ""), ("fixed auto", None, ""),
                          ("8x4", matmul, "8x4")]
    for label, op, regtile in configs:
        src = op if op is not None else fixed(matmul, {"N": n, "K": n, "M": n})
        try:
            k = pd.compile(src, target="opencl", ocl_regtile=regtile)
            dev = [cla.to_device(k.queue, x) for x in (a, b)]
            out = cla.empty(k.queue, (n, n), np.float32)
            k(*dev, C=out)
            err = float(np.abs(out.get() - want).max())
            s = timed(lambda k=k, dev=dev, out=out: k(*dev, C=out), k.queue.finish)
            line.append(f"{label} {flop / s / 1e12:.2f} (err {err:.0e})")
        except Exception as exc:  # a probe reports and goes on
            line.append(f"{label} failed: {type(exc).__name__}: {str(exc)[:120]}")
    print(f"matmul {n}^3 TFLOP/s: " + "; ".join(line), flush=True)


def run_sizes(n: int) -> None:
    """matmul at ``n``^3 with the mapping's sizes given by recipe (``gpu(...)``): register
    tiles, work-items per group, reduction steps per local tile, local buffers per copy
    (``s1``: one; the default two) and element-wise copies (``scalar``; the default loads
    16-byte vectors), one variant each."""
    import pyopencl.array as cla

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    want = a.astype(np.float64) @ b
    line = []
    for regtile, group, bk, stages, vector in (
            ("4x4", (16, 16), 16, 2, True), ("4x4", (16, 16), 16, 1, True),
            ("4x4", (16, 16), 16, 2, False), ("4x4", (16, 16), 16, 1, False),
            ("4x4", (16, 16), 8, 2, True), ("4x4", (16, 16), 32, 2, True),
            ("4x4", (8, 32), 16, 2, True), ("8x4", (16, 16), 16, 2, True),
            ("8x4", (16, 16), 8, 2, True), ("8x8", (16, 16), 8, 2, True),
            ("8x8", (16, 16), 16, 2, True), ("4x8", (16, 8), 16, 2, True)):
        label = f"{regtile} {group[0]}x{group[1]} bk{bk}" + (" s1" if stages == 1 else "") + \
            ("" if vector else " scalar")
        recipe = pd.Schedule.isl().gpu(regtile=regtile, group=group, bk=bk, stages=stages,
                                       vector=vector)
        try:
            k = pd.compile(matmul, target="opencl", variants=[("true", recipe)])
            dev = [cla.to_device(k.queue, x) for x in (a, b)]
            out = cla.empty(k.queue, (n, n), np.float32)
            k(*dev, C=out)
            err = float(np.abs(out.get() - want).max())
            s = timed(lambda k=k, dev=dev, out=out: k(*dev, C=out), k.queue.finish, 0.2)
            line.append(f"{label} {2 * n**3 / s / 1e12:.2f} (err {err:.0e})")
        except Exception as exc:  # a probe reports and goes on
            line.append(f"{label} failed: {type(exc).__name__}: {str(exc)[:120]}")
    print(f"matmul {n}^3 by recipe sizes, TFLOP/s: " + "; ".join(line), flush=True)


def run_conv(scale: int = 1) -> None:
    """conv2d at three of the suite's shapes (their images ``scale`` times smaller), with the
    parallel loops in outer-product order (output channels x output columns in the register
    tiles: the default) and in isl's order (``gpu(product_order=False)``: output rows x
    columns), torch-cuda beside them."""
    import pyopencl.array as cla
    import torch

    from kernels.conv2d import conv2d

    rng = np.random.default_rng(0)
    for b, c, h, w, f in ((1, 64, 56, 56, 64), (4, 3, 224, 224, 32), (8, 64, 28, 28, 64)):
        h, w = max(6, h // scale), max(6, w // scale)
        x = rng.standard_normal((b, c, h, w), dtype=np.float32)
        wt = rng.standard_normal((f, c, 3, 3), dtype=np.float32)
        flop = 2 * b * f * (h - 2) * (w - 2) * c * 9
        t = torch_time(torch.nn.functional.conv2d, x, wt)
        line = [f"torch {flop / t / 1e12:.2f}" if t else "torch -"]
        want = torch.nn.functional.conv2d(torch.from_numpy(x).double(),
                                          torch.from_numpy(wt).double()).numpy()
        for label, ordered in (("product order", True), ("isl order", False)):
            try:
                recipe = pd.Schedule.isl().gpu(product_order=ordered)
                k = pd.compile(conv2d, target="opencl", variants=[("true", recipe)])
                dev = [cla.to_device(k.queue, v) for v in (x, wt)]
                out = cla.empty(k.queue, want.shape, np.float32)
                k(*dev, Y=out)
                err = float(np.abs(out.get() - want).max())
                s = timed(lambda k=k, dev=dev, out=out: k(*dev, Y=out), k.queue.finish, 0.2)
                line.append(f"{label} {flop / s / 1e12:.2f} (err {err:.0e}; "
                            f"{k.variants[0].summary.split('kernel(s): ')[-1].split(' (else')[0]})")
            except Exception as exc:  # a probe reports and goes on
                line.append(f"{label} failed: {type(exc).__name__}: {str(exc)[:120]}")
        print(f"conv2d {b}x{c}x{h}x{w} F={f} 3x3, TFLOP/s: " + "; ".join(line), flush=True)


def run_rows(scale: int = 1) -> None:
    import pyopencl.array as cla
    import torch

    rng = np.random.default_rng(0)
    for name, op, shape in (("softmax", softmax, (512, 4096)), ("softmax", softmax, (64, 4096)),
                            ("layernorm", layernorm, (512, 768)),
                            ("layernorm", layernorm, (2048, 4096))):
        shape = (max(1, shape[0] // scale), max(1, shape[1] // scale))
        x = rng.standard_normal(shape, dtype=np.float32)
        moved = 2 * x.nbytes
        k = pd.compile(op, target="opencl")
        if name == "softmax":
            args = (x,)
            tfn = lambda t: torch.softmax(t, dim=1)  # noqa: E731
        else:
            g = rng.standard_normal(shape[1], dtype=np.float32)
            bb = rng.standard_normal(shape[1], dtype=np.float32)
            args = (x, g, bb)
            tfn = lambda t, g, bb, d=shape[1]: torch.nn.functional.layer_norm(  # noqa: E731
                t, (d,), g, bb, 1e-5)
        dev = [cla.to_device(k.queue, v) for v in args]
        out = cla.empty(k.queue, shape, np.float32)
        t = torch_time(tfn, *args)
        line = [f"torch {moved / t / 1e9 if t else 0:.0f} GB/s"]
        for label, narrow in (("32-bit", k._index32), ("64-bit", False)):
            k._index32 = narrow  # the index build the call runs (OpenCLKernel.narrow_ok)
            k(*dev, Y=out)
            err = float(np.abs(out.get() - op.reference(*args)).max())
            s = timed(lambda k=k, dev=dev, out=out: k(*dev, Y=out), k.queue.finish)
            ratio = f"{t / s:.2f}x torch" if t else "no torch"
            line.append(f"{label} {moved / s / 1e9:.0f} GB/s {ratio} (err {err:.0e})")
        print(f"{name} {shape}: " + "; ".join(line), flush=True)


N_, M_, K_ = pd.sym("N M K")


@pd.operator(assume="M >= 1 and K >= 1")
def mat_vec(A: pd.f32[M_, K_], x: pd.f32[K_], y: pd.out(pd.f32[M_])):  # noqa: N803
    """``A @ x`` as a user writes it: each row's sum in its cell."""
    for i in range(M_):
        y[i] = 0.0
        for k in range(K_):
            y[i] += A[i, k] * x[k]


def run_gemv(scale: int = 1) -> None:
    """GEMV both ways (``x @ B``: matmul's N = 1 variant; ``A @ x``) at the GPU issue's
    sizes: polydyn's own choice, then each kernel of the launch forced through the compute
    units it sees (one value per work-item; lanes for 32 values per group; the wide twin)."""
    import pyopencl.array as cla
    import torch

    rng = np.random.default_rng(0)
    for kk, m in ((4096, 4096), (4096, 11008), (11008, 4096)):
        kk, m = max(1, kk // scale), max(1, m // scale)
        for name, op in (("x @ B", matmul), ("A @ x", mat_vec)):
            if op is matmul:
                args, shape = (rng.standard_normal((1, kk), dtype=np.float32),
                               rng.standard_normal((kk, m), dtype=np.float32)), (1, m)
                tfn = torch.mm
            else:
                args, shape = (rng.standard_normal((m, kk), dtype=np.float32),
                               rng.standard_normal(kk, dtype=np.float32)), (m,)
                tfn = torch.mv
            moved = 4 * kk * m
            t = torch_time(tfn, *args)
            line = [f"torch {moved / t / 1e9:.0f} GB/s" if t else "torch -"]
            k = pd.compile(op, target="opencl")
            dev = [cla.to_device(k.queue, v) for v in args]
            out = cla.empty(k.queue, shape, np.float32)
            name_out = "C" if op is matmul else "y"
            want = op.reference(*args)
            units = k.compute_units
            for label, forced in (("auto", units), ("1/item", 1), ("lanes", -(-m // 32)),
                                  ("wide", 10**6)):
                k.compute_units = forced
                try:
                    k(*dev, **{name_out: out})
                    err = float(np.abs(out.get() - want).max())
                    s = timed(lambda k=k, dev=dev, kw={name_out: out}: k(*dev, **kw),
                              k.queue.finish)
                    ratio = f" {t / s:.2f}x" if t else ""
                    line.append(f"{label} {moved / s / 1e9:.0f} GB/s{ratio} (err {err:.0e})")
                except Exception as exc:  # a probe reports and goes on
                    line.append(f"{label} failed: {type(exc).__name__}: {str(exc)[:100]}")
            k.compute_units = units
            print(f"gemv {name} K={kk} M={m}: " + "; ".join(line), flush=True)


def run_ragged() -> None:
    """bench/ragged.py's skewed batch (64 sequences) on the GPU: the ragged kernels with
    the sequences' launches shared against sequence by sequence (both copy the NumPy
    arrays in and out on each call)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ragged

    lengths = ragged.skewed_lengths()
    rng = np.random.default_rng(0)
    total = int(lengths.sum())
    x = pd.Jagged(rng.standard_normal((total, 768)).astype(np.float32), lengths)
    w = rng.standard_normal((768, 768)).astype(np.float32) / 28
    g = rng.standard_normal(768).astype(np.float32)
    for name, op, args in (("projection 768x768", ragged.rag_proj, (x, w)),
                           ("layernorm D=768", ragged.rag_layernorm, (x, g))):
        k = pd.compile(op, target="opencl")
        line = []
        for label, call in (("shared", lambda k=k, args=args: k(*args)),
                            ("one by one", lambda k=k, args=args: ragged.one_by_one(k, *args))):
            s = timed(call, lambda: None)
            line.append(f"{label} {s * 1e3:.2f} ms")
        print(f"ragged {name}, 64 sequences (copies included): " + "; ".join(line), flush=True)


def register_report() -> None:
    k = pd.compile(matmul, target="opencl")
    if "NVIDIA" not in k.device.platform.name:
        return
    import pyopencl as cl

    from polydyn.runtime.opencl import BUILD_OPTIONS, INDEX32_DEFINES

    options = ["-cl-nv-verbose", *BUILD_OPTIONS, *INDEX32_DEFINES]
    prg = cl.Program(k.context, k.source).build(options=options)
    log = prg.get_build_info(k.device, cl.program_build_info.LOG)
    print("\n".join(line for line in log.splitlines()
                    if "registers" in line or "spill" in line or "Function" in line))


def main() -> None:
    print(f"probe at {os.environ.get('PROBE_REV', '?')}", flush=True)
    scale = int(os.environ.get("PROBE_ROW_SCALE", "1"))
    sizes = os.environ.get("PROBE_SIZES", "1024 2048 1000 512 256")
    # what the last GPU run has not measured first: recipe sizes, buffers, vector copies and
    # the convolution's loop order
    run_sizes(int(os.environ.get("PROBE_SIZES", "2048").split()[0]))
    run_conv(scale)
    run_gemv(scale)
    run_ragged()
    run_rows(scale)
    for n in map(int, sizes.split()):
        run_matmul(n)
    register_report()


if __name__ == "__main__":
    main()
