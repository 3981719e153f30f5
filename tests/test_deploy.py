"""``polydyn compile -o DIR`` then ``pd.load(DIR)``, in fresh processes where islpy cannot be
imported and no C compiler is on the PATH (SPEC section 2): the loaded kernel computes what
NumPy does, refuses bad calls with the compiled Kernel's ShapeError (writing nothing), and an
artifact from another format, polydyn version or CPU, or a damaged one, is an ArtifactError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# an operator no bundled kernel is: a scaled sum of a transposed input, with an assume
OP = '''
import polydyn as pd
from polydyn import f32, f64, out

N, M = pd.sym("N M")


@pd.operator(assume="N >= 1 and M >= 2")
def scaled_t(X: f64[M, N], w: f64[M], Y: out(f64[N, M])):
    for i, j in pd.grid(N, M):
        Y[i, j] = 2.0 * X[j, i] + w[j]
'''

BLOCK = '''
import importlib.abc, sys
class _NoIsl(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "islpy" or name.startswith("islpy."):
            raise ImportError("islpy is blocked in this test")
sys.meta_path.insert(0, _NoIsl())
'''


def run_blocked(code: str, tmp: Path, tools: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``code`` with islpy blocked and a PATH without cc or gcc (only ``tools``)."""
    import shutil

    bin_dir = tmp / "bin_without_cc"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        if shutil.which(tool) and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {**os.environ, "PATH": str(bin_dir), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], cwd=tmp,
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("deploy")
    (tmp / "op.py").write_text(OP)
    result = subprocess.run([sys.executable, "-m", "polydyn", "compile", str(tmp / "op.py"),
                             "-o", str(tmp / "out")], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return tmp / "out"


def test_import_polydyn_needs_no_isl(tmp_path) -> None:
    result = run_blocked('''
        import polydyn as pd
        assert "islpy" not in sys.modules
        print(pd.load, pd.ArtifactError, pd.ShapeError)
    ''', tmp_path)
    assert result.returncode == 0, result.stderr


def test_load_runs_without_isl_or_cc(artifact, tmp_path) -> None:
    result = run_blocked(f'''
        import numpy as np
        import polydyn as pd
        k = pd.load({str(artifact)!r})
        rng = np.random.default_rng(0)
        for n, m in [(1, 2), (7, 3), (64, 33), (130, 257)]:
            X, w = rng.random((m, n)), rng.random(m)
            expect = 2.0 * X.T + w
            assert np.allclose(k(X, w), expect)
            Y = np.zeros((n, m))
            k(X, w, Y=Y)
            assert np.allclose(Y, expect)
            Z = np.zeros((m, n)).T  # a non-contiguous output view
            k(X, w, Y=Z)
            assert np.allclose(Z, expect)
        assert k.params(X, w) == {{"N": 130, "M": 257}}
        assert [v.name for v in k.variants]
        Y = np.full((4, 3), 7.0)
        try:
            k(rng.random((3, 4)), rng.random(5), Y=Y)
        except pd.ShapeError as e:
            print("refused:", e)
        assert (Y == 7.0).all()
        try:
            k(rng.random((1, 4)), rng.random(1))  # M = 1: outside assume
        except pd.ShapeError as e:
            print("assume:", e)
        print(k.explain(N=5, M=6).splitlines()[0])
        assert "islpy" not in sys.modules
    ''', tmp_path)
    assert result.returncode == 0, result.stderr
    assert "refused: argument 'w'" in result.stdout, result.stdout
    assert "assume: sizes M=1, N=4 are outside the operator's assumptions" in result.stdout
    assert "scaled_t at M=6, N=5:" in result.stdout


def _load_error(path: Path, tmp: Path) -> str:
    result = run_blocked(f'''
        import polydyn as pd
        try:
            pd.load({str(path)!r})
        except pd.ArtifactError as e:
            print("ArtifactError:", e)
    ''', tmp)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _copy(artifact: Path, tmp: Path, **changes) -> Path:
    import shutil

    dest = tmp / "copy"
    shutil.copytree(artifact, dest)
    meta = json.loads((dest / "manifest.json").read_text())
    meta.update(changes)
    (dest / "manifest.json").write_text(json.dumps(meta))
    return dest


def test_other_version_is_refused(artifact, tmp_path) -> None:
    out = _load_error(_copy(artifact, tmp_path, polydyn="0.0.1"), tmp_path)
    assert "built by polydyn 0.0.1" in out and "compile the operator again" in out, out


def test_other_format_is_refused(artifact, tmp_path) -> None:
    out = _load_error(_copy(artifact, tmp_path, format=99), tmp_path)
    assert "artifact format 99" in out, out


def test_other_cpu_is_refused(artifact, tmp_path) -> None:
    out = _load_error(_copy(artifact, tmp_path, machine={"arch": "riscv128"}), tmp_path)
    assert "built for riscv128 CPUs" in out, out
    import platform

    meta = json.loads((artifact / "manifest.json").read_text())
    if not meta["machine"]["cpu_flags"]:
        pytest.skip("no CPU flags recorded here")
    machine = {"arch": platform.machine(), "cpu_flags": ["avx2", "quantum_fma"]}
    out = _load_error(_copy(artifact, tmp_path / "b", machine=machine), tmp_path)
    assert "quantum_fma" in out and "this CPU lacks" in out, out


def test_damaged_or_missing_is_refused(artifact, tmp_path) -> None:
    copy = _copy(artifact, tmp_path)
    with open(copy / "libscaled_t.so", "ab") as f:
        f.write(b"x")
    assert "libscaled_t.so is damaged" in _load_error(copy, tmp_path)
    assert "no manifest.json" in _load_error(tmp_path, tmp_path)


# --- OpenCL ----------------------------------------------------------------------------------


def _opencl() -> bool:
    from polydyn.runtime.opencl import opencl_available

    return opencl_available()


@pytest.mark.opencl
@pytest.mark.skipif(not _opencl(), reason="no OpenCL platform (install PoCL)")
def test_opencl_artifact_loads_without_isl_or_cc(tmp_path) -> None:
    (tmp_path / "op.py").write_text(OP)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "polydyn", "compile", str(tmp_path / "op.py"),
                             "--target", "opencl", "-o", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (out / "scaled_t.cl").exists() and (out / "scaled_t.host.py").exists()
    result = run_blocked(f'''
        import numpy as np
        import pyopencl.array as cla
        import polydyn as pd
        k = pd.load({str(out)!r})
        assert type(k).__name__ == "OpenCLKernel", k
        rng = np.random.default_rng(1)
        for n, m in [(1, 2), (19, 3), (70, 130)]:
            X, w = rng.random((m, n)), rng.random(m)
            assert np.allclose(k(X, w), 2.0 * X.T + w)
        dX, dw = cla.to_device(k.queue, X), cla.to_device(k.queue, w)
        assert np.allclose(k(dX, dw).get(), 2.0 * X.T + w)
        Y = np.full((4, 3), 7.0)
        try:
            k(rng.random((3, 4)), rng.random(5), Y=Y)
        except pd.ShapeError as e:
            print("refused:", e)
        assert (Y == 7.0).all()
        print(k.explain(N=5, M=6).splitlines()[0], k.host_path)
        assert "islpy" not in sys.modules
    ''', tmp_path, tools=("ld",))  # PoCL links the kernels it compiles with ld
    assert result.returncode == 0, result.stderr
    assert "refused: argument 'w'" in result.stdout, result.stdout
    assert "scaled_t at M=6, N=5:" in result.stdout


HIT = '''
import importlib.util, sys, time
import numpy as np
import polydyn as pd
import polydyn.pipeline
spec = importlib.util.spec_from_file_location("op", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
if sys.argv[2] == "hit":  # a hit schedules nothing
    def refuse(*a, **k):
        raise AssertionError("a cache hit ran the compiler's stages")
    polydyn.pipeline.generate = refuse
start = time.perf_counter()
k = pd.compile(mod.scaled_t, target="opencl")
took = time.perf_counter() - start
X, w = np.random.rand(5, 7), np.random.rand(5)
assert np.allclose(k(X, w), 2.0 * X.T + w)
print(type(k).__name__, took)
'''


@pytest.mark.opencl
@pytest.mark.skipif(not _opencl(), reason="no OpenCL platform (install PoCL)")
def test_opencl_compile_hits_the_cache_in_a_new_process(tmp_path) -> None:
    (tmp_path / "op.py").write_text(OP.replace("2.0 *", "3.0 *").replace("3.0 * X", "2.0 * X"))
    (tmp_path / "hit.py").write_text(HIT)
    env = {**os.environ, "POLYDYN_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    for mode in ("cold", "hit"):
        result = subprocess.run([sys.executable, str(tmp_path / "hit.py"),
                                 str(tmp_path / "op.py"), mode], env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    name, took = result.stdout.split()
    assert name == "OpenCLKernel" and float(took) < 0.5, result.stdout


# a ragged operator no bundled kernel is: a per-sequence projection with a shared weight, then
# a causal row sum (a triangle), with an assume on the weight's width
RAGGED_OP = '''
import polydyn as pd
from polydyn import f32, out

B, D, E = pd.sym("B D E")
L = pd.ragged("L", B)


@pd.operator(assume="D >= 1 and E >= 2")
def proj_causal(X: f32[B, L, D], W: f32[D, E], Y: out(f32[B, L, E]), S: out(f32[B, L])):
    for b in range(B):
        for s in range(L[b]):
            for e in range(E):
                Y[b, s, e] = 0.0
                for d in range(D):
                    Y[b, s, e] += X[b, s, d] * W[d, e]
        for s in range(L[b]):
            S[b, s] = 0.0
            for t in range(s + 1):
                S[b, s] += X[b, t, 0]
'''

RAGGED_RUN = '''
import numpy as np
import polydyn as pd
k = pd.load({out!r})
assert type(k).__name__ == "RaggedKernel", k
rng = np.random.default_rng(2)
D, E = 5, 3
W = rng.random((D, E), dtype=np.float32)
for lengths in ([0], [1], [3, 0, 1, 17], [64, 2, 31, 5, 1]):
    blocks = [rng.random((n, D), dtype=np.float32) for n in lengths]
    X = pd.Jagged(np.concatenate(blocks) if blocks else np.zeros((0, D), np.float32), lengths)
    Y, S = k(X, W)
    for x, y, s in zip(blocks, Y.blocks(), S.blocks(), strict=True):
        assert np.allclose(y, x @ W, rtol=1e-5, atol=1e-5)
        assert np.allclose(s, np.cumsum(x[:, 0]), rtol=1e-5, atol=1e-5)
try:
    k(pd.Jagged(rng.random((4, D), dtype=np.float32), [2, 2]), W[:, :1])  # E = 1
except pd.ShapeError as e:
    print("assume:", e)
print(k.explain(L=1, D=D, E=E).splitlines()[1])
assert "islpy" not in sys.modules
'''


@pytest.mark.parametrize("target", ["c", pytest.param("opencl", marks=[
    pytest.mark.opencl, pytest.mark.skipif(not _opencl(), reason="no OpenCL platform")])])
def test_ragged_artifact_runs_without_isl_or_cc(target: str, tmp_path) -> None:
    """``polydyn compile`` of a ragged operator writes its per-sequence kernel with the batch
    described in the manifest; ``pd.load`` gives the RaggedKernel back without isl."""
    (tmp_path / "op.py").write_text(RAGGED_OP)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "polydyn", "compile", str(tmp_path / "op.py"),
                             "--target", target, "-o", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    ragged = json.loads((out / "manifest.json").read_text())["ragged"]
    assert ragged["batched"] == ["S", "X", "Y"] and ragged["work"]
    result = run_blocked(RAGGED_RUN.format(out=str(out)), tmp_path, tools=("ld",))
    assert result.returncode == 0, result.stderr
    assert "are outside the operator's assumptions" in result.stdout, result.stdout
    assert "runs L=1" in result.stdout, result.stdout
