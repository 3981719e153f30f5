"""Conformance with SPEC sections 1 and 2: each point the contract names, on both targets.

Every compiled result is compared with the operator's reference (``op.reference``).
"""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, f64, i32, i64, out
from polydyn.runtime.opencl import opencl_available

N = pd.sym("N")

TARGETS = [
    "c",
    pytest.param("opencl", marks=[
        pytest.mark.opencl,
        pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
    ]),
]


def _close(got, want) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# pd.abs (SPEC 1: "pd.abs (and the builtin abs)")


@pd.operator
def abs_floats(X: f32[N], D: f64[N], Y: out(f32[N]), Z: out(f64[N])):
    for i in range(N):
        Y[i] = pd.abs(X[i]) + abs(X[i])
        Z[i] = pd.abs(D[i] - 0.5)


@pd.operator
def abs_ints(X: i32[N], L: i64[N], Y: out(i32[N]), Z: out(i64[N])):
    for i in range(N):
        Y[i] = pd.abs(X[i]) + abs(X[i] - 3)
        Z[i] = pd.abs(L[i])


def test_abs_is_public() -> None:
    assert "abs" in pd.__all__
    assert pd.abs(np.float32(-2.5)) == 2.5
    np.testing.assert_array_equal(pd.abs(np.array([-1, 2, -3])), [1, 2, 3])


@pytest.mark.parametrize("target", TARGETS)
def test_abs_floats_and_ints(target: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, 13).astype(np.float32)
    D = rng.uniform(-2, 2, 13)
    Y, Z = pd.compile(abs_floats, target=target)(X, D)
    want_y, want_z = abs_floats.reference(X, D)
    _close(Y, want_y)
    _close(Z, want_z)
    _close(Y, 2 * np.abs(X))
    Xi = rng.integers(-50, 50, 13).astype(np.int32)
    Li = rng.integers(-(2**40), 2**40, 13).astype(np.int64)
    Yi, Zi = pd.compile(abs_ints, target=target)(Xi, Li)
    want_yi, want_zi = abs_ints.reference(Xi, Li)
    np.testing.assert_array_equal(Yi, want_yi)
    np.testing.assert_array_equal(Zi, want_zi)
    np.testing.assert_array_equal(Zi, np.abs(Li))


# --------------------------------------------------------------------------------------------
# NumPy and math names in operator bodies: aliases of the subset are accepted


