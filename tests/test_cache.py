"""The on-disk artifact cache (issue 8): concurrent compiles of one kernel publish one valid
entry; a damaged entry is detected by its checksums and rebuilt, never loaded;
POLYDYN_CACHE_DIR moves the cache; ``polydyn cache info|clear``.

Every test uses a fresh cache directory and a freshly written operator (a constant unique to
the test run in its body), so nothing comes from an earlier run's cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import polydyn as pd
from polydyn import f64, out
from polydyn.codegen_c import toolchain
from polydyn.runtime import cache

ROOT = Path(__file__).resolve().parents[1]

OPERATOR = '''
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator(assume="N >= 1")
def scaled_sum(A: f32[N, N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = {const}
        for j in range(N):
            Y[i] += A[j, i] * {const}
'''

# Compile the operator of argv[1] and check it on a 13 x 13 input; print the library used.
WORKER = textwrap.dedent('''
    import hashlib, importlib.util, json, sys, time
    from pathlib import Path
    import numpy as np

    path, go = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
    spec = importlib.util.spec_from_file_location("cache_op", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import polydyn as pd
    import polydyn.pipeline as pipeline
    generated = []  # the compiles that ran the stages (not served by the cache)
    _generate = pipeline.generate
    pipeline.generate = lambda *a, **k: generated.append(1) or _generate(*a, **k)
    if go:  # wait for the go signal, so that the processes compile at the same time
        while not Path(go).exists():
            time.sleep(0.005)
    k = pd.compile(mod.scaled_sum)
    A = np.random.default_rng(0).uniform(-1, 1, (13, 13)).astype(np.float32)
    Y = k(A)
    const = float(mod.CONST)
    want = (const + (A.astype(np.float64) * const).sum(axis=0)).astype(np.float32)
    assert np.allclose(Y, want, rtol=1e-5, atol=1e-5), (Y, want)
    lib = Path(k.library)
    meta = json.loads((lib.parent / "meta.json").read_text())
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()
    print(json.dumps({"library": str(lib), "ok": True, "generated": len(generated),
                      "digest_matches": meta["files"][lib.name] == digest}))
''')


def _fresh_operator(tmp_path: Path) -> Path:
    """A kernel no cache has seen: a constant unique to this test in its body."""
    const = 1.0 + (uuid.uuid4().int % 10**6) / 10**7
    path = tmp_path / f"op_{uuid.uuid4().hex[:8]}.py"
    path.write_text(OPERATOR.format(const=repr(const)) + f"\nCONST = {const!r}\n")
    return path


def _env(cache_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["POLYDYN_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["OMP_NUM_THREADS"] = "1"
    env.pop("POLYDYN_SANITIZE", None)
    env.update(extra)
    return env


def _compile_in_subprocess(op_file: Path, cache_dir: Path, script: Path) -> dict:
    proc = subprocess.run([sys.executable, str(script), str(op_file)], env=_env(cache_dir),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def worker_script(tmp_path: Path) -> Path:
    path = tmp_path / "cache_worker.py"
    path.write_text(WORKER)
    return path


def _entries(root: Path) -> list[Path]:
    """The library entries (each compile also publishes a kernel entry, kernel.json)."""
    return sorted(p for p in root.glob("??/*") if p.is_dir() and any(p.glob("*.so")))


def _kernel_entries(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("??/*/kernel.json"))


def _object_entries(root: Path) -> list[Path]:
    """The variants' objects (``toolchain.EarlyUnits``: a module built unit by unit)."""
    return sorted(p.parent for p in root.glob(f"??/*/{toolchain.UNIT_OBJECT}"))


