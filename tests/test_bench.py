"""The benchmark machinery (polydyn.bench): sweep parsing, work counting with isl, timing
statistics, checks, and a tiny end-to-end ``polydyn bench`` run."""

import csv
import json

import islpy as isl
import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn.bench import sweep as sw
from polydyn.bench.check import compare
from polydyn.bench.timing import Budget, measure, measure_interleaved, summarize
from polydyn.bench.work import choose_metric, count_points, statement_flops, work
from polydyn.cli import main

# --- sweeps -----------------------------------------------------------------------------------


def test_linear_sweep():
    assert sw.parse_sweep("N=1:10:3").values == (1, 4, 7, 10)
    assert sw.parse_sweep("N=0:4:1").values == (0, 1, 2, 3, 4)


def test_log_sweep_has_both_ends_and_is_sorted():
    s = sw.parse_sweep("N=1:4096:log13")
    assert s.log
    assert s.values == tuple(2**k for k in range(13))
    s = sw.parse_sweep("N=1:4096:log16")
    assert s.values[0] == 1 and s.values[-1] == 4096
    assert list(s.values) == sorted(set(s.values))


def test_default_range_is_log16():
    assert sw.parse_sweep("N=1:4096").values == sw.parse_sweep("N=1:4096:log16").values


def test_lin_count_sweep():
    assert sw.parse_sweep("L=0:100:lin5").values == (0, 25, 50, 75, 100)


def test_explicit_list():
    s = sw.parse_sweep("N=1,7,33")
    assert s.names == ("N",) and s.values == (1, 7, 33) and not s.log


def test_around_tiles():
    assert sw.parse_sweep("K=tiles:16,32").values == (15, 16, 17, 31, 32, 33)
    assert sw.parse_sweep("K=tiles:0,1").values == (0, 1, 2)


def test_tied_syms_and_product_with_fix():
    tied = sw.parse_sweep("N=M=K=2,4")
    other = sw.parse_sweep("B=1,3")
    points = sw.expand([tied, other], {"T": 5})
    assert points[0] == {"T": 5, "N": 2, "M": 2, "K": 2, "B": 1}
    assert len(points) == 4
    assert points[-1]["N"] == 4 and points[-1]["B"] == 3


@pytest.mark.parametrize("bad", ["N", "N=", "N=a:b", "N=5:1", "N=1:2:3:4", "1N=3",
                                 "N=1:10:0", "N=0:8:log4"])
def test_bad_sweeps_are_refused(bad):
    with pytest.raises(sw.SweepError):
        sw.parse_sweep(bad)


def test_fix_and_complete():
    assert sw.parse_fix(["K=512", "M=3,N=4"]) == {"K": 512, "M": 3, "N": 4}
    with pytest.raises(sw.SweepError, match="no value for K"):
        sw.complete([{"N": 1, "M": 2}], ("N", "M", "K"))
    with pytest.raises(sw.SweepError, match="not a sym"):
        sw.complete([{"N": 1, "Q": 2}], ("N",))
    with pytest.raises(sw.SweepError, match="more than once"):
        sw.expand([sw.parse_sweep("N=1,2")], {"N": 3})


# --- work -------------------------------------------------------------------------------------


def test_matmul_flops_from_isl_counting():
    op, _ = load("matmul")
    w = work(op.scop, {"N": 37, "M": 19, "K": 23})
    assert w.flops == 2 * 37 * 19 * 23
    assert w.instances == 37 * 19 * (23 + 1)
    assert w.bytes == 4 * (37 * 23 + 23 * 19 + 37 * 19)
    big = work(op.scop, {"N": 4096, "M": 4096, "K": 4096})  # a box: counted without enumerating
    assert big.flops == 2 * 4096**3
    assert choose_metric(big) == "GFLOP/s"


def test_softmax_is_bandwidth_bound_and_counts_calls():
    op, _ = load("softmax")
    w = work(op.scop, {"N": 3, "L": 5})
    # per element: max, subtract + exp, accumulate, scale; per row: one division
    assert w.flops == 3 * 5 * 5 + 3
    assert choose_metric(w) == "GB/s"


def test_strided_and_inout_work():
    op, _ = load("maxpool")
    w = work(op.scop, {"B": 2, "C": 3, "H": 9, "W": 7})
    assert w.per_statement["S1"] == 2 * 3 * 4 * 3 * 4
    op, _ = load("jacobi2d")
    w = work(op.scop, {"N": 10, "T": 3})
    assert w.flops == 3 * 8 * 8 * 5  # 4 additions and a multiply per interior point
    assert w.bytes == 2 * 10 * 10 * 4  # A read and written


