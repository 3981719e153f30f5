"""Checking generated operators: compile, run every variant at points of its region, compare
with the reference interpreter. Each operator runs in a worker subprocess, so that a segfault
or a hang of the compiler (or of the code it generates) is recorded, not fatal.

Statuses: ``pass``; ``refused`` (FrontendError at definition: a generator defect, counted
apart); ``mismatch`` (a variant disagrees with the reference), ``error`` (any other exception:
a compiler bug, e.g. InternalError, isl.Error, CompileError of generated C), ``crash`` (the
worker died) and ``timeout``: the last four are failures.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAILURES = ("mismatch", "error", "crash", "timeout")
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------
# In a worker: one operator


def load_operator(source: str, name: str, directory: Path) -> Any:
    """Write ``source`` to ``directory/name.py`` and import it by path (the frontend reads
    the operator's source with inspect, so it must live in a file)."""
    path = directory / f"{name}.py"
    path.write_text(source)
    module_name = f"pd_fuzz_{name}_{abs(hash(source)) % 10**12}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def check_operator(op: Any, *, max_tile: int | None = 8, hi: int = 12, limit: int = 3,
                   seed: int = 0, extra_points: list[dict[str, int]] = (),
                   kernel: Any = None) -> dict[str, Any]:
    """Compile ``op`` and compare every variant with the reference at ``limit`` points of its
    region (boundary points first) and at ``extra_points`` that lie in it; the dispatcher
    (the plain call) at the first point of each variant too. Raises AssertionError on a
    mismatch; returns counts."""
    import islpy as isl

    import polydyn as pd
    from polydyn.testing import region_points

    k = kernel or pd.compile(op, target="c", max_tile=max_tile)
    runs = 0
    for index, variant in enumerate(k.variants):
        points = region_points(k.scop, variant.region, hi=hi, limit=limit, seed=seed + index)
        for extra in extra_points:
            if extra in points or set(extra) != set(k.scop.syms):
                continue
            point = isl.Set(f"{k.scop.param_space_text()} -> {{ : " + " and ".join(
                f"{s} = {v}" for s, v in extra.items()) + " }")
            if not point.intersect(variant.region).is_empty():
                points.append(extra)
        for n, sizes in enumerate(points):
            where = f"variant {index} ({variant.name}) at {sizes}"
            _checked(k, sizes, seed + n, index, where)
            runs += 1
            if n == 0:
                _checked(k, sizes, seed + n, None, f"dispatcher at {sizes}")
                runs += 1
    return {"variants": len(k.variants), "runs": runs,
            "names": [v.name for v in k.variants]}


class MismatchError(AssertionError):
    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}")


class RunError(Exception):
    def __init__(self, where: str, exc: BaseException):
        self.where = where
        self.exc = exc
        super().__init__(f"{where}: {type(exc).__name__}: {exc}")


def _checked(kernel: Any, sizes: dict[str, int], seed: int, variant: int | None,
             where: str) -> None:
    from polydyn.testing import check_kernel

    try:
        check_kernel(kernel, sizes, seed=seed, variant=variant)
    except AssertionError as exc:
        raise MismatchError(where, str(exc)) from exc
    except Exception as exc:
        raise RunError(where, exc) from exc


def evaluate(task: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Run one task (source, name, max_tile, ...) to a result dictionary."""
    from polydyn.errors import FrontendError

    start = time.perf_counter()
    result: dict[str, Any] = {"id": task["id"]}
    try:
        try:
            op = load_operator(task["source"], task["name"], directory)
        except FrontendError as exc:
            result.update(status="refused", message=str(exc).splitlines()[0])
            return result
        stats = check_operator(op, max_tile=task.get("max_tile", 8), hi=task.get("hi", 12),
                               limit=task.get("limit", 3), seed=task.get("check_seed", 0),
                               extra_points=task.get("points", []))
        result.update(status="pass", **stats)
    except MismatchError as exc:
        result.update(status="mismatch", message=str(exc), kind="mismatch")
    except RunError as exc:
        result.update(status="error", message=str(exc), kind=type(exc.exc).__name__,
                      trace=_trace(exc.exc))
    except Exception as exc:  # compile-time failures
        result.update(status="error", message=f"compile: {type(exc).__name__}: {exc}",
                      kind=type(exc).__name__, trace=_trace(exc))
    finally:
        result["seconds"] = round(time.perf_counter() - start, 3)
    return result


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]


def worker_main() -> None:
    """Read one JSON task per line on stdin, answer one JSON result per line on stdout."""
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    with tempfile.TemporaryDirectory(prefix="pd-fuzz-ops-") as tmp:
        for line in sys.stdin:
            task = json.loads(line)
            res = evaluate(task, Path(tmp))
            out.write(json.dumps(res) + "\n")
            out.flush()


# ------------------------------------------------------------------------------------------
# In the parent: a pool of worker subprocesses


class Worker:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.err = None

    def start(self) -> None:
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.fuzz.runner import worker_main; worker_main()"],
            cwd=ROOT, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.err, text=True, bufsize=1)

    def stderr_tail(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")[-2000:]

    def run(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return {"id": task["id"], "status": "timeout",
                    "message": f"no answer within {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            tail = self.stderr_tail()
            self.proc = None
            return {"id": task["id"], "status": "crash",
                    "message": f"worker died (exit status {rc})", "trace": tail}
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def sanitizer_env() -> dict[str, str]:
    """What a worker needs to build and load kernels under AddressSanitizer/UBSan: a report
    aborts the worker, which the pool records as a crash with the report in its trace."""
    out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                         text=True).stdout.strip()
    if not out or not os.path.isabs(out) or not os.path.exists(out):
        raise RuntimeError("libasan is not available (gcc -print-file-name=libasan.so)")
    return {"POLYDYN_SANITIZE": "1", "LD_PRELOAD": out,
            "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


@dataclass
class Pool:
    jobs: int = 2
    timeout: float = 300.0
    cache_dir: str | None = None
    env_extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep)
        if self.cache_dir:
            env["POLYDYN_CACHE_DIR"] = self.cache_dir
        env.setdefault("OMP_NUM_THREADS", "2")
        env.update(self.env_extra)
        self.workers = [Worker(env) for _ in range(self.jobs)]

    def map(self, tasks: list[dict[str, Any]], on_result=None) -> list[dict[str, Any]]:
        """Run every task; results in task order. ``on_result(result)`` is called as each
        finishes (from worker threads, serialized)."""
        results: dict[Any, dict[str, Any]] = {}
        queue = list(reversed(tasks))
        lock = threading.Lock()

        def drive(worker: Worker) -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    task = queue.pop()
                res = worker.run(task, self.timeout)
                with lock:
                    results[task["id"]] = res
                    if on_result:
                        on_result(task, res)

        threads = [threading.Thread(target=drive, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [results[t["id"]] for t in tasks]

    def close(self) -> None:
        for w in self.workers:
            w.stop()
