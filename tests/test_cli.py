"""The command line (`python -m polydyn`), run as a user would: in a subprocess.

compile writes NAME.c, NAME.h, libNAME.so and manifest.json and prints one line per variant;
explain says which variant runs; user errors print one `polydyn: error:` message (no
traceback) and exit with status 2. The generated .c/.h pair is also used from a plain C
program, with no Python involved.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MATMUL = "kernels/matmul.py"


def polydyn(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polydyn", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def assert_user_error(result: subprocess.CompletedProcess, *parts: str) -> str:
    """Exit status 2, one `polydyn: error:` message first on stderr, no traceback."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, result.stdout, err)
    assert err.startswith("polydyn: error: "), err
    assert err.count("polydyn: error:") == 1, err
    assert not err.startswith(("polydyn: error: polydyn", "polydyn: error: error")), err
    assert len(err.strip().splitlines()) == 1 or "^" in err, err  # one message (or a caret)
    assert "Traceback" not in err and 'File "' not in err, err
    assert result.stdout == "", result.stdout
    for part in parts:
        assert part in err, f"{part!r} not in {err!r}"
    return err


# --------------------------------------------------------------------------------------------
# compile and explain


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("matmul_out")
    result = polydyn("compile", MATMUL, "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out, result


def test_compile_writes_the_files(compiled) -> None:
    out, result = compiled
    for name in ("matmul.c", "matmul.h", "libmatmul.so", "manifest.json"):
        assert (out / name).is_file(), name
        assert (out / name).stat().st_size > 0, name
    header = (out / "matmul.h").read_text()
    assert re.search(r"\bint matmul\(int64_t N, int64_t K, int64_t M, const float \*A, "
                     r"const float \*B, float \*C\);", header), header
    assert "#include" in (out / "matmul.c").read_text()
    assert result.stderr == ""


def test_compile_manifest(compiled) -> None:
    out, _ = compiled
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["syms"]) == ["K", "M", "N"]
    arrays = manifest.get("arrays", manifest.get("arguments"))
    assert arrays is not None, sorted(manifest)
    by_name = {a["name"]: a for a in arrays}
    assert set(by_name) == {"A", "B", "C"}
    assert by_name["A"]["shape"] == ["N", "K"] and by_name["A"]["dtype"] == "f32"
    assert by_name["C"]["kind"] == "out" and by_name["C"]["shape"] == ["N", "M"]
    variants = manifest["variants"]
    assert variants, manifest
    for v in variants:
        assert v["name"] and "region" in v and "schedule" in v
        assert v["region"].startswith("[")  # isl set text over the syms


def test_compile_prints_one_line_per_variant(compiled) -> None:
    out, result = compiled
    manifest = json.loads((out / "manifest.json").read_text())
    lines = result.stdout.strip().splitlines()
    variant_lines = [line for line in lines if re.match(r"\s*\[\d+\]", line)]
    assert len(variant_lines) == len(manifest["variants"]), result.stdout
    for line, v in zip(variant_lines, manifest["variants"], strict=True):
        assert v["name"] in line and v["region"] in line, line
    assert len(lines) == len(variant_lines) + 1, result.stdout  # plus one summary line
    assert "matmul" in lines[0]


def test_explain(compiled) -> None:
    out, _ = compiled
    manifest = json.loads((out / "manifest.json").read_text())
    result = polydyn("explain", MATMUL, "N=1000", "M=3", "K=64")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("matmul at "), text
    for part in ("N=1000", "M=3", "K=64"):
        assert part in text.splitlines()[0]
    runs = [line for line in text.splitlines() if line.strip().startswith("runs ")]
    assert len(runs) == 1, text
    names = [v["name"] for v in manifest["variants"]]
    chosen = runs[0].split()[1].rstrip(":")
    assert chosen in names, (chosen, names)
    assert result.stderr == ""