def test_count_points_of_non_boxes():
    triangle = isl.Set("{ S[i, j] : 0 <= i < 700 and 0 <= j <= i }")
    assert count_points(triangle) == 700 * 701 // 2
    evens = isl.Set("{ S[i, j] : 0 <= i < 600 and 0 <= j < 600 and (i + j) mod 2 = 0 }")
    assert count_points(evens) == 600 * 600 // 2
    assert count_points(isl.Set("{ S[i] : 0 <= i < 0 }")) == 0


def test_statement_flops_of_compound_assignment():
    op, _ = load("matmul")
    assert [statement_flops(s) for s in op.scop.statements] == [0, 2]


# --- timing and checks ------------------------------------------------------------------------


def test_summary_statistics():
    t = summarize([3.0, 1.0, 2.0, 4.0, 100.0], inner=1)
    assert t.median == 3.0 and t.min == 1.0 and t.max == 100.0
    assert t.spread == pytest.approx((4.0 - 2.0) / 3.0)


def test_measure_batches_short_calls():
    t = measure(lambda: None, Budget(seconds=0.01, min_samples=3, warmup_seconds=0.0))
    assert t.inner > 1 and t.samples >= 3 and t.median < 1e-4


def test_interleaved_timing_takes_turns():
    calls: list[int] = []
    fns = [lambda k=k: calls.append(k) for k in range(3)]
    rounds: list[int] = []
    budget = Budget(seconds=0.0, min_samples=4, min_sample=0.0, warmup_seconds=0.0)
    timings = measure_interleaved(fns, budget, rounds=2, before_round=rounds.append)
    assert rounds == [0, 1]
    # round 0: a first call and 2 samples each, in order; round 1 starts one later, 2 more
    assert calls == [0, 0, 0, 1, 1, 1, 2, 2, 2] + [1, 1, 2, 2, 0, 0]
    assert [t.samples for t in timings] == [4, 4, 4] and all(t.inner == 1 for t in timings)
    calls.clear()
    # a warm function's first call is a sample; each later round warms every function again
    budget = Budget(seconds=10.0, min_samples=2, max_samples=2, min_sample=0.0,
                    warmup_seconds=1e-9)
    timings = measure_interleaved(fns[:2], budget, warm=[True, False], rounds=2)
    assert calls == [0, 1, 1] + [1, 1, 0, 0]
    assert [t.samples for t in timings] == [2, 2]
    calls.clear()
    # calls that outlast a round's share (here every call: 0 s) are never warmed up again
    measure_interleaved(fns[:2], Budget(seconds=0.0, min_samples=2, min_sample=0.0,
                                        warmup_seconds=1.0), rounds=2)
    assert calls == [0, 0, 1, 1] + [1, 0]


def test_compare_tolerance_catches_indexing_errors():
    want = {"Y": np.linspace(-1, 1, 100)}
    ok = {"Y": (want["Y"] + 1e-7).astype(np.float32)}
    assert compare(ok, want, depth=4)[1] == ""
    bad = ok["Y"].copy()
    bad[17] = bad[18]
    assert "differs" in compare({"Y": bad}, want, depth=4)[1]
    assert "shape" in compare({"Y": bad[:5]}, want, depth=4)[1]


# --- end to end -------------------------------------------------------------------------------


def test_bench_command_writes_csv_json_markdown(tmp_path):
    rc = main(["bench", "kernels/matmul.py", "--sweep", "N=1,8", "--fix", "M=8", "--fix", "K=8",
               "--quick", "--budget", "0.02", "--no-progress", "--baseline", "numpy,naive",
               "--metric", "gflops", "--out", str(tmp_path)])
    assert rc == 0
    rows = list(csv.DictReader((tmp_path / "matmul.csv").open()))
    impls = {r["impl"] for r in rows}
    assert {"polydyn", "numpy"} <= impls
    assert all(r["status"] == "ok" for r in rows), [r["message"] for r in rows]
    poly = [r for r in rows if r["impl"] == "polydyn"]
    assert [int(r["sym_N"]) for r in poly] == [1, 8]
    assert all(r["check"] == "interp" and r["variant"] for r in poly)
    assert int(poly[1]["flops"]) == 2 * 8 * 8 * 8
    doc = json.loads((tmp_path / "matmul.json").read_text())
    assert doc["machine"]["cpu"] and doc["machine"]["cc_version"]
    assert doc["sweeps"][0]["metric"] == "GFLOP/s"
    assert "polydyn / numpy" in (tmp_path / "matmul.md").read_text()
    assert (tmp_path / "matmul.png").stat().st_size > 1000


def test_bench_command_user_errors(tmp_path, capsys):
    assert main(["bench", "kernels/matmul.py", "--sweep", "N=1,8", "--out", str(tmp_path)]) == 2
    assert "no value for" in capsys.readouterr().err
    assert main(["bench", "kernels/matmul.py", "--sweep", "N=x", "--out", str(tmp_path)]) == 2
    assert main(["bench", "--out", str(tmp_path)]) == 2
    assert main(["bench", "kernels/matmul.py", "--fix", "N=1,M=1,K=1", "--baseline", "gpu",
                 "--out", str(tmp_path)]) == 2