def test_eight_concurrent_compiles_publish_one_valid_entry(tmp_path, worker_script):
    cache_dir = tmp_path / "cache"
    op_file = _fresh_operator(tmp_path)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(worker_script), str(op_file), str(go)],
                              env=_env(cache_dir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    time.sleep(2.0)  # let every process import polydyn and reach the barrier
    go.write_text("go")
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert all(r["ok"] and r["digest_matches"] for r in results)
    # one process builds; the others wait for its entry (cache.building) rather than build
    assert sum(r["generated"] for r in results) == 1, results
    libraries = {r["library"] for r in results}
    assert len(libraries) == 1, libraries  # all eight load the one published artifact
    entries = _entries(cache_dir)
    assert len(entries) == 1, entries
    assert cache.is_valid(entries[0])
    assert Path(next(iter(libraries))).parent == entries[0]
    kernels = _kernel_entries(cache_dir)
    assert len(kernels) == 1 and cache.is_valid(kernels[0])
    # no half-built or discarded directories are left behind
    leftovers = [p.name for p in cache_dir.rglob(".*")]
    assert not leftovers, leftovers


def test_one_builder_of_a_key_at_a_time(tmp_path):
    """``cache.building``: a second builder of the key waits (told through ``on_wait``)
    until the first leaves; builders of another key do not wait; no lock file stays."""
    import threading

    events: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with cache.building(tmp_path, "a" * 64):
            events.append("first in")
            inside.set()
            time.sleep(0.3)
            events.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait(10)
    with cache.building(tmp_path, "b" * 64, on_wait=lambda: events.append("waits for b")):
        events.append("other key in")
    with cache.building(tmp_path, "a" * 64, on_wait=lambda: events.append("second waits")):
        events.append("second in")
    thread.join()
    assert events == ["first in", "other key in", "second waits", "first out", "second in"]
    assert not list(tmp_path.rglob(".lock-*"))


def test_a_child_forked_by_the_builder_does_not_keep_the_lock(tmp_path):
    """A process forked while the lock is held shares its descriptor: leaving the block
    still lets a waiting builder in while the child lives on."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    import signal
    import threading
    import warnings

    entered: list[float] = []

    def waiter() -> None:
        with cache.building(tmp_path, "e" * 64, wait_s=10):
            entered.append(time.monotonic())

    with cache.building(tmp_path, "e" * 64):
        with warnings.catch_warnings():  # (3.12 warns of fork beside threads)
            warnings.simplefilter("ignore", DeprecationWarning)
            child = os.fork()
        if child == 0:  # the child only sleeps (killed below)
            time.sleep(60)
            os._exit(0)
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.5)  # the waiter holds the lock file open, waiting
        left = time.monotonic()
    try:
        thread.join(20)
        assert entered and entered[0] - left < 2, entered
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_a_stuck_builder_is_waited_for_only_so_long(tmp_path):
    with cache.building(tmp_path, "c" * 64):
        start = time.monotonic()
        with cache.building(tmp_path, "c" * 64, wait_s=0.2):
            waited = time.monotonic() - start
    assert 0.2 <= waited < 5


def test_a_file_system_without_locks_builds_unlocked(tmp_path, monkeypatch):
    """flock failing for another reason than a holder (ENOLCK on some network file
    systems): the block runs at once, unlocked, and the descriptor is closed."""
    import errno
    import fcntl

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "no locks")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    start = time.monotonic()
    with cache.building(tmp_path, "d" * 64):
        pass
    assert time.monotonic() - start < 1
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
    assert not list(tmp_path.rglob(".lock-*"))


def _truncate(lib: Path, meta: Path) -> None:
    lib.write_bytes(lib.read_bytes()[: lib.stat().st_size // 2])


def _flip_bytes(lib: Path, meta: Path) -> None:
    data = bytearray(lib.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0xFF for b in data[mid:mid + 64])
    lib.write_bytes(bytes(data))  # same size, different content


def _empty_library(lib: Path, meta: Path) -> None:
    lib.write_bytes(b"")


def _remove_library(lib: Path, meta: Path) -> None:
    lib.unlink()


def _truncate_meta(lib: Path, meta: Path) -> None:
    meta.write_text(meta.read_text()[:20])


def _wrong_checksum(lib: Path, meta: Path) -> None:
    data = json.loads(meta.read_text())
    data["files"] = dict.fromkeys(data["files"], "0" * 64)
    meta.write_text(json.dumps(data))


def _no_files_in_meta(lib: Path, meta: Path) -> None:
    meta.write_text(json.dumps({"files": {}}))


def _remove_meta(lib: Path, meta: Path) -> None:
    meta.unlink()


DAMAGE = [_truncate, _flip_bytes, _empty_library, _remove_library, _truncate_meta,
          _wrong_checksum, _no_files_in_meta, _remove_meta]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, Path, Path, Path]:
    """One kernel compiled once into its own cache: (operator, worker, cache, library)."""
    tmp = tmp_path_factory.mktemp("pristine")
    script = tmp / "cache_worker.py"
    script.write_text(WORKER)
    op_file = _fresh_operator(tmp)
    cache_dir = tmp / "cache"
    first = _compile_in_subprocess(op_file, cache_dir, script)
    return op_file, script, cache_dir, Path(first["library"])


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
def test_damaged_entry_is_rebuilt_not_loaded(tmp_path, pristine, damage):
    op_file, worker_script, pristine_cache, pristine_lib = pristine
    cache_dir = tmp_path / "cache"
    shutil.copytree(pristine_cache, cache_dir)
    lib = cache_dir / pristine_lib.relative_to(pristine_cache)
    entry = lib.parent
    assert cache.is_valid(entry)
    damage(lib, entry / cache.META)
    damaged = hashlib.sha256(lib.read_bytes()).hexdigest() if lib.exists() else ""
    assert not cache.is_valid(entry)
    # a new process must notice, rebuild, and load a correct library (a damaged one would
    # fail to load or compute garbage; the worker checks the result)
    again = _compile_in_subprocess(op_file, cache_dir, worker_script)
    assert again["ok"] and again["digest_matches"]
    assert again["library"] == str(lib)
    assert cache.is_valid(entry)
    assert lib.exists() and lib.stat().st_size > 0
    if damage in (_truncate, _flip_bytes, _empty_library, _remove_library):
        # a rebuilt library (the compiler embeds its private build path: not byte-identical)
        assert hashlib.sha256(lib.read_bytes()).hexdigest() != damaged
    assert _entries(cache_dir) == [entry]


def test_damaged_entry_is_rebuilt_in_the_same_process(tmp_path, monkeypatch):
    """get_or_build itself: a damaged entry is discarded and built again (the builder runs
    again), a valid one is reused (the builder does not run)."""
    calls = []

    def build(tmp: Path) -> list[str]:
        calls.append(tmp)
        (tmp / "payload.bin").write_bytes(b"artifact" * 100)
        return ["payload.bin"]

    key = cache.content_key(["test", uuid.uuid4().hex])
    entry = cache.get_or_build(tmp_path, key, build)
    assert cache.is_valid(entry) and len(calls) == 1
    assert cache.get_or_build(tmp_path, key, build) == entry and len(calls) == 1
    (entry / "payload.bin").write_bytes(b"artifact" * 50)
    assert not cache.is_valid(entry)
    assert cache.get_or_build(tmp_path, key, build) == entry and len(calls) == 2
    assert cache.is_valid(entry)
    assert (entry / "payload.bin").read_bytes() == b"artifact" * 100


def test_cache_dir_variable_moves_the_cache(tmp_path, worker_script):
    home = tmp_path / "home"
    home.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    op_file = _fresh_operator(tmp_path)
    env = _env(first, HOME=str(home))
    proc = subprocess.run([sys.executable, str(worker_script), str(op_file)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = Path(json.loads(proc.stdout.strip().splitlines()[-1])["library"])
    assert first in lib.parents
    assert len(_entries(first)) == 1
    assert not second.exists()
    assert not (home / ".cache" / "polydyn").exists()  # the default location is untouched
    out = _compile_in_subprocess(op_file, second, worker_script)
    assert second in Path(out["library"]).parents and len(_entries(second)) == 1


def test_default_cache_dir_is_under_home(monkeypatch, tmp_path):
    from polydyn.options import Options

    monkeypatch.delenv("POLYDYN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Options().cache_dir == tmp_path / ".cache" / "polydyn"
    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert Options().cache_dir == tmp_path / "elsewhere"


def _cli(cache_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "polydyn", "cache", *args],
                          env=_env(cache_dir), capture_output=True, text=True, timeout=120)


def test_cli_cache_info_and_clear(tmp_path, worker_script):
    cache_dir = tmp_path / "cache"
    _compile_in_subprocess(_fresh_operator(tmp_path), cache_dir, worker_script)
    _compile_in_subprocess(_fresh_operator(tmp_path), cache_dir, worker_script)
    info = _cli(cache_dir, "info")
    assert info.returncode == 0, info.stderr
    assert str(cache_dir) in info.stdout
    # a library and a kernel each, and with two CPUs an object per unit
    everything = _entries(cache_dir) + _kernel_entries(cache_dir) + _object_entries(cache_dir)
    assert len(_entries(cache_dir)) == len(_kernel_entries(cache_dir)) == 2
    units = {u for e in _entries(cache_dir) for c in e.glob("*.c")
             for u in toolchain.split_units(c.read_text()) or ()}
    assert len(_object_entries(cache_dir)) == len(units) and bool(units) == toolchain.in_units()
    assert len(everything) == len(list(cache_dir.glob("??/*")))
    assert f"entries: {len(everything)}" in info.stdout
    size = sum(f.stat().st_size for e in everything for f in e.iterdir())
    assert f"bytes: {size}" in info.stdout
    clear = _cli(cache_dir, "clear")
    assert clear.returncode == 0, clear.stderr
    assert f"removed {len(everything)}" in clear.stdout
    assert _entries(cache_dir) == []
    info = _cli(cache_dir, "info")
    assert info.returncode == 0 and "entries: 0" in info.stdout
    # a cache that does not exist yet is reported empty, and clearing it is harmless
    empty = tmp_path / "never"
    assert "entries: 0" in _cli(empty, "info").stdout
    assert _cli(empty, "clear").returncode == 0


def test_cli_cache_rejects_unknown_action(tmp_path):
    proc = _cli(tmp_path, "shred")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


# A compile that hits the kernel entry: no isl scheduling, the same kernel.
HIT_WORKER = textwrap.dedent('''
    import importlib.util, json, sys, time
    import numpy as np

    path = sys.argv[1]
    spec = importlib.util.spec_from_file_location("cache_op", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import polydyn as pd
    import polydyn.pipeline as pipeline

    def refuse(*a, **k):
        raise AssertionError("a cache hit must not schedule or generate code")

    if len(sys.argv) > 2:
        pipeline.generate = refuse
    start = time.perf_counter()
    k = pd.compile(mod.scaled_sum)
    took = time.perf_counter() - start
    A = np.random.default_rng(1).uniform(-1, 1, (9, 9)).astype(np.float32)
    const = float(mod.CONST)
    want = (const + (A.astype(np.float64) * const).sum(axis=0)).astype(np.float32)
    assert np.allclose(k(A), want, rtol=1e-5, atol=1e-5)
    print(json.dumps({"source": k.source, "took": took,
                      "variants": [[v.name, str(v.region), repr(v.recipe), v.summary]
                                   for v in k.variants]}))
''')


def _hit_proc(op_file: Path, cache_dir: Path, script: Path, *flags: str, **env: str
              ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), str(op_file), *flags],
                          env=_env(cache_dir, **env), capture_output=True, text=True,
                          timeout=300)


def _hit_run(op_file: Path, cache_dir: Path, script: Path, *flags: str, **env: str) -> dict:
    proc = _hit_proc(op_file, cache_dir, script, *flags, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_hit_rebuilds_the_kernel_without_scheduling(tmp_path):
    script = tmp_path / "hit_worker.py"
    script.write_text(HIT_WORKER)
    op_file, cache_dir = _fresh_operator(tmp_path), tmp_path / "cache"
    cold = _hit_run(op_file, cache_dir, script)
    warm = _hit_run(op_file, cache_dir, script, "no-generate")
    assert warm["source"] == cold["source"] and warm["variants"] == cold["variants"]
    # what decides the code is in the key: another tile bound or ISA misses (and schedules
    # again), whether or not the code differs (the column sums take no cache tiles)
    for env in ({"POLYDYN_MAX_TILE": "8"}, {"POLYDYN_ISA": "sse"}):
        miss = _hit_proc(op_file, cache_dir, script, "no-generate", **env)
        assert miss.returncode != 0 and "must not schedule" in miss.stderr, miss.stderr
        other = _hit_run(op_file, cache_dir, script, **env)
        assert env.get("POLYDYN_ISA") is None or other["source"] != cold["source"]
        hit = _hit_run(op_file, cache_dir, script, "no-generate", **env)
        assert (hit["source"], hit["variants"]) == (other["source"], other["variants"])
    # a library gone from the cache is rebuilt: the kernel entry alone is no hit
    for lib in _entries(cache_dir):
        shutil.rmtree(lib)
    again = _hit_run(op_file, cache_dir, script)
    assert again["source"] == cold["source"]
    # POLYDYN_DUMP wants every stage: no hit then
    dump = tmp_path / "dump"
    _hit_run(op_file, cache_dir, script, POLYDYN_DUMP=str(dump))
    assert any(dump.rglob("5-schedules.txt"))


N_, K_ = pd.sym("N K")


@pd.operator(assume="K >= 1 and N >= K and N >= 0")
def window_sum(X: f64[N_], Y: out(f64[N_ - K_ + 1])):
    for i in range(N_ - K_ + 1):
        Y[i] = 0.0
        for k in range(K_):
            Y[i] += X[i + k]


def test_a_second_compile_in_the_process_hits(tmp_path, monkeypatch):
    """isl drops redundant constraints (here ``N >= 0``) from the operator's own context in
    place while a compile runs; the key must not see the difference, or the same operator
    compiled again in the process schedules again (conv2d: 7 s) and adds a cache entry."""
    import polydyn.pipeline

    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path / "cache"))
    before = str(window_sum.scop.context)
    first = pd.compile(window_sum)
    assert str(window_sum.scop.context) != before  # what isl does, which the key survives

    def refuse(*args, **kwargs):
        raise AssertionError("the second compile ran the compiler's stages")

    monkeypatch.setattr(polydyn.pipeline, "generate", refuse)
    second = pd.compile(window_sum)
    assert second.source == first.source