def test_closed_pipe_exits_quietly(tmp_path) -> None:
    """`polydyn compile ... | head`: the reader is gone before the listing is written; no
    traceback, the status a command killed by SIGPIPE has, the files written all the same."""
    proc = subprocess.Popen([sys.executable, "-m", "polydyn", "compile", "kernels/jacobi2d.py",
                             "-o", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the child writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""
    assert (tmp_path / "jacobi2d.c").is_file()


def test_explain_with_op_before_sizes() -> None:
    result = polydyn("explain", MATMUL, "--op", "matmul", "N=1000", "M=3", "K=64")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("matmul at ")


def test_explain_with_op_after_sizes() -> None:
    result = polydyn("explain", MATMUL, "N=1000", "M=3", "K=64", "--op", "matmul")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("matmul at ")


def test_explain_index_sym() -> None:
    result = polydyn("explain", "kernels/jacobi2d.py", "N=10", "T=3")
    assert result.returncode == 0, result.stderr
    assert "jacobi2d at" in result.stdout and "runs " in result.stdout


# --------------------------------------------------------------------------------------------
# user errors: one message, exit status 2


@pytest.mark.parametrize(("argv", "parts"), [
    ((), ["polydyn: error: the following arguments are required: command"]),
    (("frob",), ["polydyn: error: argument command: invalid choice: 'frob'"]),
    (("compile",), ["polydyn: error: compile: the following arguments are required: file"]),
    (("compile", MATMUL, "--target", "cuda"), ["polydyn: error: compile: argument --target"]),
    (("cache", "wipe"), ["polydyn: error: cache: argument action"]),
    (("explain", MATMUL, "N=3", "--bogus"), ["unrecognized arguments: --bogus"]),
])
def test_usage_errors_carry_one_prefix(argv, parts) -> None:
    assert_user_error(polydyn(*argv), *parts)


def test_missing_file(tmp_path) -> None:
    missing = tmp_path / "nowhere.py"
    assert_user_error(polydyn("compile", str(missing)), str(missing), "no such file")
    assert_user_error(polydyn("explain", str(missing), "N=1"), "no such file")


@pytest.mark.parametrize(("name", "line", "fragment"), [
    ("non_affine_subscript", 14, "non-affine subscript"),
    ("while_loop", 13, "`while` loops are not static control"),
    ("assume_syntax", 10, "cannot parse assume="),
    ("out_of_bounds_read", 13, "reads outside `A`"),
])
def test_bad_operator_file(name, line, fragment) -> None:
    path = ROOT / "tests" / "errors" / f"{name}.py"
    err = assert_user_error(polydyn("compile", str(path)), f"{path}:{line}:", fragment)
    source_line = path.read_text().splitlines()[line - 1].strip()
    assert source_line in err
    assert "polydyn/scop" not in err and "from_python" not in err


def test_bad_operator_file_relative_path() -> None:
    assert_user_error(polydyn("explain", "tests/errors/unknown_function.py", "N=3"),
                      "unknown_function.py:17:", "call to unknown function `helper`")


def test_unknown_op() -> None:
    assert_user_error(polydyn("compile", MATMUL, "--op", "nope"), "nope", "matmul")


@pytest.mark.parametrize("sizes", [["N=x", "M=3", "K=4"], ["N", "M=3", "K=4"],
                                   ["N=1.5", "M=3", "K=4"]])
def test_bad_size_syntax(sizes) -> None:
    assert_user_error(polydyn("explain", MATMUL, *sizes), "size")


def test_missing_size() -> None:
    assert_user_error(polydyn("explain", MATMUL, "N=3", "M=3"), "K")
    assert_user_error(polydyn("explain", "kernels/jacobi2d.py", "N=10"), "T")


def test_sizes_outside_assume() -> None:
    assert_user_error(polydyn("explain", MATMUL, "N=0", "M=3", "K=4"), "N=0", "outside",
                      "N >= 1")


def test_bad_assume_option(tmp_path) -> None:
    out = tmp_path / "out"
    assert_user_error(polydyn("compile", MATMUL, "--assume", "N <", "-o", str(out)), "--assume")
    assert not out.exists()
    assert_user_error(polydyn("explain", MATMUL, "N=1", "M=1", "K=1", "--assume", "N < 0"),
                      "no sizes")


def test_unknown_size_name() -> None:
    assert_user_error(polydyn("explain", MATMUL, "N=3", "M=3", "K=4", "Q=5"), "Q")


def test_file_that_is_not_an_operator_module(tmp_path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import polydyn as pd\nx = 1 / 0\n")
    assert_user_error(polydyn("compile", str(broken)), "broken.py:2", "ZeroDivisionError")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n    pass\n")
    assert_user_error(polydyn("compile", str(syntax)), "syntax error")
    empty = tmp_path / "empty.py"
    empty.write_text("import polydyn as pd\n")
    assert_user_error(polydyn("compile", str(empty)), "no @pd.operator")


RAGGED = """
import polydyn as pd
from polydyn import f32, out

B, D = pd.sym("B D")
L = pd.ragged("L", B)


@pd.operator(assume="D >= 1")
def row_max(X: f32[B, L, D], Y: out(f32[B, L])):
    for b in range(B):
        for s in range(L[b]):
            Y[b, s] = X[b, s, 0]
            for d in range(1, D):
                Y[b, s] = max(Y[b, s], X[b, s, d])
"""


def test_ragged_operator_explain_and_bench(tmp_path) -> None:
    """explain takes the length as a size (compile and pd.load: tests/test_deploy.py); bench
    sweeps dense sizes and refuses a ragged operator with one message."""
    op = tmp_path / "seq.py"
    op.write_text(RAGGED)
    result = polydyn("explain", str(op), "L=1", "D=8", "--assume", "D <= 64")
    assert result.returncode == 0, result.stderr
    assert "row_max at L=1, D=8:" in result.stdout and "runs L=1" in result.stdout
    assert_user_error(polydyn("explain", str(op), "L=1", "D=80", "--assume", "D <= 64"),
                      "outside")
    assert_user_error(polydyn("bench", str(op), "--sweep", "L=1:8"), "ragged operator",
                      "pd.Jagged")


# --------------------------------------------------------------------------------------------
# the generated C, used from C


C_MAIN = textwrap.dedent("""\
    #include <stdio.h>
    #include <stdlib.h>
    #include <math.h>
    #include "matmul.h"

    static int check(int64_t N, int64_t K, int64_t M) {
      float *A = malloc(sizeof(float) * (N * K ? N * K : 1));
      float *B = malloc(sizeof(float) * (K * M ? K * M : 1));
      float *C = malloc(sizeof(float) * (N * M ? N * M : 1));
      for (int64_t i = 0; i < N * K; i++) A[i] = (float)((i * 7) % 11) - 5.0f;
      for (int64_t i = 0; i < K * M; i++) B[i] = (float)((i * 5) % 13) - 6.0f;
      for (int64_t i = 0; i < N * M; i++) C[i] = 12345.0f;
      int rc = matmul(N, K, M, A, B, C);
      if (rc != 0) { printf("rc=%d for %ld %ld %ld\\n", rc, (long)N, (long)K, (long)M); return 1; }
      for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++) {
          double want = 0.0;
          for (int64_t k = 0; k < K; k++) want += (double)A[i * K + k] * B[k * M + j];
          if (fabs(C[i * M + j] - want) > 1e-3 * (1.0 + fabs(want))) {
            printf("mismatch at %ld,%ld: %f vs %f\\n", (long)i, (long)j, C[i * M + j], want);
            return 1;
          }
        }
      printf("ok %ld %ld %ld variant %d\\n", (long)N, (long)K, (long)M, matmul_select(N, K, M));
      free(A); free(B); free(C);
      return 0;
    }

    int main(void) {
      int bad = 0;
      bad |= check(1, 1, 1);
      bad |= check(3, 4, 5);
      bad |= check(1, 17, 9);
      bad |= check(37, 65, 29);
      bad |= check(64, 64, 256);
      bad |= check(33, 70, 300);
      float x = 1.0f;
      if (matmul(0, 4, 4, &x, &x, &x) != -1) { printf("N=0 not refused\\n"); bad = 1; }
      if (matmul_select(3, 0, 3) != -1) { printf("K=0 selected a variant\\n"); bad = 1; }
      if (x != 1.0f) { printf("refused call wrote\\n"); bad = 1; }
      return bad;
    }
    """)


@pytest.fixture(scope="module")
def gcc() -> str:
    path = shutil.which("gcc") or shutil.which("cc")
    if path is None:
        pytest.skip("no C compiler")
    return path


def _run_c(gcc: str, build_args: list[str], cwd: Path) -> str:
    (cwd / "main.c").write_text(C_MAIN)
    build = subprocess.run([gcc, "-O2", "-std=c99", "-o", "main", "main.c", *build_args],
                           cwd=cwd, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["./main"], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("ok ") == 6, run.stdout
    return run.stdout


def test_generated_c_from_plain_c_source(compiled, gcc, tmp_path) -> None:
    out, _ = compiled
    for name in ("matmul.c", "matmul.h"):
        shutil.copy(out / name, tmp_path / name)
    _run_c(gcc, ["matmul.c", "-fopenmp", "-lm"], tmp_path)


def test_generated_c_against_shared_library(compiled, gcc, tmp_path) -> None:
    out, _ = compiled
    shutil.copy(out / "matmul.h", tmp_path / "matmul.h")
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(out / "libmatmul.so", lib / "libmatmul.so")
    _run_c(gcc, [f"-L{lib}", "-lmatmul", f"-Wl,-rpath,{lib}", "-lm"], tmp_path)
