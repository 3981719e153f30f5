"""Refusals: every bad operator in tests/errors/ and every bad call of a compiled kernel.

tests/errors/NAME.py holds one bad operator; its first lines say what the refusal must be:

    # error: <fragment of the message>
    # line: <1-based line of the offending construct>
    # xfail: <reason>            (optional: a known polydyn bug, the test is xfail(strict))

Loading the file (by path, as the CLI does) must raise polydyn.FrontendError whose text names
the file, ``:LINE:``, the fragment and the source line, and shows none of polydyn's own files.

The ShapeError tests call compiled kernels (and each operator's reference) with bad arguments
and check the exception type, the message parts and that no output or inout was written.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import polydyn as pd
from kernels.jacobi2d import jacobi2d
from kernels.matmul import matmul
from kernels.softmax import softmax

ERRORS_DIR = Path(__file__).resolve().parent / "errors"
ERROR_FILES = sorted(ERRORS_DIR.glob("*.py"))

# Text that would betray one of polydyn's own frames or files in a user-facing message.
INTERNAL_MARKERS = ("polydyn/scop", "polydyn/parametric", "from_python.py", "binding.py",
                    "Traceback", 'File "')


# --------------------------------------------------------------------------------------------
# tests/errors/*.py


@dataclass(frozen=True)
class Expected:
    fragment: str
    line: int
    xfail: str | None


def read_header(path: Path) -> Expected:
    fields: dict[str, str] = {}
    for text in path.read_text().splitlines():
        match = re.match(r"#\s*(error|line|xfail):\s*(.*\S)\s*$", text)
        if not match:
            break
        fields[match.group(1)] = match.group(2)
    assert "error" in fields and "line" in fields, \
        f"{path.name}: the first lines must be `# error: ...` and `# line: N`"
    return Expected(fields["error"], int(fields["line"]), fields.get("xfail"))


def load_by_path(path: Path) -> None:
    """Import a file the way `polydyn compile` does (a fresh module, by path)."""
    name = f"polydyn_errors_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)


def _error_params() -> list:
    params = []
    for path in ERROR_FILES:
        expected = read_header(path)
        marks = [pytest.mark.xfail(strict=True, reason=expected.xfail)] if expected.xfail else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


@pytest.mark.parametrize("path", _error_params())
def test_bad_operator_is_refused(path: Path) -> None:
    expected = read_header(path)
    with pytest.raises(Exception) as info:  # the exact type is checked below
        load_by_path(path)
    exc = info.value
    assert isinstance(exc, pd.FrontendError), \
        f"expected FrontendError, got {type(exc).__name__}: {exc}"
    message = str(exc)
    source_line = path.read_text().splitlines()[expected.line - 1].strip()
    assert str(path) in message, message
    assert f":{expected.line}:" in message, message
    assert expected.fragment in message, message
    assert source_line in message, message
    assert "^" in message, f"no caret under the construct:\n{message}"
    head = message.splitlines()[0]
    assert re.match(rf"{re.escape(str(path))}:{expected.line}:\d+: ", head), head
    for marker in INTERNAL_MARKERS:
        assert marker not in message, f"internal detail {marker!r} in:\n{message}"
    assert exc.loc is not None and exc.loc.line == expected.line
    assert Path(exc.loc.file) == path


def test_errors_corpus_is_well_formed() -> None:
    """Every file has a header pointing at a real line, and names are not collected as tests."""
    assert len(ERROR_FILES) >= 40
    for path in ERROR_FILES:
        assert not path.name.startswith("test_"), path.name
        expected = read_header(path)
        lines = path.read_text().splitlines()
        assert 1 <= expected.line <= len(lines), path.name
        assert lines[expected.line - 1].strip(), f"{path.name}: line {expected.line} is blank"
        assert not lines[expected.line - 1].lstrip().startswith("#"), path.name


# The refusal classes of SPEC section 1 and of the frontend; each needs its file.
REQUIRED = {
    "non_affine_subscript", "indirect_subscript", "while_loop", "unknown_function",
    "data_dependent_bound", "if_on_array_value", "scalar_read_before_assignment",
    "scalar_one_branch", "scalar_read_after_loop", "write_to_input", "wrong_subscript_count",
    "slice", "floordiv_by_sym", "range_step_zero", "range_step_sym", "loop_var_shadows_sym",
    "missing_annotation", "varargs", "unknown_name", "assume_syntax", "assume_unknown_sym",
    "assume_empty", "out_of_bounds_read", "temp_in_loop", "return_statement", "range_keyword",
    "chained_assignment", "reserved_operator_name",
}


def test_errors_corpus_covers_every_class() -> None:
    present = {p.stem for p in ERROR_FILES}
    assert present >= REQUIRED, sorted(REQUIRED - present)


def test_operator_without_source_is_a_frontend_error() -> None:
    namespace: dict = {}
    code = ("import polydyn as pd\nN = pd.sym('N')\n"
            "def op(A: pd.f32[N], Y: pd.out(pd.f32[N])):\n"
            "    for i in range(N):\n        Y[i] = A[i]\n")
    exec(compile(code, "<no file>", "exec"), namespace)
    with pytest.raises(pd.FrontendError, match="cannot read the source of operator 'op'"):
        pd.operator(namespace["op"])


SYM_N = pd.sym("N")


def test_assume_that_is_not_a_string() -> None:
    def op(A: pd.f32[SYM_N], Y: pd.out(pd.f32[SYM_N])):
        for i in range(SYM_N):
            Y[i] = A[i]

    with pytest.raises(pd.PolydynError):
        pd.operator(assume=3)(op)  # type: ignore[arg-type]


def test_assume_with_trailing_text_is_refused() -> None:
    def op(A: pd.f32[SYM_N], Y: pd.out(pd.f32[SYM_N])):
        for i in range(SYM_N):
            Y[i] = A[i]

    with pytest.raises(pd.FrontendError, match="cannot parse assume="):
        pd.operator(assume="N >= 1 } garbage")(op)


def test_frontend_state_is_clean_after_a_refusal() -> None:
    """A refused operator leaves nothing behind: a good one defined next compiles and runs."""
    with pytest.raises(pd.FrontendError):
        load_by_path(ERRORS_DIR / "non_affine_subscript.py")
    k = pd.compile(softmax)
    X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(k(X), softmax.reference(X), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# ShapeError: bad calls of compiled kernels and of the reference


SENTINEL = np.float32(-7.25)


@pytest.fixture(scope="module")
def mm() -> pd.Kernel:
    return pd.compile(matmul)


@pytest.fixture(scope="module")
def jac() -> pd.Kernel:
    return pd.compile(jacobi2d)


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def _sentinel(*shape: int, dtype=np.float32) -> np.ndarray:
    return np.full(shape, SENTINEL, dtype=dtype)


def _refused(fn, args: tuple, kwargs: dict, parts: list[str]) -> str:
    with pytest.raises(pd.ShapeError) as info:
        fn(*args, **kwargs)
    assert type(info.value) is pd.ShapeError
    message = str(info.value)
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"
    for marker in INTERNAL_MARKERS:
        assert marker not in message, message
    return message


# Each case: (description, build(N, M, K) -> (args, kwargs, buffers that must stay unchanged),
# message parts). Sizes N=3, K=4, M=5 unless the case changes them.
def _mm_cases() -> list:
    N, K, M = 3, 4, 5
    A, B = _f32(N, K), _f32(K, M, seed=1)

    def out() -> np.ndarray:
        return _sentinel(N, M)

    def readonly() -> np.ndarray:
        buf = out()
        buf.setflags(write=False)
        return buf

    cases = {
        "wrong_dtype": (lambda: ((A.astype(np.float64), B), {"C": out()}),
                        ["'A'", "float32", "float64"]),
        "wrong_rank": (lambda: ((A.reshape(-1), B), {"C": out()}),
                       ["'A'", "2 dimension(s)", "got 1"]),
        "wrong_rank_3d": (lambda: ((A, B.reshape(K, M, 1)), {"C": out()}),
                          ["'B'", "2 dimension(s)", "got 3"]),
        "mismatched_inner_dim": (lambda: ((A, _f32(K + 1, M)), {"C": out()}),
                                 ["argument 'B', dimension 0: expected K = 4 "
                                  "(bound by A's dimension 1), got 5"]),
        "too_many_positional": (lambda: ((A, B, out()), {}),
                                ["2 positional argument", "got 3"]),
        "unknown_keyword": (lambda: ((A, B), {"C": out(), "D": out()}),
                            ["unexpected keyword argument 'D'"]),
        "sym_as_keyword": (lambda: ((A, B), {"C": out(), "N": 3}),
                           ["unexpected keyword argument 'N'"]),
        "argument_twice": (lambda: ((A, B), {"A": A, "C": out()}), ["'A'", "twice"]),
        "missing_argument": (lambda: ((A,), {"C": out()}), ["missing argument 'B'"]),
        "not_an_array": (lambda: ((None, B), {"C": out()}), ["'A'", "NoneType"]),
        "K_outside_assume": (lambda: ((_f32(N, 0), _f32(0, M)), {"C": out()}),
                             ["K=0", "outside", "K >= 1"]),
        "output_shape": (lambda: ((A, B), {"C": _sentinel(N, M + 1)}),
                         ["output 'C', dimension 1: expected M = 5 "
                          "(bound by B's dimension 1), got 6"]),
        "output_rows": (lambda: ((A, B), {"C": _sentinel(N + 2, M)}),
                        ["output 'C', dimension 0: expected N = 3 "
                         "(bound by A's dimension 0), got 5"]),
        "output_dtype": (lambda: ((A, B), {"C": _sentinel(N, M, dtype=np.float64)}),
                         ["'C'", "float32", "float64"]),
        "output_rank": (lambda: ((A, B), {"C": _sentinel(N * M)}),
                        ["'C'", "2 dimension(s)", "got 1"]),
        "output_read_only": (lambda: ((A, B), {"C": readonly()}), ["'C'", "read-only"]),
    }
    return [pytest.param(build, parts, id=name) for name, (build, parts) in cases.items()]


@pytest.mark.parametrize("caller", ["kernel", "reference"])
@pytest.mark.parametrize(("build", "parts"), _mm_cases())
def test_matmul_refuses_bad_call(mm, caller, build, parts) -> None:
    fn = mm if caller == "kernel" else matmul.reference
    args, kwargs = build()
    buffers = [x for x in (*args, *kwargs.values()) if isinstance(x, np.ndarray)]
    before = [x.copy() for x in buffers]
    _refused(fn, args, kwargs, parts)
    for x, b in zip(buffers, before, strict=True):
        assert np.array_equal(x, b), "a refused call wrote to an argument"


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_matmul_n_zero_is_outside_assume(mm, caller) -> None:
    fn = mm if caller == "kernel" else matmul.reference
    _refused(fn, (_f32(0, 4), _f32(4, 5)), {},
             ["N=0", "outside", "N >= 1 and M >= 1 and K >= 1"])
    with pytest.raises(pd.ShapeError):
        mm.params(_f32(0, 4), _f32(4, 5))


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_matmul_refused_call_leaves_inputs_alone(mm, caller) -> None:
    """Inputs are never written, even by a refused call with a sentinel output."""
    fn = mm if caller == "kernel" else matmul.reference
    A, B = _f32(3, 4), _f32(4, 5)
    A0, B0 = A.copy(), B.copy()
    C = _sentinel(3, 6)
    with pytest.raises(pd.ShapeError):
        fn(A, B, C=C)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)
    assert np.all(C == SENTINEL)


def test_matmul_good_call_after_refusals(mm) -> None:
    """The sentinel buffers above would have changed: a good call into one does write."""
    A, B = _f32(3, 4), _f32(4, 5)
    C = _sentinel(3, 5)
    assert mm(A, B, C=C) is C
    np.testing.assert_allclose(C, matmul.reference(A, B), rtol=1e-5, atol=1e-6)


def _jacobi_cases() -> list:
    cases = {
        "missing_T": (5, {}, ["T=", "keyword"]),
        "T_not_integer": (5, {"T": 2.5}, ["T=", "integer", "2.5"]),
        "T_bool": (5, {"T": True}, ["T=", "integer"]),
        "T_negative": (5, {"T": -1}, ["T=-1", "outside"]),
        "N_outside_assume": (2, {"T": 1}, ["N=2", "outside", "N >= 3"]),
        "unknown_keyword": (5, {"T": 1, "steps": 3}, ["unexpected keyword argument 'steps'"]),
    }
    return [pytest.param(n, kw, parts, id=name) for name, (n, kw, parts) in cases.items()]


@pytest.mark.parametrize("caller", ["kernel", "reference"])
@pytest.mark.parametrize(("n", "kwargs", "parts"), _jacobi_cases())
def test_jacobi2d_refuses_bad_call(jac, caller, n, kwargs, parts) -> None:
    fn = jac if caller == "kernel" else jacobi2d.reference
    A = _f32(n, n, seed=3)
    A0 = A.copy()
    _refused(fn, (A,), kwargs, parts)
    assert np.array_equal(A, A0), "a refused call wrote to the inout argument"


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_jacobi2d_non_square(jac, caller) -> None:
    fn = jac if caller == "kernel" else jacobi2d.reference
    A = _f32(5, 6)
    A0 = A.copy()
    _refused(fn, (A,), {"T": 1}, ["argument 'A', dimension 1: expected N = 5 "
                                  "(bound by A's dimension 0), got 6"])
    assert np.array_equal(A, A0)


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_jacobi2d_read_only_inout(jac, caller) -> None:
    fn = jac if caller == "kernel" else jacobi2d.reference
    A = _f32(6, 6, seed=4)
    A.setflags(write=False)
    A0 = A.copy()
    try:
        _refused(fn, (A,), {"T": 2}, ["'A'", "read-only"])
    finally:
        assert np.array_equal(A, A0), "a read-only inout array was written"


def test_softmax_refuses_bad_call() -> None:
    k = pd.compile(softmax)
    X = _f32(4, 0)  # L = 0, but softmax assumes L >= 1
    Y = _sentinel(4, 0)
    for fn in (k, softmax.reference):
        _refused(fn, (X,), {"Y": Y}, ["L=0", "outside", "L >= 1"])
    Y = _sentinel(4, 3)
    for fn in (k, softmax.reference):
        _refused(fn, (_f32(4, 3).T,), {"Y": Y}, ["output 'Y'", "dimension 0", "got 4"])
        assert np.all(Y == SENTINEL)


# --------------------------------------------------------------------------------------------
# Where a size was bound, in shape messages; negative output extents

SYM_T = pd.sym("T")


@pd.operator
def _shrink(X: pd.f32[SYM_N], Y: pd.out(pd.f32[SYM_N - 3])):
    for i in range(SYM_N - 3):
        Y[i] = X[i + 3]


@pd.operator
def _pairs(A: pd.f32[SYM_N], B: pd.f32[SYM_N - 2], Y: pd.out(pd.f32[SYM_N, SYM_T]),
           T: pd.index):
    for i in range(SYM_N):
        for t in range(SYM_T):
            Y[i, t] = A[i] * t


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_negative_output_extent_is_a_shape_error(caller) -> None:
    fn = pd.compile(_shrink) if caller == "kernel" else _shrink.reference
    _refused(fn, (_f32(1),), {}, ["output 'Y', dimension 0: extent N - 3 = -2 "
                                  "(N = 1, bound by X's dimension 0) is negative"])
    assert fn(_f32(3)).shape == (0,)


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_shape_messages_say_where_a_size_was_bound(caller) -> None:
    fn = pd.compile(_pairs) if caller == "kernel" else _pairs.reference
    _refused(fn, (_f32(7), _f32(4)), {"T": 2},
             ["argument 'B', dimension 0: expected N - 2 = 5 "
              "(N = 7, bound by A's dimension 0), got 4"])
    _refused(fn, (_f32(7), _f32(5)), {"T": 2, "Y": _sentinel(7, 3)},
             ["output 'Y', dimension 1: expected T = 2 (given as T=2), got 3"])
    _refused(fn, (_f32(7), _f32(5)), {"Y": _sentinel(6, 3)},
             ["output 'Y', dimension 0: expected N = 7 (bound by A's dimension 0), got 6"])
    message = _refused(fn, (_f32(7), _f32(5)), {"T": 2, "Y": _sentinel(7, 3)}, [])
    assert "T=2)" not in message.replace("given as T=2", "")  # the value once, with its origin


@pd.operator
def _two_outputs(A: pd.f32[SYM_N], Y: pd.out(pd.f32[SYM_N, SYM_T]), Z: pd.out(pd.f32[SYM_T]),
                 T: pd.index):
    for t in range(SYM_T):
        Z[t] = 1.0 * t
        for i in range(SYM_N):
            Y[i, t] = A[i]


@pytest.mark.parametrize("caller", ["kernel", "reference"])
def test_size_bound_by_an_output_buffer(caller) -> None:
    fn = pd.compile(_two_outputs) if caller == "kernel" else _two_outputs.reference
    Y, Z = _sentinel(4, 3), _sentinel(5)
    _refused(fn, (_f32(4),), {"Y": Y, "Z": Z},
             ["output 'Z', dimension 0: expected T = 3 (bound by Y's dimension 1), got 5"])
    assert np.all(Y == SENTINEL) and np.all(Z == SENTINEL)
    y, z = fn(_f32(4), Y=Y, Z=_sentinel(3))
    assert y is Y and z.shape == (3,)


# --------------------------------------------------------------------------------------------
# User errors carry none of polydyn's internal exceptions or frames

ROOT = Path(__file__).resolve().parents[1]


def _internal_frames(stderr: str) -> list[str]:
    """polydyn's own frames in a traceback, but for the entry point's re-raise."""
    frames = re.findall(r'File "([^"]+)", line \d+, in (\w+)', stderr)
    return [f"{f}:{fn}" for f, fn in frames
            if "/polydyn/" in f and not (f.endswith("errors.py") and fn == "entry")
            and not (f.endswith("operator.py") and fn == "operator")]


def test_frontend_error_in_a_script_has_no_internal_traceback() -> None:
    import subprocess

    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    env.pop("POLYDYN_DEBUG", None)
    path = ERRORS_DIR / "non_affine_bound.py"
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1
    err = proc.stderr
    assert "FrontendError" in err and f"{path}:12:" in err, err
    assert "During handling" not in err and "_NotAffine" not in err, err
    assert not _internal_frames(err), err
    assert len(err.splitlines()) < 20, err


def _raised(fn, *args, **kwargs) -> BaseException:
    with pytest.raises(pd.PolydynError) as info:
        fn(*args, **kwargs)
    return info.value


def _no_internal_chain(err: BaseException) -> None:
    assert err.__cause__ is None and err.__suppress_context__, repr(err.__context__)
    tb, frames = err.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    inside = [f for f in frames if "/polydyn/" in f and not f.endswith("errors.py")]
    assert len(inside) <= 1, frames  # at most the public entry's own frame


@pytest.mark.parametrize("name", ["non_affine_bound", "non_affine_subscript", "unknown_name",
                                  "if_on_array_value", "bad_string_annotation", "assume_syntax"])
def test_frontend_errors_replace_internal_exceptions(name: str) -> None:
    err = _raised(load_by_path, ERRORS_DIR / f"{name}.py")
    _no_internal_chain(err)


def test_shape_and_schedule_errors_replace_internal_exceptions(mm) -> None:
    _no_internal_chain(_raised(mm, _f32(3, 4), _f32(5, 5)))
    _no_internal_chain(_raised(mm, _f32(3, 4), _f32(4, 5), C=_sentinel(3, 6)))
    _no_internal_chain(_raised(matmul.reference, _f32(3, 4), _f32(5, 5)))
    _no_internal_chain(_raised(mm.explain, N=1, M=2))
    bad = pd.Schedule().interchange("k", "i")
    _no_internal_chain(_raised(pd.compile, matmul, variants=[("true", bad)]))
    _no_internal_chain(_raised(pd.compile, matmul, variants=[("N >= 1000", pd.Schedule())]))


def test_a_misspelt_compile_option_is_a_usage_error(tmp_path) -> None:
    """An unknown keyword names itself and the options there are; a cache folder given as a
    string works as a Path does."""
    with pytest.raises(pd.UsageError, match=r"unknown compile option\(s\) 'cachedir'.*cache_dir"):
        pd.compile(matmul, cachedir=str(tmp_path))
    assert not any(tmp_path.iterdir())
    kernel = pd.compile(matmul, cache_dir=str(tmp_path / "cache"))
    a = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(kernel(a, a.T.copy()), a @ a.T)
    assert any((tmp_path / "cache").iterdir())
