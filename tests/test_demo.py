"""The demo (scripts/demo.py, what scripts/demo.sh runs) on tiny shapes: it checks every shape,
compares with NumPy, ends with its summary line, and exits non-zero when a check fails."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "scripts" / "demo.py"
SUMMARY = re.compile(r"^(\d+) of (\d+) checks passed; geometric-mean speed vs NumPy: "
                     r"\d+\.\d\dx over (\d+) shapes$", re.M)
# --ref-limit 50: the first shape of bias_relu (N=1, M=1024) is checked against NumPy, and
# the reference runs at a smaller shape of the same variant
QUICK = ["--quick", "--kernels", "bias_relu,softmax", "--ref-limit", "50"]


def test_demo_quick_run() -> None:
    proc = subprocess.run([sys.executable, str(DEMO), *QUICK], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = SUMMARY.search(proc.stdout)
    assert summary, proc.stdout
    passed, total, shapes = map(int, summary.groups())
    assert passed == total >= 3 and shapes == 2
    assert "reference too slow at this size; reference at N=1, M=32, same variant" in proc.stdout


def test_demo_fails_on_a_wrong_result(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    spec = importlib.util.spec_from_file_location("polydyn_demo", DEMO)
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "polydyn_demo", demo)  # for its dataclasses
    spec.loader.exec_module(demo)
    real_load = demo.load

    def wrong_load(name: str):
        op, numpy_impl = real_load(name)
        return op, lambda *args, **kw: numpy_impl(*args, **kw) + 1

    monkeypatch.setattr(demo, "load", wrong_load)
    assert demo.main(["--quick", "--kernels", "bias_relu", "--ref-limit", "50"]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "1 of 2 checks passed" in out
