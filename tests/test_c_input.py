"""C input (SPEC section 5): classic C kernels compiled by polydyn and compared with the same C
file compiled by gcc -O0 (the original C is the oracle), the calling convention, and the
located FrontendError of every refusal."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import islpy as isl
import numpy as np
import pytest
from pycparser import c_ast, c_parser

import polydyn as pd
from polydyn.scop.from_c import _preprocess, operator_from_c
from polydyn.testing import make_inputs, tolerance

KERNELS = Path(__file__).parent / "c_kernels"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def compile_c(path: Path | str, function: str | None = None, target: str = "c", **kw):
    if hasattr(pd, "compile_c"):
        return pd.compile_c(path, function=function, target=target, **kw)
    return pd.compile(operator_from_c(path, function), target=target, **kw)


# --- the oracle: the same C file built by gcc -O0, called through ctypes ----------------------
_CTYPES = {"int": ctypes.c_int, "long": ctypes.c_long, "int64_t": ctypes.c_int64,
           "float": ctypes.c_float, "double": ctypes.c_double}


class Oracle:
    """``fn(**named)`` calls the C function; arrays (NumPy, contiguous) are updated in place."""

    def __init__(self, path: Path, function: str, build_dir: Path):
        lib = build_dir / f"lib_{path.stem}.so"
        if not lib.exists():
            subprocess.run(["gcc", "-O0", "-std=gnu11", "-shared", "-fPIC", str(path), "-o",
                            str(lib), "-lm"], check=True, capture_output=True)
        self.fn = getattr(ctypes.CDLL(str(lib)), function)
        text = _preprocess(str(path), path.read_text(), path)
        ast = c_parser.CParser().parse(text, str(path))
        fdef = next(e for e in ast.ext if isinstance(e, c_ast.FuncDef)
                    and e.decl.name == function)
        self.params: list[tuple[str, str]] = []  # (name, ctypes key or "array")
        for p in fdef.decl.type.args.params:
            if isinstance(p.type, c_ast.ArrayDecl):
                self.params.append((p.name, "array"))
            else:
                self.params.append((p.name, " ".join(p.type.type.names)))
        self.fn.argtypes = [ctypes.c_void_p if kind == "array" else _CTYPES[kind]
                            for _, kind in self.params]
        self.fn.restype = None

    def __call__(self, **named) -> None:
        args = []
        for name, kind in self.params:
            x = named[name]
            if kind == "array":
                assert x.flags.c_contiguous
                args.append(x.ctypes.data_as(ctypes.c_void_p))
            else:
                args.append(x.item() if isinstance(x, np.generic) else x)
        self.fn(*args)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("c_oracle")


# --- the kernels and their sizes ------------------------------------------------------------
# (file, function, [sizes]): sizes name every int parameter; 1, primes, and around 16 and 32.
def _sizes(text: str) -> dict[str, int]:
    """``"N=3 M=5"`` -> ``{"N": 3, "M": 5}``."""
    return {k: int(v) for k, v in (item.split("=") for item in text.split())}


CASES = [
    ("gemm.c", "gemm", ["NI=1 NJ=1 NK=1", "NI=2 NJ=3 NK=5", "NI=7 NJ=13 NK=11",
                        "NI=16 NJ=15 NK=17", "NI=31 NJ=32 NK=33", "NI=0 NJ=4 NK=3",
                        "NI=3 NJ=4 NK=0"]),
    ("gemv.c", "gemv", ["M=1 N=1", "M=3 N=5", "M=17 N=16", "M=32 N=31", "M=5 N=0"]),
    ("syrk.c", "syrk", ["N=1 M=1", "N=2 M=7", "N=13 M=5", "N=16 M=17", "N=31 M=11"]),
    ("trmm.c", "trmm", ["M=1 N=1", "M=3 N=2", "M=11 N=13", "M=17 N=16", "M=32 N=7"]),
    ("mm2.c", "mm2", ["NI=1 NJ=1 NK=1 NL=1", "NI=2 NJ=3 NK=5 NL=7", "NI=16 NJ=13 NK=17 NL=15",
                      "NI=31 NJ=17 NK=11 NL=32"]),
    ("jacobi1d.c", "jacobi1d", ["TSTEPS=1 N=1", "TSTEPS=2 N=3", "TSTEPS=5 N=13",
                                "TSTEPS=7 N=32", "TSTEPS=3 N=97", "TSTEPS=0 N=5"]),
    # TSTEPS >= 10: the wavefront-tiled variant (time tiles of 5, 32 skewed rows)
    ("jacobi2d.c", "jacobi2d", ["TSTEPS=1 N=1", "TSTEPS=2 N=3", "TSTEPS=3 N=16",
                                "TSTEPS=2 N=31", "TSTEPS=4 N=17", "TSTEPS=10 N=3",
                                "TSTEPS=11 N=34", "TSTEPS=17 N=29"]),
    # a local temporary copied back: double-buffered (tests/test_buffers.py)
    ("jacobi2d_imper.c", "jacobi2d_imper", ["TSTEPS=0 N=4", "TSTEPS=1 N=1", "TSTEPS=2 N=3",
                                            "TSTEPS=3 N=16", "TSTEPS=10 N=31", "TSTEPS=11 N=33",
                                            "TSTEPS=20 N=34"]),
    ("seidel2d.c", "seidel2d", ["TSTEPS=1 N=1", "TSTEPS=2 N=3", "TSTEPS=3 N=16",
                                "TSTEPS=2 N=33", "TSTEPS=5 N=13", "TSTEPS=10 N=4",
                                "TSTEPS=12 N=35", "TSTEPS=16 N=23"]),
    ("boundary.c", "boundary", ["N=1 M=1", "N=2 M=3", "N=13 M=11", "N=16 M=17", "N=32 M=31"]),
    ("rownorm.c", "rownorm", ["N=1 L=1", "N=3 L=5", "N=17 L=16", "N=7 L=33", "N=2 L=0"]),
    ("band.c", "band", ["N=1 W=0", "N=2 W=1", "N=13 W=2", "N=16 W=5", "N=31 W=40", "N=0 W=3"]),
    ("intops.c", "intops", ["N=1 S=3", "N=5 S=0", "N=17 S=7", "N=32 S=11"]),
    ("blas1.c", "axpy", ["N=1", "N=16", "N=31"]),
    ("blas1.c", "scal_shift", ["N=1 K=1", "N=16 K=3", "N=7 K=0"]),
    ("durbin.c", "kernel_durbin", ["n=1", "n=2", "n=13", "n=32"]),
    ("deriche.c", "kernel_deriche", ["w=1 h=1", "w=5 h=7", "w=16 h=13", "w=31 h=32"]),
    ("adi.c", "kernel_adi", ["tsteps=1 n=1", "tsteps=1 n=3", "tsteps=2 n=13", "tsteps=3 n=16",
                             "tsteps=1 n=33"]),
]
# Inputs some kernels need to stay well conditioned (the oracle and polydyn both get them).
PREPARE = {
    "kernel_durbin": lambda inputs, sizes: inputs.update(r=inputs["r"] * 0.1),
}


def _inputs(kernel, sizes, seed):
    inputs = make_inputs(kernel, sizes, seed)
    return {n: (np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x)
            for n, x in inputs.items()}


def _compare(name, sizes, label, got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.size == 0:
        return
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {sizes} {label}")
        return
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{name} {sizes} {label}: NaNs"
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite]), f"{name} {sizes} {label}: infs"
    err = float(np.max(np.abs(got[finite].astype(np.float64) - want[finite]), initial=0.0))
    tol = tolerance(want.dtype, float(np.max(np.abs(want[finite]), initial=0.0)))
    assert err <= tol, f"{name} {sizes} {label}: differs from gcc -O0 by {err:.3g} > {tol:.3g}"


def _case_id(case) -> str:
    file, function, _ = case.values if hasattr(case, "values") else case
    return f"{file}:{function}"


@pytest.mark.parametrize("file,function,sizes_list", CASES, ids=[_case_id(c) for c in CASES])
def test_kernel_matches_gcc(file, function, sizes_list, build_dir):
    # gcc -O0 does not contract a * b + c into an FMA; build polydyn's code the same way so the
    # comparison checks the transformations, not the rounding of FMAs along long recurrences
    kernel = compile_c(KERNELS / file, function=function,
                       cflags=(*pd.Options().cflags, "-ffp-contract=off"))
    assert kernel.op.scop is kernel.scop and kernel.op.name == function
    _check_against_gcc(kernel, KERNELS / file, function, sizes_list, build_dir)


def _check_against_gcc(kernel, path, function, sizes_list, build_dir):
    """The kernel and the reference interpreter agree with the C function built by gcc -O0."""
    oracle = Oracle(path, function, build_dir)
    scop = kernel.scop
    for seed, text in enumerate(sizes_list):
        sizes = _sizes(text)
        inputs = _inputs(kernel, sizes, seed)
        if function in PREPARE:
            PREPARE[function](inputs, sizes)
        want = {n: (x.copy() if isinstance(x, np.ndarray) else x) for n, x in inputs.items()}
        oracle(**want, **sizes)
        got = {n: (x.copy() if isinstance(x, np.ndarray) else x) for n, x in inputs.items()}
        keywords = {s: sizes[s] for s in scop.index_syms}
        assert kernel(*[got[n] for n in scop.args], **keywords) is None
        ref = {n: (x.copy() if isinstance(x, np.ndarray) else x) for n, x in inputs.items()}
        assert kernel.op.reference(*[ref[n] for n in scop.args], **keywords) is None
        for a in scop.arg_arrays:
            if a.kind == "inout":
                _compare(function, sizes, f"{a.name} (kernel)", got[a.name], want[a.name])
                _compare(function, sizes, f"{a.name} (reference)", ref[a.name], want[a.name])
            elif a.kind == "in":
                np.testing.assert_array_equal(got[a.name], inputs[a.name])


def _opencl_available() -> bool:
    try:
        from polydyn.runtime.opencl import opencl_available
    except ImportError:
        return False
    return opencl_available()


OCL_CASES = [pytest.param(file, fn, sizes[:3])
             for file, fn, sizes in (c.values if hasattr(c, "values") else c for c in CASES)]


@pytest.mark.opencl
@pytest.mark.skipif(not _opencl_available(), reason="no OpenCL platform (install PoCL)")
@pytest.mark.parametrize("file,function,sizes_list", OCL_CASES,
                         ids=[_case_id(c) for c in OCL_CASES])
def test_opencl_kernel_matches_gcc(file, function, sizes_list, build_dir):
    kernel = compile_c(KERNELS / file, function=function, target="opencl")
    _check_against_gcc(kernel, KERNELS / file, function, sizes_list, build_dir)


# --- the mapping and the calling convention --------------------------------------------------
def test_signature_mapping():
    scop = operator_from_c(KERNELS / "gemm.c").scop
    assert scop.args == ("alpha", "beta", "C", "A", "B")
    assert scop.syms == ("NI", "NJ", "NK") and scop.index_syms == ()
    kinds = {a.name: (a.kind, a.dtype) for a in scop.arg_arrays}
    assert kinds == {"alpha": ("value", "f32"), "beta": ("value", "f32"), "C": ("inout", "f32"),
                     "A": ("in", "f32"), "B": ("in", "f32")}
    gemv = operator_from_c(KERNELS / "gemv.c").scop
    assert {a.name: a.kind for a in gemv.arg_arrays} == {
        "alpha": "value", "beta": "value", "A": "in", "x": "in", "y": "inout"}
    assert [a.name for a in gemv.arrays if a.kind == "local"] == ["acc"]
    jac = operator_from_c(KERNELS / "jacobi1d.c").scop
    assert jac.index_syms == ("TSTEPS",) and jac.syms == ("N", "TSTEPS")
    mm2 = operator_from_c(KERNELS / "mm2.c").scop
    assert [(a.name, a.kind) for a in mm2.arrays if a.kind == "temp"] == [("tmp", "temp")]
    ints = operator_from_c(KERNELS / "intops.c").scop
    assert {a.name: a.dtype for a in ints.arg_arrays} == {"A": "i32", "B": "i32", "C": "i64",
                                                          "D": "i64"}


def test_calling_convention():
    k = compile_c(KERNELS / "gemm.c")
    rng = np.random.default_rng(1)
    A = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    B = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (3, 5)).astype(np.float32)
    want = np.float32(1.5) * (A @ B) + np.float32(0.5) * C0
    C = C0.copy()
    assert k(1.5, 0.5, C, A, B) is None  # positional, in C order (int parameters left out)
    np.testing.assert_allclose(C, want, rtol=1e-5, atol=1e-5)
    C = C0.copy()
    k(alpha=1.5, beta=0.5, C=C, A=A, B=B)  # by name
    np.testing.assert_allclose(C, want, rtol=1e-5, atol=1e-5)
    assert k.params(1.5, 0.5, C, A, B) == {"NI": 3, "NJ": 5, "NK": 4}
    with pytest.raises(pd.ShapeError, match="B"):
        k(1.5, 0.5, C, A, B[:3])
    with pytest.raises(pd.ShapeError, match="dtype"):
        k(1.5, 0.5, C.astype(np.float64), A, B)
    assert "gemm(alpha, beta, C, A, B)" in repr(k.op)


def test_index_syms_by_keyword():
    k = compile_c(KERNELS / "jacobi1d.c")
    A = np.linspace(0, 1, 9, dtype=np.float32)
    B = np.zeros(9, np.float32)
    with pytest.raises(pd.ShapeError, match="TSTEPS"):
        k(A, B)
    ref_A, ref_B = A.copy(), B.copy()
    k.op.reference(ref_A, ref_B, TSTEPS=3)
    k(A, B, TSTEPS=3)
    np.testing.assert_allclose(A, ref_A, rtol=1e-6)
    np.testing.assert_allclose(B, ref_B, rtol=1e-6)
    k2 = compile_c(KERNELS / "blas1.c", function="scal_shift")
    x = np.ones(4)
    k2(2.0, x, K=2)
    np.testing.assert_allclose(x, [5.0] * 4)  # (2*1 + 0)*2 + 1


def test_sizes_where_c_accesses_out_of_bounds_are_outside_the_context():
    # durbin writes y[0]: n = 0 would be undefined in C, so the context is n >= 1.
    k = compile_c(KERNELS / "durbin.c")
    assert k.scop.context.is_equal(isl.Set("[n] -> { : n >= 1 }"))
    with pytest.raises(pd.ShapeError, match="n=0 are outside"):
        k(np.zeros(0), np.zeros(0))
    with pytest.raises(pd.ShapeError, match="n=0 are outside"):
        k.op.reference(np.zeros(0), np.zeros(0))
    # gemm is in bounds everywhere: the context stays every size >= 0.
    scop = operator_from_c(KERNELS / "gemm.c").scop
    assert scop.context.is_equal(isl.Set("[NI, NJ, NK] -> { : NI >= 0 and NJ >= 0 and NK >= 0 }"))


def test_function_selection_and_source_text():
    with pytest.raises(pd.FrontendError, match=r"several functions \(axpy, scal_shift\)"):
        operator_from_c(KERNELS / "blas1.c")
    with pytest.raises(pd.FrontendError, match=r"no function named 'nope'.*axpy, scal_shift"):
        operator_from_c(KERNELS / "blas1.c", function="nope")
    source = (KERNELS / "blas1.c").read_text()
    k = compile_c(source, function="axpy")
    x, y = np.arange(5.0), np.ones(5)
    k(2.0, x, y)
    np.testing.assert_allclose(y, 1 + 2 * np.arange(5.0))
    assert operator_from_c(str(KERNELS / "gemv.c")).scop.name == "gemv"


def test_cli_compiles_a_c_file(tmp_path, capsys):
    """(gemv.c: its pragma-annotated loop and local accumulator; the other kernels are
    compiled in test_kernel_matches_gcc.)"""
    from polydyn.cli import main

    assert main(["compile", str(KERNELS / "gemv.c"), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "gemv.c").exists() and (tmp_path / "libgemv.so").exists()
    assert main(["compile", str(KERNELS / "blas1.c"), "-o", str(tmp_path)]) == 2
    assert "several functions" in capsys.readouterr().err


# --- refusals: FrontendError with file:line and the offending text ----------------------------
HEAD = "void f(int N, int M, float A[N][M], float x[N], double y[N]) {\n"
ERRORS = [
    # (body lines after HEAD, expected message part, line of the error)
    ("  int i = 0;\n  while (i < N) { x[i] = 0; i++; }\n}\n", "`while` loops", 3),
    ("  for (int i = 0; i < N; i++)\n    x[i] = foo(x[i]);\n}\n", "call to `foo`", 3),
    ("  for (int i = 0; i < N; i++)\n    printf(\"%d\", i);\n}\n", "printf", 3),
    ("  for (int i = 0; i < N; i++)\n    x[i] = *(x + i);\n}\n", "pointer operation", 3),
    ("  for (int i = 0; i < N; i++)\n    for (int j = 0; j < M; j++)\n"
     "      A[i][j] = A[i * j][0];\n}\n", "non-affine subscript `i * j` in `A[i * j][0]`", 4),
    ("  for (int i = 0; i < N; i++) {\n    if (i > 3) goto end;\n    x[i] = 1;\n  }\n"
     "end:\n  ;\n}\n", "`goto`", 3),
    ("  for (int i = 0; i < N; i++)\n    if (x[i] > 0)\n      x[i] = 0;\n}\n",
     "conditions must be affine", 3),
    ("  for (int i = 0; i < x[0]; i++)\n    y[i] = 0;\n}\n", "non-affine loop bound", 2),
    ("  for (int i = 0; i < N; i++)\n    x[(i - 1) / 2] = 1;\n}\n", "truncates toward zero", 3),
    ("  for (int i = 0; i < N; i++) {\n    float s;\n    s += x[i];\n    x[i] = s;\n  }\n}\n",
     "read before it is assigned", 4),
    ("  for (int i = 0; i < N; i++)\n    N = 3;\n}\n", "cannot assign to int parameter", 3),
    ("  for (int i = 0; i < N; i++)\n    i = i + 1;\n}\n", "cannot assign to loop counter", 3),
    ("  for (int i = 0; i < N; i++)\n    x[i + 1] = 0;\n}\n", "outside `x`", 3),
    ("  for (int i = 0; i < N; i++)\n    switch (i) { default: x[i] = 0; }\n}\n", "`switch`", 3),
    ("  for (int i = 0; i < N; i++) {\n    if (i == 2) break;\n    x[i] = 0;\n  }\n}\n",
     "`break`", 3),
    ("  for (int i = 0; i > N; i++)\n    x[i] = 0;\n}\n", "direction of the increment", 2),
    ("  int i;\n  for (i = 0; i < N; i++)\n    x[i] = 0;\n  y[0] = i;\n}\n",
     "read after the loop it counts", 5),
    ("  for (int i = 0; i < N; i++)\n    y[i] = y[i] % 2.0;\n}\n", "use fmod", 3),
    ("  for (int i = 0; i < N; i++)\n    x[i] = (float)(i << 1);\n}\n", "operator `<<`", 3),
    ("  for (int i = 0; i < N; i++)\n    x[i] = x[i]++;\n}\n", "inside an expression", 3),
    ("  x[0] = 0;\n#pragma scop\n  for (int i = 0; i < N; i++)\n    y[i] = 0;\n"
     "#pragma endscop\n}\n", "outside the `#pragma scop` region", 2),
    ("  for (int i = 0; i < N; i++)\n    y[i] = zz;\n}\n", "unknown name `zz`", 3),
]


@pytest.mark.parametrize("body,message,line", ERRORS, ids=[e[1][:30] for e in ERRORS])
def test_refusals_are_located(tmp_path, body, message, line):
    path = tmp_path / "bad.c"
    path.write_text(HEAD + body)
    with pytest.raises(pd.FrontendError) as info:
        operator_from_c(path)
    text = str(info.value)
    assert message in text
    assert f"{path}:{line}:" in text
    source_line = (HEAD + body).splitlines()[line - 1].strip()
    assert source_line in text  # the offending source line is quoted


SIGNATURE_ERRORS = [
    ("void f(int N, float *A) {\n  A[0] = 1;\n}\n", "pointer parameter `A`", 1),
    ("int f(int N, float A[N]) {\n  A[0] = 1;\n  return 0;\n}\n", "must return void", 1),
    ("void f(int N, char A[N]) {\n  A[0] = 1;\n}\n", "type `char` is not supported", 1),
    ("void f(int N, float A[N * N]) {\n  A[0] = 1;\n}\n", "non-affine size `N * N` in `A`", 1),
    ("void f(int N, float A[][N]) {\n  A[0][0] = 1;\n}\n", "give every dimension its size", 1),
    ("void f(int N, float A[N]) {\n  A[0] = 1\n}\n", "C syntax error", 3),
    ("#include \"missing_header.h\"\nvoid f(int N, float A[N]) {}\n", "missing_header.h", 1),
    ("void f(int N, float A[N], float floor) {\n}\n", "reserved name", 1),
    ("void f(int I, float A[I]) {\n  A[0] = 1;\n}\n", "`I` is a reserved name", 1),
    ("void f(int N, double a) {\n}\n", "has no array parameter", 1),
]


@pytest.mark.parametrize("source,message,line", SIGNATURE_ERRORS,
                         ids=[e[1][:30] for e in SIGNATURE_ERRORS])
def test_signature_refusals(tmp_path, source, message, line):
    path = tmp_path / "bad.c"
    path.write_text(source)
    with pytest.raises(pd.FrontendError) as info:
        operator_from_c(path)
    assert message in str(info.value)
    assert f"{path}:{line}:" in str(info.value)


def test_missing_file():
    with pytest.raises(pd.FrontendError, match="cannot read C file"):
        operator_from_c("/nonexistent/kernel.c")
