"""The C build (codegen_c.toolchain): a generated module is one C file that compiles on its
own, and polydyn's build compiles its variants as translation units of their own, in
parallel, linking them with only the entry points exported."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn.codegen_c import toolchain
from polydyn.codegen_c.toolchain import UNIT_BREAK, build_shared, split_units
from polydyn.options import Options


@pytest.fixture(scope="module")
def bias_relu():
    op, numpy_impl = load("bias_relu")
    return pd.compile(op), numpy_impl


def test_module_splits_into_a_unit_per_variant(bias_relu, monkeypatch):
    kernel, _ = bias_relu
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: 2)
    units = split_units(kernel.source)
    assert units is not None and len(units) == len(kernel.variants) + 1
    head = kernel.source.split(UNIT_BREAK)[0]
    for k, unit in enumerate(units[:-1]):  # a variant's function each, after the head
        assert unit.startswith(head)
        assert f"PD_VARIANT int bias_relu_v{k}(" in unit
        assert "bias_relu_select" not in unit
    assert "int bias_relu_select(" in units[-1]  # the dispatcher, with the prototypes


def test_one_cpu_builds_the_single_file(bias_relu, monkeypatch):
    kernel, _ = bias_relu
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: 1)
    assert split_units(kernel.source) is None


@pytest.mark.parametrize("cpus", [1, 2])
def test_library_exports_the_entry_points_only(bias_relu, tmp_path, monkeypatch, cpus):
    """Built in units (hidden variants) or as one file (static ones), the library runs the
    kernel and exports the three entry points, no variant function."""
    kernel, numpy_impl = bias_relu
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: cpus)
    lib_path = build_shared(kernel.source, "bias_relu", Options(cache_dir=tmp_path))
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib_path)],
                             capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
    assert exported == {"bias_relu", "bias_relu_select", "bias_relu_run"}
    lib = ctypes.CDLL(str(lib_path))
    rng = np.random.default_rng(cpus)
    x = rng.standard_normal((7, 13)).astype(np.float32)
    b = rng.standard_normal(13).astype(np.float32)
    y = np.full_like(x, np.nan)
    ptr = ctypes.c_void_p
    rc = lib.bias_relu(ctypes.c_int64(7), ctypes.c_int64(13), ptr(x.ctypes.data),
                       ptr(b.ctypes.data), ptr(y.ctypes.data))
    assert rc == 0
    np.testing.assert_allclose(y, numpy_impl(x, b), rtol=1e-6)


def test_the_single_file_compiles_on_its_own(bias_relu, tmp_path):
    """What `polydyn compile` writes: one file, the variants static."""
    kernel, _ = bias_relu
    src = tmp_path / "bias_relu.c"
    src.write_text(kernel.source)
    subprocess.run(["cc", "-O1", "-fopenmp", "-Wall", "-Werror", "-c", str(src), "-o",
                    str(tmp_path / "bias_relu.o")], check=True)


def test_a_unit_that_fails_is_reported_and_nothing_is_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: 2)
    source = "\n".join(["static int helper(void) { return 1; }", UNIT_BREAK,
                        "int good(void) { return helper(); }", UNIT_BREAK,
                        "int bad(void) { return helper() }"])
    with pytest.raises(pd.CompileError, match="generated for broken") as info:
        build_shared(source, "broken", Options(cache_dir=tmp_path))
    assert "error" in str(info.value) and "return helper() }" in str(info.value)
    assert not list(tmp_path.rglob("*.so")) and not list(tmp_path.rglob(toolchain.UNIT_OBJECT))


def test_a_unit_built_before_is_linked_not_compiled(tmp_path, monkeypatch):
    """Two modules that share a function: the second compiles only its new unit and the
    dispatcher's, and links the shared one's object from the cache."""
    monkeypatch.setattr(toolchain, "usable_cpus", lambda: 2)
    compiled: list[str] = []
    real_cc = toolchain._cc

    def cc(cmd: list[str]) -> subprocess.CompletedProcess:
        if "-c" in cmd:
            compiled.append(Path(cmd[cmd.index("-c") + 1]).read_text())
        return real_cc(cmd)

    monkeypatch.setattr(toolchain, "_cc", cc)
    head = "static int helper(void) { return 20; }"

    def module(other: str) -> str:
        return "\n".join([head, UNIT_BREAK, "int shared(void) { return helper() + 1; }",
                          UNIT_BREAK, other, UNIT_BREAK, "int entry(void) { return 0; }"])

    options = Options(cache_dir=tmp_path)
    first = build_shared(module("int one(void) { return 1; }"), "first", options)
    assert len(compiled) == 3
    compiled.clear()
    second = build_shared(module("int two(void) { return helper() + 2; }"), "second", options)
    assert len(compiled) == 1 and "int two(" in compiled[0]  # shared(), entry(): linked
    for path, name, value in [(first, "one", 1), (second, "two", 22), (second, "shared", 21)]:
        assert getattr(ctypes.CDLL(str(path)), name)() == value
