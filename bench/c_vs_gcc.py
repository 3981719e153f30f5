"""polydyn's code for C kernels against gcc -O3 -march=native on the same C file (issue 6).

For each kernel in tests/c_kernels: the original function compiled by gcc into a shared
library (called through ctypes with its own signature, read with pycparser), and
pd.compile_c of the same file; both run on the same random inputs, results are compared,
then each is timed (best of several calls after a warm-up). The original C has no OpenMP
pragmas, so gcc's code is single-threaded; polydyn's runs with OMP_NUM_THREADS threads.

    .venv/bin/python bench/c_vs_gcc.py [--out bench/results] [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from pycparser import c_ast, c_parser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import polydyn as pd  # noqa: E402
from polydyn.scop.from_c import _preprocess  # noqa: E402

KERNELS = ROOT / "tests" / "c_kernels"
# (file, function, sizes, flops per call as a function of the sizes)
CASES = [
    ("gemm.c", "gemm", {"NI": 1000, "NJ": 1000, "NK": 1000},
     lambda s: 2 * s["NI"] * s["NJ"] * s["NK"]),
    ("mm2.c", "mm2", {"NI": 800, "NJ": 800, "NK": 800, "NL": 800},
     lambda s: 2 * s["NI"] * s["NJ"] * s["NK"] + 2 * s["NI"] * s["NL"] * s["NJ"]),
    ("syrk.c", "syrk", {"N": 1000, "M": 1000}, lambda s: s["N"] * (s["N"] + 1) * s["M"]),
    ("trmm.c", "trmm", {"M": 1000, "N": 1000}, lambda s: s["M"] * s["M"] * s["N"]),
    ("gemv.c", "gemv", {"M": 4000, "N": 4000}, lambda s: 2 * s["M"] * s["N"]),
    ("jacobi2d.c", "jacobi2d", {"TSTEPS": 20, "N": 1000},
     lambda s: 10 * s["TSTEPS"] * (s["N"] - 2) ** 2),
    ("seidel2d.c", "seidel2d", {"TSTEPS": 10, "N": 1000},
     lambda s: 9 * s["TSTEPS"] * (s["N"] - 2) ** 2),
]
QUICK = {"NI": 200, "NJ": 200, "NK": 200, "NL": 200, "N": 200, "M": 200, "TSTEPS": 4}
CTYPE = {"float": ctypes.c_float, "double": ctypes.c_double, "int": ctypes.c_int,
         "long": ctypes.c_long}
NPTYPE = {"float": np.float32, "double": np.float64, "int": np.int32, "long": np.int64}


def signature(path: Path, function: str) -> list[tuple[str, str, bool]]:
    """``(name, base type, is_array)`` of each parameter, in C order."""
    text = _preprocess(str(path), path.read_text(), path)
    tree = c_parser.CParser().parse(text, str(path))
    for ext in tree.ext:
        if isinstance(ext, c_ast.FuncDef) and ext.decl.name == function:
            out = []
            for p in ext.decl.type.args.params:
                t, is_array = p.type, False
                while isinstance(t, c_ast.ArrayDecl | c_ast.PtrDecl):
                    t, is_array = t.type, True
                out.append((p.name, t.type.names[-1], is_array))
            return out
    raise SystemExit(f"{path}: no function {function}")


def gcc_library(path: Path, tmp: Path) -> ctypes.CDLL:
    lib = tmp / f"{path.stem}_gcc.so"
    subprocess.run(["gcc", "-O3", "-march=native", "-fPIC", "-shared", str(path), "-o",
                    str(lib), "-lm"], check=True)
    return ctypes.CDLL(str(lib))


def best_of(fn, budget: float = 1.0, reps: int = 3) -> float:
    fn()
    best, spent, n = float("inf"), 0.0, 0
    while n < reps or spent < budget:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent, n = min(best, dt), spent + dt, n + 1
        if n >= 20:
            break
    return best


def run_case(file: str, function: str, sizes: dict, flops, tmp: Path) -> dict:
    path = KERNELS / file
    sig = signature(path, function)
    rng = np.random.default_rng(0)
    dims = {}  # array name -> shape, from the polydyn Scop
    kernel = pd.compile_c(path, function=function)
    for a in kernel.scop.arg_arrays:
        if a.is_tensor:
            dims[a.name] = tuple(d.eval(sizes) for d in a.shape)
    init = {}
    for name, base, is_array in sig:
        if is_array:
            init[name] = (rng.uniform(0.0, 1.0, dims[name]) / 4).astype(NPTYPE[base])
        elif name not in sizes:
            init[name] = 0.5
    lib = gcc_library(path, tmp)
    cfun = getattr(lib, function)
    cfun.argtypes = [ctypes.c_void_p if arr else CTYPE[base] for _, base, arr in sig]

    def gcc_args(arrays):
        return [arrays[n].ctypes.data if arr else (sizes[n] if n in sizes else init[n])
                for n, _, arr in sig]

    ours = {n: v.copy() for n, v in init.items() if isinstance(v, np.ndarray)}
    theirs = {n: v.copy() for n, v in ours.items()}
    cfun(*gcc_args(theirs))
    index = {s: sizes[s] for s in kernel.scop.syms if s in kernel._binder.keyword_syms}
    named = {n: (ours[n] if n in ours else init[n]) for n in kernel.scop.args}
    kernel(**named, **index)
    worst = max(float(np.max(np.abs(ours[n].astype(np.float64) - theirs[n])))
                for n in ours)
    scale = max(float(np.max(np.abs(theirs[n]))) for n in theirs)
    def gcc_call() -> None:
        fresh_arrays = {n: v.copy() for n, v in init.items() if isinstance(v, np.ndarray)}
        cfun(*gcc_args(fresh_arrays))  # the arrays stay alive across the call

    t_gcc = best_of(gcc_call)
    fresh = {n: v.copy() for n, v in init.items() if isinstance(v, np.ndarray)}
    t_pd = best_of(lambda: kernel(**{n: (fresh[n] if n in fresh else init[n])
                                     for n in kernel.scop.args}, **index))
    return {"kernel": f"{file}:{function}", "sizes": sizes, "gcc_s": t_gcc, "polydyn_s": t_pd,
            "speedup": t_gcc / t_pd, "gcc_gflops": flops(sizes) / t_gcc / 1e9,
            "polydyn_gflops": flops(sizes) / t_pd / 1e9, "variant": kernel.select(
                **{s: sizes[s] for s in kernel.scop.syms}).name,
            "max_abs_diff": worst, "result_scale": scale}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for file, function, sizes, flops in CASES:
            if args.quick:
                sizes = {k: QUICK.get(k, v) for k, v in sizes.items()}
            row = run_case(file, function, sizes, flops, Path(tmp))
            rows.append(row)
            print(f"{row['kernel']:22} {row['variant']:8} gcc {row['gcc_gflops']:7.2f} GF/s  "
                  f"polydyn {row['polydyn_gflops']:7.2f} GF/s  speedup {row['speedup']:6.2f}  "
                  f"(max diff {row['max_abs_diff']:.1e} of {row['result_scale']:.1e})",
                  flush=True)
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip() or "unknown"
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "omp_threads": threads,
               "gcc": subprocess.run(["gcc", "--version"], capture_output=True,
                                     text=True).stdout.splitlines()[0],
               "commit": commit, "date": time.strftime("%Y-%m-%d")}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"c_vs_gcc_t{threads}" + ("_quick" if args.quick else "")
    (out / f"{stem}.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    lines = [f"gcc -O3 -march=native (single thread, the original C) vs polydyn "
             f"(OMP_NUM_THREADS={threads}); {machine['gcc']}; at {commit}, "
             f"{machine['date']}", "",
             "| kernel | sizes | variant | gcc GFLOP/s | polydyn GFLOP/s | speedup |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        sz = " ".join(f"{k}={v}" for k, v in r["sizes"].items())
        lines.append(f"| {r['kernel']} | {sz} | {r['variant']} | {r['gcc_gflops']:.2f} | "
                     f"{r['polydyn_gflops']:.2f} | {r['speedup']:.2f} |")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