def test_wrong_kernel_is_reported_not_timed(tmp_path):
    from polydyn.bench.runner import Settings, sweep

    op, numpy_impl = load("bias_relu")

    def wrong_numpy(x, b):
        return np.maximum(x - b, 0).astype(x.dtype)

    settings = Settings(budget=Budget(seconds=0.01, min_samples=1, warmup_seconds=0.0),
                        baselines=("numpy",), progress=False, rounds=2)
    result = sweep(op, numpy_impl, [{"N": 300, "M": 400}], settings, pd.compile)
    assert {r.impl: r.status for r in result.rows}["numpy"] == "ok"
    assert {r.impl: r.check for r in result.rows}["polydyn"] == "numpy-f64"  # 120000 instances
    result = sweep(op, wrong_numpy, [{"N": 30, "M": 40}], settings, pd.compile)
    rows = {r.impl: r for r in result.rows}
    assert rows["numpy"].status == "wrong" and rows["numpy"].timing is None
    assert rows["numpy"].check == "interp" and rows["polydyn"].status == "ok"


def _opencl() -> bool:
    from polydyn.runtime.opencl import opencl_available

    return opencl_available()


@pytest.mark.opencl
@pytest.mark.skipif(not _opencl(), reason="no OpenCL platform (install PoCL)")
@pytest.mark.parametrize(("name", "points"), [
    ("bias_relu", [{"N": 7, "M": 33}, {"N": 300, "M": 401}]),
    ("jacobi2d", [{"N": 9, "T": 3}]),  # an inout array, updated on the device
])
def test_opencl_target_alone_is_timed_on_device_arrays(name, points):
    from polydyn.bench.baselines import kernel_impl
    from polydyn.bench.report import markdown_table, sweep_dict
    from polydyn.bench.runner import Settings, sweep
    from polydyn.testing import make_inputs

    op, numpy_impl = load(name)
    settings = Settings(budget=Budget(seconds=0.01, min_samples=1, warmup_seconds=0.0),
                        baselines=("numpy", "torch-cuda"), targets=("opencl",),
                        progress=False)
    result = sweep(op, numpy_impl, points, settings, pd.compile)
    rows = [r for r in result.rows if r.impl in ("polydyn-opencl", "generic-opencl")]
    assert rows and all(r.status == "ok" and r.timing for r in rows), \
        [r.message for r in rows]
    assert rows[0].check == "interp"
    assert result.skipped.get("torch-cuda") in (None, "torch is not installed",
                                                "torch sees no CUDA GPU",
                                                f"no torch function for {name}")
    assert "polydyn-opencl / numpy" in markdown_table(sweep_dict(result))

    kernel = pd.compile(op, target="opencl")
    seen: list[set[str]] = []

    class Spy:  # the kernel, recording what kinds of arrays each call gets
        def __getattr__(self, attr):
            return getattr(kernel, attr)

        def __call__(self, *args, **kwargs):
            seen.append({type(x).__name__ for x in [*args, *kwargs.values()]
                         if not isinstance(x, int)})
            return kernel(*args, **kwargs)

    sizes = points[0]
    prepared = kernel_impl("polydyn-opencl", Spy()).prepare(
        make_inputs(op, sizes, 0), sizes)
    prepared.call()
    assert seen == [{"Array"}]
    assert all(isinstance(v, np.ndarray) for v in prepared.results().values())


@pytest.mark.slow
def test_quick_suite_subset(tmp_path):
    from polydyn.bench.suite import run_suite

    suite = run_suite(tmp_path, quick=True, only=["transpose", "softmax"], plots=True)
    assert all(r.status == "ok" for s in suite.sweeps for r in s.rows)
    assert (tmp_path / "suite.csv").is_file() and suite.compile and suite.overhead


# --- reports of GPU runs ----------------------------------------------------------------------


def _gpu_row(impl: str, sizes: dict[str, int], rate: float) -> dict:
    """A row of a call that does 1 GFLOP (or moves 1 GB) at ``rate``."""
    return {"impl": impl, "sizes": " ".join(f"{k}={v}" for k, v in sizes.items()),
            **{f"sym_{k}": v for k, v in sizes.items()}, "variant": "tiled", "status": "ok",
            "rate_median": rate, "median_s": 1.0 / rate, "busy": 0.0, "message": ""}


