"""Checking generated operators: compile, run every variant at points of its region, compare
with the reference interpreter. Each operator runs in a worker subprocess, so that a segfault
or a hang of the compiler (or of the code it generates) is recorded, not fatal.

An operator is checked in *units*: one target (``c``, ``opencl``) under one schedule, either
the automatic one (with ``replay`` in the task: its variants' recipes must generate the same
source again) or a random recipe (tests/fuzz/schedules.py) over the whole domain or over a
region beside the automatic schedule. Unit statuses: ``pass``; ``refused`` (the recipe was
refused with a ScheduleError that names the statements and dependence or the loop at fault:
legal behaviour); ``mismatch`` (a variant disagrees with the reference), ``error`` (any other
exception: a compiler bug, e.g. InternalError, isl.Error, CompileError of generated code, a
ScheduleError for the automatic schedule or one that names nothing), ``crash`` (the worker
died) and ``timeout``: the last four are failures. An operator's status is that of its first
failing unit, ``pass`` when none fails, or ``refused`` (FrontendError at definition: a
generator defect, counted apart).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import select
import signal
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
# what a failure records about the unit that failed (besides status, message, kind, trace)
UNIT_KEYS = ("target", "schedule", "region")


def available_targets() -> list[str]:
    """Every target this machine can run: C, and OpenCL when some platform has a device."""
    from polydyn.runtime.opencl import opencl_available

    return ["c", "opencl"] if opencl_available() else ["c"]


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


def low_points(context: Any, hi: int, seed: int = 0) -> list[dict[str, int]]:
    """Points at the low edge of ``context`` (syms in [0, hi]), where extents such as
    ``N - 2`` or ``(N + 1) // 2`` are 0 or 1 while other loops still run: every sym ``t``
    above its least value (``t`` = 0..3, the lexicographically least such point), and with
    several syms, each sym 0 or 1 above its least value with the others between 3 and 8
    (or anywhere) where the context allows."""
    import islpy as isl

    n = context.dim(isl.dim_type.param)
    if n == 0:
        return []
    names = [context.get_dim_name(isl.dim_type.param, k) for k in range(n)]
    xs = [f"x{k}" for k in range(n)]

    def box(cons: list[str]) -> isl.Set:
        return isl.Set(f"{{ [{', '.join(xs)}] : {' and '.join(cons)} }}")

    pts = context.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n).intersect(
        box([f"0 <= {x} <= {hi}" for x in xs]))
    if pts.is_empty():
        return []

    def least(part: isl.Set) -> tuple[int, ...] | None:
        if part.is_empty():
            return None
        p = part.lexmin().sample_point()
        return tuple(p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n))

    low = [pts.dim_min_val(k).to_python() for k in range(n)]
    chosen: list[tuple[int, ...]] = []
    for t in range(4):
        bounds = [f"{x} >= {m + t}" for x, m in zip(xs, low, strict=True)]
        chosen.append(least(pts.intersect(box(bounds))))
    rng = random.Random(seed)
    for k in range(n if n >= 2 else 0):
        at = box([f"{xs[k]} = {low[k] + rng.choice((0, 1))}"])
        mid = box([f"3 <= {x} <= 8" for j, x in enumerate(xs) if j != k])
        part = pts.intersect(at).intersect(mid)
        if part.is_empty():
            part = pts.intersect(at)
        if not part.is_empty():
            p = part.sample_point()
            chosen.append(tuple(p.get_coordinate_val(isl.dim_type.set, j).to_python()
                                for j in range(n)))
    out: list[dict[str, int]] = []
    for c in chosen:
        if c is not None and dict(zip(names, c, strict=True)) not in out:
            out.append(dict(zip(names, c, strict=True)))
    return out


def check_operator(op: Any, *, max_tile: int | None = 8, hi: int = 12, limit: int = 3,
                   seed: int = 0, extra_points: list[dict[str, int]] = (),
                   kernel: Any = None, before_run=None, low: bool = False) -> dict[str, Any]:
    """Compile ``op`` (or take ``kernel``) and compare every variant with the reference at
    ``limit`` points of its region (boundary points first) and at ``extra_points`` that lie
    in it, with ``low`` at the low edge of the context too (``low_points``); the dispatcher
    (the plain call) at the first point of each variant too. ``before_run(where)`` hears of
    each run first (so that a crash can name its sizes). Raises AssertionError on a
    mismatch; returns counts."""
    import islpy as isl

    import polydyn as pd
    from polydyn.testing import region_points

    k = kernel or pd.compile(op, target="c", max_tile=max_tile)
    runs = 0
    extra_points = list(extra_points)
    if low:
        extra_points += low_points(k.scop.context, hi, seed)
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
            runs_here = [(index, f"variant {index} ({variant.name}) at {sizes}")]
            if n == 0:
                runs_here.append((None, f"dispatcher at {sizes}"))
            for which, where in runs_here:
                if before_run:
                    before_run(where)
                _checked(k, sizes, seed + n, which, where)
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


def compile_unit(op: Any, unit: dict[str, Any], max_tile: int | None) -> Any:
    """The kernel of one unit: the automatic schedule (``schedule`` None), or the recipe
    ``schedule`` (``Schedule.to_json()``) over the whole domain, or over ``region`` with the
    automatic schedule elsewhere."""
    import polydyn as pd

    target = unit.get("target", "c")
    if unit.get("schedule") is None:
        return pd.compile(op, target=target, max_tile=max_tile)
    recipe = pd.Schedule.from_json(unit["schedule"])
    region = unit.get("region")
    variants = [(region, recipe), ("true", pd.Schedule.auto())] if region else \
        [("true", recipe)]
    return pd.compile(op, target=target, variants=variants, max_tile=max_tile)


def replay_check(op: Any, kernel: Any, target: str, max_tile: int | None) -> None:
    """MismatchError unless the recipes the automatic variants record generate the same
    source again (SPEC section 3: ``pd.compile(op, variants=[(v.region, v.recipe) for v in
    k.variants])``); generated, not built."""
    from polydyn.pipeline import generate

    again = generate(op, target, variants=[(v.region, v.recipe) for v in kernel.variants],
                     max_tile=max_tile).source
    if again != kernel.source:
        old, new = kernel.source.splitlines(), again.splitlines()
        line = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                    min(len(old), len(new)))
        got = new[line] if line < len(new) else "(the end)"
        raise MismatchError("replay", f"the variants' recipes generate another source, "
                            f"from line {line + 1}: {got.strip()[:200]}")


def draw_units(op: Any, task: dict[str, Any]) -> list[dict[str, Any]]:
    """The units of a task, target by target in the order of ``targets`` (C first: an OpenCL
    kernel that writes out of bounds corrupts the worker's heap, and must not make a later C
    unit crash): the automatic schedule, then on the targets of ``recipe_targets`` the
    ``schedules`` random recipes; every second recipe runs over a random region beside the
    automatic schedule, the others over the whole domain."""
    from .schedules import draw_recipes, draw_region

    seed = task.get("recipe_seed", 0)
    rng = random.Random(seed + 1)
    recipes = []
    for k, recipe in enumerate(draw_recipes(op.scop, seed, task.get("schedules", 0))):
        region = draw_region(op.scop.syms, rng) if k % 2 and op.scop.syms else None
        recipes.append({"schedule": recipe.to_json(), "region": region})
    units = []
    for t in task.get("targets", ["c"]):
        units.append({"target": t, "schedule": None, "region": None})
        if t in task.get("recipe_targets", ["c"]):
            units += [{"target": t, **r} for r in recipes]
    return units


def run_unit(op: Any, unit: dict[str, Any], task: dict[str, Any], progress=None
             ) -> dict[str, Any]:
    """Compile and check one unit; the outcome is the unit with its status and counts.
    ``progress`` hears of each run (``{"at": where}``) before it starts."""
    from polydyn.errors import ScheduleError

    from .schedules import informative

    start = time.perf_counter()
    out = dict(unit)
    try:
        kernel = compile_unit(op, unit, task.get("max_tile", 8))

        def check() -> dict[str, Any]:
            return check_operator(op, hi=task.get("hi", 12), limit=task.get("limit", 3),
                                  seed=task.get("check_seed", 0),
                                  extra_points=task.get("points", []), kernel=kernel,
                                  low=task.get("low", False),
                                  before_run=progress and (lambda w: progress({"at": w})))

        stats = check()
        if unit.get("schedule") is None and task.get("replay"):
            replay_check(op, kernel, unit.get("target", "c"), task.get("max_tile", 8))
        if unit.get("target") == "opencl" and hasattr(kernel, "compute_units"):
            # again with every launch's last alternative (wide lane kernels, the smallest
            # work-groups), which a CPU device's few compute units seldom pick
            kernel.compute_units = 10**6
            stats["runs"] += check()["runs"]
        out.update(status="pass", **stats)
    except ScheduleError as exc:
        if unit.get("schedule") is not None and informative(str(exc), unit["schedule"]):
            out.update(status="refused", message=str(exc))
        else:  # the automatic schedule must not be refused, nor a recipe without a reason
            out.update(status="error", message=f"compile: ScheduleError: {exc}",
                       kind="ScheduleError", trace=_trace(exc))
    except MismatchError as exc:
        out.update(status="mismatch", message=str(exc), kind="mismatch")
    except RunError as exc:
        out.update(status="error", message=str(exc), kind=type(exc.exc).__name__,
                   trace=_trace(exc.exc))
    except Exception as exc:  # compile-time failures
        out.update(status="error", message=f"compile: {type(exc).__name__}: {exc}",
                   kind=type(exc).__name__, trace=_trace(exc))
    out["seconds"] = round(time.perf_counter() - start, 3)
    return out


def evaluate(task: dict[str, Any], directory: Path, progress=None) -> dict[str, Any]:
    """Run one task (source, name, max_tile, targets, ...) to a result dictionary: the units
    (given as ``units`` or drawn by ``draw_units``) one after the other, each announced to
    ``progress`` before and after it runs (and each of its runs), so that a crash or a hang
    can name its unit and sizes."""
    from polydyn.errors import FrontendError

    start = time.perf_counter()
    result: dict[str, Any] = {"id": task["id"]}
    try:
        op = load_operator(task["source"], task["name"], directory)
    except FrontendError as exc:
        result.update(status="refused", message=str(exc).splitlines()[0],
                      seconds=round(time.perf_counter() - start, 3))
        return result
    outcomes = []
    for unit in task.get("units") or draw_units(op, task):
        if progress:
            progress({"start": unit})
        outcome = run_unit(op, unit, task, progress)
        outcomes.append(outcome)
        if progress:
            progress({"done": _slim(outcome)})
    result.update(finish(outcomes))
    result["seconds"] = round(time.perf_counter() - start, 3)
    return result


def finish(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """An operator's result from its units' outcomes: the first failure's status, message
    and unit (or ``pass``), the counts summed, and every outcome (without traces)."""
    failed = [o for o in outcomes if o["status"] in FAILURES]
    out: dict[str, Any] = {"status": "pass"}
    if failed:
        out.update({k: failed[0][k] for k in ("status", "message", "kind", "trace", *UNIT_KEYS)
                    if k in failed[0]})
    out["variants"] = sum(o.get("variants", 0) for o in outcomes)
    out["runs"] = sum(o.get("runs", 0) for o in outcomes)
    out["names"] = [n for o in outcomes for n in o.get("names", ())]
    out["units"] = [_slim(o) for o in outcomes]
    return out


def _slim(outcome: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in outcome.items() if k not in ("trace", "names")}


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]


def worker_main() -> None:
    """Read one JSON task per line on stdin, answer with progress lines (``{"start": unit}``,
    ``{"done": outcome}``) and one JSON result per line on stdout."""
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    with tempfile.TemporaryDirectory(prefix="pd-fuzz-ops-") as tmp:
        for line in sys.stdin:
            send(evaluate(json.loads(line), Path(tmp), progress=send))


# ------------------------------------------------------------------------------------------
# In the parent: a pool of worker subprocesses


class Worker:
    """One worker subprocess. Its answers are read from the pipe's file descriptor into our own
    buffer (a buffered reader would hide a second line from ``select``); the timeout applies
    to each unit of a task (it restarts when the worker announces the next one)."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.err = None
        self.buffer = b""

    def start(self) -> None:
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        self.buffer = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tests.fuzz.runner import worker_main; worker_main()"],
            cwd=ROOT, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.err)

    def stderr_tail(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")[-2000:]

    def _line(self, deadline: float) -> bytes | None:
        """The next line from the worker; b"" when it died, None when none came before
        ``deadline`` (``time.monotonic()``)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def _send(self, task: dict[str, Any]) -> None:
        """Hand ``task`` to the worker; with ``fresh`` to a new process (the shrinker's crash
        candidates: an out-of-bounds write of an earlier kernel can abort a later one)."""
        if task.get("fresh"):
            self.stop()
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write((json.dumps(task) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def run(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Run ``task`` to its result, following the worker's progress lines."""
        self._send(task)
        done: list[dict[str, Any]] = []
        unit: dict[str, Any] | None = None
        at = ""  # the run in progress: "variant 1 (tiled) at {'N': 9}"
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if line is None:
                self.stop()
                return _lost(task, "timeout", f"no answer within {timeout:.0f} s" + at, done,
                             unit)
            if not line:
                return self._died(task, done, unit, at)
            message = json.loads(line)
            if "start" in message:
                unit, at = message["start"], " while compiling"
                deadline = time.monotonic() + timeout
            elif "at" in message:
                at = f" during {message['at']}"
            elif "done" in message:
                done.append(message["done"])
                unit, at = None, ""
            else:
                if message.get("status") in FAILURES:
                    # a kernel that computed wrong results may also have written out of
                    # bounds: the next task gets a fresh process, not a corrupted heap
                    self.stop()
                return message

    def _died(self, task: dict[str, Any], done: list[dict[str, Any]],
              unit: dict[str, Any] | None, at: str) -> dict[str, Any]:
        rc = self.proc.wait()
        self.proc = None
        tail = self.stderr_tail()
        # an abort (glibc's heap checks, an assertion) says why on its last line
        last = next((x for x in reversed(tail.splitlines()) if x.strip()), "")
        why = f": {last.strip()[:200]}" if rc == -signal.SIGABRT else ""
        return _lost(task, "crash", f"worker died (exit status {rc}){at}{why}", done, unit,
                     trace=tail)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _lost(task: dict[str, Any], status: str, message: str, done: list[dict[str, Any]],
          unit: dict[str, Any] | None, trace: str = "") -> dict[str, Any]:
    """The result of a task whose worker died or hung: the units done so far, and the unit it
    was running (when the worker got that far) as the failure."""
    failed = {**(unit or {}), "status": status, "message": message}
    if trace:
        failed["trace"] = trace
    out = {"id": task["id"], **finish([*done, failed])}
    if unit is None:  # not inside a unit (loading the operator): counted per operator only
        out["units"] = done
    return out


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


def check_regression(path: Path, module: Any, unit: dict[str, Any], crash_timeout: float) -> Any:
    """Check the regression operator of ``path`` (its module loaded as ``module``) under
    ``unit``: a ``crash`` one in a worker process (a corrupted heap can also hang, which fails
    too), likewise a ``timeout`` one (a compile that took minutes must finish within
    ``crash_timeout``), any other compiled here and checked at every variant. Returns the
    kernel (None for a crash or timeout regression)."""
    if module.STATUS in ("crash", "timeout"):
        pool = Pool(jobs=1, timeout=crash_timeout)
        try:
            res = pool.map([{"id": path.stem, "name": path.stem, "source": path.read_text(),
                             "max_tile": module.MAX_TILE, "hi": 10, "limit": 3,
                             "points": list(module.POINTS), "units": [unit]}])[0]
        finally:
            pool.close()
        assert res["status"] == "pass", res.get("message")
        return None
    op = getattr(module, path.stem)
    kernel = compile_unit(op, unit, module.MAX_TILE)
    check_operator(op, hi=10, limit=3, extra_points=list(module.POINTS), kernel=kernel)
    return kernel