@pd.operator
def numpy_aliases(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = np.exp(X[i]) + np.sqrt(np.abs(X[i])) + np.tanh(X[i])


@pytest.mark.parametrize("target", TARGETS)
def test_numpy_aliases_of_the_subset(target: str) -> None:
    X = np.linspace(-1, 1, 9, dtype=np.float32)
    _close(pd.compile(numpy_aliases, target=target)(X), numpy_aliases.reference(X))
    _close(numpy_aliases.reference(X), np.exp(X) + np.sqrt(np.abs(X)) + np.tanh(X))


# --------------------------------------------------------------------------------------------
# pd.index for a size only an output's (or inout's) shape carries (SPEC 1 and 2)

T = pd.sym("T")


@pd.operator
def repeat(X: f32[N], Y: out(f32[N, T]), T: pd.index):
    for i in range(N):
        for t in range(T):
            Y[i, t] = X[i] + t


@pd.operator
def accumulate(X: f32[N], A: pd.inout(f32[T, N]), T: pd.index):
    for t in range(T):
        for i in range(N):
            A[t, i] += X[i] * t


@pytest.fixture(scope="module", params=TARGETS)
def target(request) -> str:
    return request.param


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_index_size_of_an_output(target: str, caller: str) -> None:
    fn = pd.compile(repeat, target=target) if caller == "kernel" else repeat.reference
    X = np.arange(4, dtype=np.float32)
    want = X[:, None] + np.arange(5, dtype=np.float32)[None, :]
    Y = fn(X, T=5)
    assert Y.shape == (4, 5)
    np.testing.assert_array_equal(Y, want)
    buf = np.full((4, 3), -1, np.float32)
    assert fn(X, Y=buf) is buf  # T = 3, bound by the buffer
    np.testing.assert_array_equal(buf, want[:, :3])
    assert fn(X, Y=buf, T=3) is buf
    with pytest.raises(pd.ShapeError, match=r"output 'Y', dimension 1: expected T = 5 "
                                            r"\(given as T=5\), got 3"):
        fn(X, Y=np.zeros((4, 3), np.float32), T=5)
    with pytest.raises(pd.ShapeError, match="needs the size T= as a keyword argument"):
        fn(X)


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_index_size_of_an_inout(target: str, caller: str) -> None:
    fn = pd.compile(accumulate, target=target) if caller == "kernel" else accumulate.reference
    X = np.arange(4, dtype=np.float32)
    A = np.ones((3, 4), np.float32)
    assert fn(X, A) is None  # T = 3, bound by A
    want = 1 + np.arange(3, dtype=np.float32)[:, None] * X[None, :]
    np.testing.assert_array_equal(A, want)
    fn(X, A, T=3)
    np.testing.assert_array_equal(A, 2 * want - 1)
    before = A.copy()
    with pytest.raises(pd.ShapeError, match=r"argument 'A', dimension 0: expected T = 2 "
                                            r"\(given as T=2\), got 3"):
        fn(X, A, T=2)
    np.testing.assert_array_equal(A, before)


# --------------------------------------------------------------------------------------------
# Every legal Python name compiles (names that C, OpenCL, isl or a header reserve)


def _reserved_ops():
    from tests.conformance import reserved_names

    return reserved_names


def test_reserved_names_compile_and_match(target: str) -> None:
    ops = _reserved_ops()
    rng = np.random.default_rng(5)
    F = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    D = rng.uniform(-1, 1, 4).astype(np.float32)
    k = pd.compile(ops.names_c, target=target)
    for got, want in zip(k(F, D, kernel=2), ops.names_c.reference(F, D, kernel=2), strict=True):
        _close(got, want)
    assert k.params(F, D, kernel=2) == {"I": 3, "NAN": 4, "kernel": 2}
    assert "I=3, NAN=4, kernel=2" in k.explain(I=3, NAN=4, kernel=2)
    if target == "c":
        assert [v.name for v in k.variants][:2] == ["I=1", "NAN=1"]
        assert "runs I=1: sizes satisfy [I, NAN, kernel] -> {  : I = 1 and NAN > 0" in \
            k.explain(I=1, NAN=4, kernel=2)
    errno = np.zeros((3, 4), np.float32)
    k(F, D, kernel=2, errno=errno)
    _close(errno, ops.names_c.reference(F, D, kernel=2)[0])
    with pytest.raises(pd.ShapeError, match=r"output 'errno', dimension 1: expected NAN = 4 "
                                            r"\(bound by float's dimension 1\), got 5"):
        k(F, D, kernel=2, errno=np.zeros((3, 5), np.float32))
    with pytest.raises(pd.ShapeError, match=r"sizes I=3, NAN=4, kernel=-1 are outside"):
        k.params(F, D, kernel=-1)
    with pytest.raises(pd.ShapeError, match="unexpected keyword argument 'pdu_I'"):
        k(F, D, kernel=2, pdu_I=3)
    E = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    S = np.array([3, -2], np.int32)
    kb = pd.compile(ops.names_b, target=target)
    for got, want in zip(kb(E, S, pd_x=4, α=1), ops.names_b.reference(E, S, pd_x=4, α=1),
                         strict=True):
        _close(got, want)


def test_names_of_the_generated_python(target: str) -> None:
    from tests.conformance.python_names import op

    X = np.linspace(-1, 1, 7, dtype=np.float32)
    want = op.reference(X)
    assert np.isinf(want[0]) and np.isfinite(want[-1])
    _close(pd.compile(op, target=target)(X), want)


def test_every_macro_of_the_included_headers_is_respelled() -> None:
    """Each name the C headers of the generated code define (as the C compiler sees them,
    with the flags kernels are built with) is unsafe, so no user name can collide."""
    import subprocess

    from polydyn.codegen_c.prelude import PRELUDE
    from polydyn.options import Options
    from polydyn.scop.names import is_safe

    options = Options()
    includes = "".join(line + "\n" for line in PRELUDE.splitlines()
                       if line.startswith("#include")) + "#include <complex.h>\n"
    flags = [f for f in options.all_cflags if f not in ("-shared",)]
    proc = subprocess.run([options.cc, *flags, "-dM", "-E", "-x", "c", "-"], input=includes,
                          capture_output=True, text=True, check=True)
    macros = {line.split()[1].split("(")[0] for line in proc.stdout.splitlines()
              if line.startswith("#define ")}
    assert "INT_MAX" in macros or "INT64_MAX" in macros  # the headers were read
    assert sorted(m for m in macros if is_safe(m)) == []


def test_capitals_without_a_macro_stay_as_written() -> None:
    from polydyn.scop.names import is_safe

    assert all(is_safe(n) for n in ("BATCH", "SEQ", "TSTEPS", "D", "HW", "L"))
    assert not any(is_safe(n) for n in ("NULL", "EOF", "I", "MAX_LEN", "FLT_MAX"))


def test_regions_as_sets_and_in_the_users_names(target: str) -> None:
    """A variant's region (an isl set) is a region compile takes back (SPEC 3), and region
    text names syms as the user does, respelled ones too."""
    ops = _reserved_ops()
    rng = np.random.default_rng(6)
    F = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    D = rng.uniform(-1, 1, 4).astype(np.float32)
    k = pd.compile(ops.names_c, target=target,
                   variants=[("I >= 3 and NAN mod 2 = 0", pd.Schedule.auto()), ("true", None)])
    assert k.explain(I=3, NAN=4, kernel=1).count("runs user0") == 1
    k2 = pd.compile(ops.names_c, target=target,
                    variants=[(v.region, pd.Schedule.auto()) for v in k.variants])
    assert [str(v.region) for v in k2.variants] == [str(v.region) for v in k.variants]
    for got, want in zip(k2(F, D, kernel=2), ops.names_c.reference(F, D, kernel=2),
                         strict=True):
        _close(got, want)
    with pytest.raises(pd.CompileError, match=r"cannot parse region 'J >= 1'.*I, NAN, kernel"):
        pd.compile(ops.names_c, target=target, variants=[("J >= 1", None), ("true", None)])