def _gpu_suite(device: str) -> dict:
    """A small suite.json of a GPU run: one GFLOP/s sweep, one GB/s sweep."""
    sweeps = []
    for op, metric, rates in (("matmul", "GFLOP/s", {"polydyn-opencl": 3350.0,
                                                     "torch-cuda": 47000.0}),
                              ("bias_relu", "GB/s", {"polydyn-opencl": 1360.0,
                                                     "torch-cuda": 1290.0})):
        sizes = {"N": 2048, "M": 2048}
        rows = [_gpu_row(impl, sizes, rate) for impl, rate in rates.items()]
        rows.append(_gpu_row("numpy", sizes, 100.0))
        sweeps.append({"operator": op, "label": "", "metric": metric, "rows": rows,
                       "skipped": {}, "plots": [], "stats": {}})
    machine = {"cpu": "x", "simd": "avx2", "cores": 16, "cc_version": "cc", "cflags": "-O3",
               "OMP_NUM_THREADS": "unset", "numpy": "2", "blas": "b", "torch": "2",
               "python": "3.12", "polydyn": "0", "git": "abc", "date": "today",
               "devices": [f"OpenCL: {device} (NVIDIA CUDA), driver 1",
                           f"CUDA: {device} (torch 2, CUDA 13.0)"]}
    return {"machine": machine, "settings": {"rounds": 4, "quiet": 0}, "mode": "full",
            "sweeps": sweeps}


def _table_rows(text: str, first: str) -> list[dict[str, str]]:
    """The markdown table that follows the line starting with ``first``, as dicts by column."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(first))
    head = [c.strip() for c in lines[at + 2].strip("|").split("|")]
    rows = []
    for line in lines[at + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(dict(zip(head, cells, strict=True)))
    return rows


@pytest.mark.parametrize(("device", "peak"), [
    ("NVIDIA H100 80GB HBM3", {"GFLOP/s": 67_000.0, "GB/s": 3_350.0}),
    ("NVIDIA H200", {"GFLOP/s": 67_000.0, "GB/s": 4_800.0}),
])
def test_gpu_tables_give_the_share_of_the_roofline(tmp_path, device, peak):
    from polydyn.bench.report import suite_markdown
    from polydyn.bench.summary import render

    doc = _gpu_suite(device)
    (tmp_path / "suite.json").write_text(json.dumps(doc))
    for text in (suite_markdown(doc), render(doc)):
        for sweep in doc["sweeps"]:
            rows = _table_rows(text, f"{sweep['operator']}: {sweep['metric']}")
            assert len(rows) == 1
            for r in sweep["rows"]:
                if r["impl"] == "numpy":
                    assert "numpy of roofline" not in rows[0]
                    continue
                shown = float(rows[0][f"{r['impl']} of roofline"].rstrip("%"))
                want = 100 * r["rate_median"] / peak[sweep["metric"]]
                assert shown == pytest.approx(want, rel=5e-3)
            poly, cuda = (next(r for r in sweep["rows"] if r["impl"] == i)
                          for i in ("polydyn-opencl", "torch-cuda"))
            ratio = cuda["median_s"] / poly["median_s"]
            assert rows[0]["polydyn-opencl / torch-cuda"] == f"{ratio:.2f}x"
    assert f"{peak['GB/s'] / 1e3:g} TB/s" in suite_markdown(doc)


def test_cpu_and_unknown_device_tables_have_no_roofline():
    from polydyn.bench.report import suite_markdown

    doc = _gpu_suite("pthread-Intel(R) Xeon(R) Processor")
    assert "roofline" not in suite_markdown(doc).lower()
    doc["machine"]["devices"] = []
    assert "roofline" not in suite_markdown(doc).lower()


def test_gpu_section_of_results_md_renders_from_suite_json(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_all", "bench/run_all.py")
    run_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_all)
    doc = _gpu_suite("NVIDIA H100 80GB HBM3")
    (tmp_path / "suite.json").write_text(json.dumps(doc))
    (tmp_path / "suite.md").write_text("as written\n")
    text = run_all._gpu_tables(tmp_path)
    assert "Roofline: H100 SXM: 67 TFLOP/s FP32, 3.35 TB/s" in text
    row = _table_rows(text, "bias_relu: GB/s")[0]
    assert row["polydyn-opencl of roofline"] == f"{100 * 1360 / 3350:.3g}%"
    (tmp_path / "suite.json").unlink()
    assert run_all._gpu_tables(tmp_path) == "as written\n"


def test_suite_deadline_lists_the_sweeps_it_did_not_start(tmp_path):
    from polydyn.bench.suite import run_suite

    suite = run_suite(tmp_path, quick=True, only=["transpose", "softmax"], plots=False,
                      costs=False, deadline=0.0)
    assert suite.sweeps == []
    doc = json.loads((tmp_path / "suite.json").read_text())
    assert doc["not_run"] == ["softmax-rows", "transpose"]
    assert "Not run (past the run's deadline): softmax-rows, transpose." in \
        (tmp_path / "suite.md").read_text()
