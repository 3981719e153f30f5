"""Fuzzing (issue 8).

- A bounded, fixed-seed differential fuzz: random operators (tests/fuzz/generator.py) on
  every available target, under the automatic schedule and random directive recipes
  (tests/fuzz/schedules.py), every variant compared with the reference interpreter at points
  of its region; the larger budget runs under ``-m slow``. ``python -m tests.fuzz --n 5000
  --seed S`` is the long run.
- The recipe generator itself: reproducible, naming only the operator's loops; a recipe
  naming an unknown loop is refused with the loops that exist.
- The shrunk regressions in tests/fuzz/regressions/ (one operator per file, with the target
  and recipe it failed under).
- The frontend fuzz: mutated bundled kernels and random sources either define and compile,
  or raise a ``PolydynError``; never another exception from inside polydyn.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import sys
import traceback
import uuid
from pathlib import Path

import pytest

from polydyn.errors import CompileError, FrontendError, PolydynError
from polydyn.runtime.opencl import opencl_available
from tests.fuzz import mutate
from tests.fuzz.__main__ import describe_unit, fuzz, make_task, op_seed, summary_line
from tests.fuzz.generator import generate, render
from tests.fuzz.known import known_compile_error, known_frontend_bug
from tests.fuzz.runner import check_regression, load_operator, run_unit
from tests.fuzz.schedules import (
    DIRECTIVE_KINDS,
    all_loops,
    draw_recipe,
    draw_recipes,
    informative,
    loop_tree,
    named_loops,
    restrict,
)
from tests.fuzz.shrink import candidates, failing_points, fit_unit, substitute, unit_edits

ROOT = Path(__file__).resolve().parents[1]
POLYDYN = ROOT / "polydyn"
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"

# The CI budget (measured: see tests/fuzz/README.md): CI_N operators of seed CI_SEED, on
# every available target, with CI_SCHEDULES random recipe each (on every target), take
# 45-76 s on 2 cores shared with other jobs; SLOW_N more, with SLOW_SCHEDULES and the automatic
# variants' recipes replayed, under -m slow.
CI_N, CI_SEED, CI_SCHEDULES = 30, 8, 1
SLOW_N, SLOW_SEED, SLOW_SCHEDULES = 200, 9, 2


def _report(summary: dict) -> str:
    lines = [summary_line(summary)]
    for f in summary["failures"]:
        known = f" (known: {f['known']})" if f["known"] else ""
        lines.append(f"  {f['name']} [{f['status']}]{known} {describe_unit(f)}: "
                     f"{f['message'][:600]}")
    lines.append("reproduce one with: python -m tests.fuzz --one <OPSEED> --schedules "
                 f"{summary['schedules']} (OPSEED: the digits of the name)")
    return "\n".join(lines)


def _run_fuzz(n: int, seed: int, schedules: int, replay: bool = False) -> None:
    summary = fuzz(n, seed, jobs=2, timeout=600, schedules=schedules, log=lambda *_: None,
                   replay=replay)
    print(_report(summary))
    # open bugs listed in tests/fuzz/known.py are reported, not failed on
    assert summary["unknown"] == 0, _report(summary)
    # refusals are generator defects: keep them rare
    assert summary["refused"] <= max(2, n // 50), summary["refusal_reasons"]
    # the recipes are exercised: some are accepted and checked, not all refused
    assert sum(c.get("pass", 0) for k, c in summary["units"].items()
               if k.endswith("/recipe")) >= n // 4, summary["units"]


def test_fuzz_fixed_seed() -> None:
    _run_fuzz(CI_N, CI_SEED, CI_SCHEDULES)


@pytest.mark.slow
def test_fuzz_fixed_seed_200() -> None:
    _run_fuzz(SLOW_N, SLOW_SEED, SLOW_SCHEDULES, replay=True)


# ------------------------------------------------------------------------------------------
# The generator and the shrinker themselves (no C compiler needed)


def test_generator_is_reproducible_and_in_bounds(tmp_path: Path) -> None:
    """The same seed gives the same source; almost every operator passes the frontend
    (its bounds check included): a refusal is a generator defect."""
    from polydyn.errors import FrontendError

    assert render(generate(1234)) == render(generate(1234))
    refused = []
    for i in range(150):
        task = make_task(op_seed(77, i))
        try:
            load_operator(task["source"], task["name"], tmp_path)
        except FrontendError as exc:
            refused.append(f"{task['name']}: {exc}")
    assert len(refused) <= 3, "\n".join(refused)


def test_generator_covers_the_dsl() -> None:
    """Over a few hundred operators every construct the issue asks for shows up."""
    text = "\n".join(render(generate(op_seed(5, i))) for i in range(300))
    for construct in ("range(i, ", "BACK)", ", 2)", "min(", "max(", "% 2 == 0", " if ",
                      " else ", "+= ", "temp(", "inout(", "out(", "pd.index", "pd.exp(",
                      "pd.grid(", "s0 = ", " // 2", "elif ", "assume=", "[i - 1",
                      "[i + 1", "f64[", "i32["):
        assert construct in text, construct


def test_generator_makes_small_extents() -> None:
    """Extents that are empty or of size 1 at small sizes (``N - 2``, ``(N + 1) // 2``)
    with loops over exactly them, and reads of the cells a loop writes (``X[0]``)."""
    import re

    ops = [generate(op_seed(5, i)) for i in range(300)]
    dims = [d for op in ops for a in op.arrays for d in a.dims if d.sym]
    assert sum(d.pad < 0 for d in dims) >= 30 and sum(d.div > 1 for d in dims) >= 30
    text = "\n".join(render(op) for op in ops)
    for pattern in (r"range\([NMKL] - 2\)", r"range\([NMKL] - 1\)",
                    r"range\(\([NMKL] \+ 1\) // 2\)", r"range\([NMKL] // [23]\)",
                    r"\[[NMKL] - 1[,\]]", r"\[0[,\]]",
                    r"f(32|64)\[[^]]*[NMKL] - 2[],]", r"\(\[?[NMKL] - 1\) // [23]"):
        assert re.search(pattern, text), pattern


def test_low_points_reach_the_least_sizes() -> None:
    import islpy as isl

    from tests.fuzz.runner import low_points

    assert low_points(isl.Set("[N] -> { : N >= 2 }"), 12) == [{"N": n} for n in (2, 3, 4, 5)]
    points = low_points(isl.Set("[N, M] -> { : N >= 2 and M <= N }"), 9, seed=1)
    assert {"N": 2, "M": 0} in points and all(2 <= p["N"] <= 9 for p in points)
    assert any(p["M"] <= 1 and p["N"] >= 3 for p in points)  # one low, the others not
    assert low_points(isl.Set("[N] -> { : N >= 20 }"), 12) == []


def test_shrink_edits() -> None:
    op = generate(op_seed(3, 1))
    smaller = list(candidates(op))
    assert smaller and all(len(render(c)) <= len(render(op)) + 40 for c in smaller)
    from tests.fuzz.generator import Assign, Ex, Loop

    body = (Loop("k", "range(1)", (Assign("A[k, i]", "=", Ex("B[k]")),)),)
    assert substitute(body[0].body, "k", "0")[0].target == "A[0, i]"
    assert failing_points("variant 1 (tiled) at {'N': 9, 'M': 3}: x") == [{"N": 9, "M": 3}]


# ------------------------------------------------------------------------------------------
# Random recipes (tests/fuzz/schedules.py)


def _operators(seed: int, count: int, tmp: Path) -> list:
    """The first ``count`` generated operators of ``seed`` that have loops, defined."""
    ops = []
    for i in range(200):
        task = make_task(op_seed(seed, i))
        op = load_operator(task["source"], task["name"], tmp)
        if all_loops(loop_tree(op.scop)):
            ops.append(op)
        if len(ops) == count:
            return ops
    raise AssertionError(f"fewer than {count} operators with loops")


def test_recipes_are_reproducible_and_name_existing_loops(tmp_path: Path) -> None:
    """The same seed draws the same recipes; every directive names loops of the operator;
    1-4 directives; over a few dozen operators every directive kind shows up."""
    import random

    kinds: set[str] = set()
    for k, op in enumerate(_operators(21, 40, tmp_path)):
        loops = {lp.var for lp in all_loops(loop_tree(op.scop))}
        rng = random.Random(k)
        recipes = [draw_recipe(op.scop, rng) for _ in range(4)]
        again = random.Random(k)
        assert [r.to_json() for r in recipes] == \
            [draw_recipe(op.scop, again).to_json() for _ in range(4)]
        for r in recipes:
            loop_steps = [name for name, _ in r.steps if name != "gpu"]
            assert 1 <= len(loop_steps) <= 4 and len(r.steps) - len(loop_steps) <= 1, r
            assert named_loops(r.to_json()) <= loops, (r, loops)
            kinds |= {name for name, _ in r.steps}
    assert kinds == {*DIRECTIVE_KINDS, "gpu"}  # gpu: the OpenCL mapping, in some recipes


@pytest.mark.slow  # half a minute of recipe draws
def test_draw_recipes_prefers_legal_ones(tmp_path: Path) -> None:
    """``draw_recipes`` (the fuzzer's) is reproducible and mostly draws recipes that polydyn
    accepts."""
    import polydyn as pd

    accepted = 0
    ops = _operators(22, 8, tmp_path)
    for op in ops:
        recipes = draw_recipes(op.scop, 7, 2)
        assert [r.to_json() for r in recipes] == [r.to_json() for r in draw_recipes(op.scop, 7, 2)]
        for r in recipes:
            try:
                pd.compile(op, variants=[("true", r)], max_tile=4)
            except pd.ScheduleError as exc:
                assert informative(str(exc), r.to_json()), exc
            else:
                accepted += 1
    assert accepted >= len(ops) // 2


def test_recipe_naming_an_unknown_loop_is_refused(tmp_path: Path) -> None:
    """A recipe with one loop name replaced by one the operator does not have is refused with
    ScheduleError naming it and listing the loops there are; the fuzzer counts that as a
    refusal, not a failure."""
    import random

    import polydyn as pd

    rng = random.Random(3)
    for op in _operators(23, 6, tmp_path):
        steps = draw_recipe(op.scop, rng).to_json()
        name, args = steps[0]
        bad = [["tile", [["zz", 4]]]] if name == "tile" else [[name, ["zz", *args[1:]]]]
        recipe = pd.Schedule.from_json(bad + steps[1:])
        loops = ", ".join(sorted({lp.var for lp in all_loops(loop_tree(op.scop))}))
        with pytest.raises(pd.ScheduleError, match=rf"unknown loop 'zz'; the loops of "
                           rf"{op.scop.name} are {loops}$"):
            pd.compile(op, variants=[("true", recipe)])
        unit = {"target": "c", "schedule": recipe.to_json(), "region": None}
        assert run_unit(op, unit, {"max_tile": 4})["status"] == "refused"


def test_replayed_recipes_must_give_the_same_source(tmp_path: Path) -> None:
    """With ``replay`` an automatic unit passes where its variants' recipes generate the same
    source, and is a mismatch naming the first differing line where they do not."""
    from types import SimpleNamespace

    import polydyn as pd
    from tests.fuzz.runner import MismatchError, replay_check

    task = {"max_tile": 4, "hi": 6, "limit": 1, "replay": True}
    for op in _operators(31, 3, tmp_path):
        unit = {"target": "c", "schedule": None, "region": None}
        assert run_unit(op, unit, task)["status"] == "pass"
        kernel = pd.compile(op, max_tile=4)
        other = SimpleNamespace(variants=kernel.variants,
                                source=kernel.source.replace("{", "{ ", 1))
        with pytest.raises(MismatchError, match="another source, from line"):
            replay_check(op, other, "c", 4)


def test_recipes_follow_the_shrinker() -> None:
    """When the shrinker removes a loop or a sym, the recipe and region lose what names it."""
    steps = [["tile", [["i", 4], ["j", 2]]], ["interchange", ["i", "j"]], ["parallel", ["j"]],
             ["unroll", ["j", 2]]]
    assert restrict(steps, {"i"}) == [["tile", [["i", 4]]]]
    assert restrict(steps, {"i", "j"}) == steps
    from tests.fuzz.generator import Assign, Ex, Loop

    op = generate(op_seed(3, 1)).replace(
        syms=("N",), body=(Loop("i", "range(N)", (Assign("A[i]", "=", Ex("1.0")),)),))
    unit = {"target": "opencl", "schedule": steps, "region": "N >= 3 and M <= 4"}
    assert fit_unit(unit, op) == {"target": "opencl", "schedule": [["tile", [["i", 4]]]],
                                  "region": "N >= 3"}
    edits = list(unit_edits(unit))
    assert {**unit, "region": None} in edits
    assert {**unit, "schedule": steps[1:]} in edits


# ------------------------------------------------------------------------------------------
# Regressions found by the fuzzer


def _regressions() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.py"))


def _load_module(path: Path):
    name = f"pd_regression_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _slow(path: Path) -> bool:
    return re.search(r"^SLOW = True$", path.read_text(), re.MULTILINE) is not None


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if _slow(p) else p
                                  for p in _regressions()], ids=lambda p: p.stem)
def test_regression(path: Path, request) -> None:
    """The operator of ``path`` under its ``TARGET`` (default C) and ``SCHEDULE`` (a recipe
    as ``Schedule.to_json()``, over ``REGION`` beside the automatic schedule when given;
    default: the automatic schedule). A crash regression runs in a worker process, so that
    the crash is a failed test, not the end of the session (a timeout one too, under a time
    limit: a compile that takes minutes again fails); one that takes long to fail says
    ``SLOW = True`` and runs under ``-m slow``."""
    module = _load_module(path)
    known = getattr(module, "KNOWN_BUG", None)
    if known:
        request.applymarker(pytest.mark.xfail(reason=known, strict=True))
    unit = {"target": getattr(module, "TARGET", "c"), "schedule": getattr(module, "SCHEDULE", None),
            "region": getattr(module, "REGION", None)}
    if unit["target"] == "opencl" and not opencl_available():
        pytest.skip("no OpenCL platform")
    check_regression(path, module, unit,
                     crash_timeout=30 if module.STATUS == "crash" else 60)


# ------------------------------------------------------------------------------------------
# Frontend fuzz: malformed sources raise PolydynError, nothing else from inside polydyn

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))
KERNEL_SOURCES = {p.stem: p.read_text() for p in mutate.KERNELS}


class _HangError(Exception):
    pass


def _alarm(signum, frame):
    raise _HangError("no answer within 60 s")


def _from_polydyn(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost traceback frame inside the polydyn package, if any."""
    inside = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve().is_relative_to(POLYDYN):
                inside = frame
        except OSError:
            continue
    return inside


def _define_and_compile(source: str, tmp: Path, compile_it: bool) -> None:
    """Load ``source`` as a module (its ``@pd.operator`` functions are defined then) and
    compile every operator it defines. Fails when an exception other than PolydynError
    comes out of polydyn; Python's own errors in the user's module code (a NameError at
    module level, say) are not polydyn's."""
    from hypothesis import event

    try:
        compile(source, "<fuzz>", "exec")
    except (SyntaxError, ValueError):
        event("not Python")
        return  # not Python at all: Python refuses it before polydyn sees it
    path = tmp / f"fz_{uuid.uuid4().hex[:12]}.py"
    path.write_text(source)
    stage = ["definition"]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        _load_and_compile(path, compile_it, stage)
    except Exception as exc:
        _judge(exc, stage[0], source, path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _load_and_compile(path: Path, compile_it: bool, stage: list[str]) -> None:
    from hypothesis import event

    import polydyn as pd
    from polydyn.options import Options
    from polydyn.scop.operator import Operator

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    event("defined")
    if compile_it:
        stage[0] = "compile"
        fast = (*Options().cflags, "-O0")
        for op in [v for v in vars(module).values() if isinstance(v, Operator)]:
            pd.compile(op, max_tile=4, cflags=fast)
            event("compiled")


def _judge(exc: Exception, stage: str, source: str, path: Path) -> None:
    """Fail unless ``exc`` is a proper refusal or the user's own Python error."""
    from hypothesis import event

    listing = f"\n--- source:\n{source}"
    event(f"{type(exc).__name__} at {stage}")
    if isinstance(exc, CompileError):
        # generated C that gcc rejects is polydyn's bug, whatever the user wrote
        if not known_compile_error(str(exc)):
            pytest.fail(f"generated C does not compile: {exc}{listing}")
    elif isinstance(exc, FrontendError):
        # a refusal names the place: the user's file and line
        assert exc.loc is not None and Path(exc.loc.file) == path, \
            f"refusal without the place: {exc}{listing}"
    elif isinstance(exc, PolydynError):
        assert "internal error" not in str(exc).lower(), f"{exc}{listing}"
    elif isinstance(exc, _HangError):
        pytest.fail(f"the {stage} hangs{listing}")
    else:
        where = _from_polydyn(exc)
        if where is not None:
            pytest.fail(f"{type(exc).__name__} from polydyn at {where.filename}:"
                        f"{where.lineno} during the {stage}: {exc}{listing}")


EDITS = st.tuples(st.sampled_from(mutate.EDIT_KINDS), st.integers(0, 10**6),
                  st.integers(0, 10**6), st.sampled_from(mutate.TOKENS))


@FUZZ_SETTINGS
@given(kernel=st.sampled_from(sorted(KERNEL_SOURCES)), edits=st.lists(EDITS, min_size=1,
                                                                       max_size=3))
def test_mutated_kernels_define_or_refuse(tmp_path_factory, kernel, edits) -> None:
    source = KERNEL_SOURCES[kernel]
    for edit in edits:
        source = mutate.apply(source, edit)
    if source == KERNEL_SOURCES[kernel] or known_frontend_bug(source):
        hypothesis.event("unchanged or a known bug")
        return
    _define_and_compile(source, tmp_path_factory.mktemp("mut"), compile_it=False)


@settings(FUZZ_SETTINGS, max_examples=40)
@given(kernel=st.sampled_from(sorted(KERNEL_SOURCES)), edits=st.lists(EDITS, min_size=1,
                                                                       max_size=2))
def test_mutated_kernels_compile_or_refuse(tmp_path_factory, kernel, edits) -> None:
    """The mutants that define must also compile (or raise a PolydynError)."""
    source = KERNEL_SOURCES[kernel]
    for edit in edits:
        source = mutate.apply(source, edit)
    if source == KERNEL_SOURCES[kernel] or known_frontend_bug(source):
        hypothesis.event("unchanged or a known bug")
        return
    _define_and_compile(source, tmp_path_factory.mktemp("mutc"), compile_it=True)


@settings(FUZZ_SETTINGS, max_examples=300)
@given(choices=st.lists(st.integers(0, 10**4), min_size=10, max_size=60))
def test_random_sources_define_or_refuse(tmp_path_factory, choices) -> None:
    source = mutate.random_source(choices, "rnd")
    _define_and_compile(source, tmp_path_factory.mktemp("rnd"), compile_it=True)


# ------------------------------------------------------------------------------------------
# Frontend regressions found by the fuzz above


def _load_source(tmp: Path, source: str, stem: str):
    path = tmp / f"{stem}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"{stem}_{uuid.uuid4().hex[:8]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_operator_applied_twice_is_refused(tmp_path: Path) -> None:
    """Was an AttributeError ('Operator' object has no attribute '__name__')."""
    source = KERNEL_SOURCES["matmul"].replace("@pd.operator(", "@pd.operator\n@pd.operator(")
    with pytest.raises(FrontendError) as info:
        _load_source(tmp_path, source, "twice")
    assert info.value.loc is not None and "twice" in info.value.loc.file


CLASHES = {
    "operator": "@pd.operator\ndef {n}(A: f32[N], B: out(f32[N])):\n"
                "    for i in range(N):\n        B[i] = pd.exp(A[i])\n",
    "loop variable": "@pd.operator\ndef clash(A: f32[N], B: out(f32[N])):\n"
                     "    for {n} in range(N):\n        B[{n}] = pd.exp(A[{n}])\n",
    "scalar": "@pd.operator\ndef clash(A: f32[N], B: out(f32[N])):\n"
              "    for i in range(N):\n        {n} = pd.sqrt(abs(A[i]))\n        B[i] = {n}\n",
}


@pytest.mark.parametrize("name", ["expf", "sqrt", "memset", "printf"])
@pytest.mark.parametrize("where", sorted(CLASHES))
def test_names_of_c_functions_compile_or_are_refused(tmp_path: Path, name: str,
                                                     where: str) -> None:
    """An operator, loop variable or scalar named like a C library function used to give C
    that gcc rejects (CompileError). Now: refused with the place, or compiled correctly."""
    import numpy as np

    import polydyn as pd

    source = ("import polydyn as pd\nfrom polydyn import f32, out\n\nN = pd.sym('N')\n\n\n"
              + CLASHES[where].format(n=name))
    try:
        _, module = _load_source(tmp_path, source, f"clash_{name}")
    except FrontendError as exc:
        assert exc.loc is not None and "clash_" in exc.loc.file
        return
    op = next(v for v in vars(module).values() if isinstance(v, pd.Operator))
    kernel = pd.compile(op)
    a = np.linspace(-1, 1, 7).astype(np.float32)
    np.testing.assert_allclose(kernel(a), op.reference(a), rtol=1e-6)


def test_sym_named_like_the_operator_is_refused(tmp_path: Path) -> None:
    """`def M(...)` with a sym M used to give C that gcc rejects."""
    source = ("import polydyn as pd\nfrom polydyn import f32, out\n\nN, M = pd.sym('N M')\n"
              "\n\n@pd.operator\ndef M(A: f32[N, M], B: out(f32[N, M])):\n"
              "    for i in range(N):\n        for j in range(M):\n"
              "            B[i, j] = A[i, j]\n")
    with pytest.raises(FrontendError) as info:
        _load_source(tmp_path, source, "symclash")
    assert info.value.loc is not None


def test_check_kernel_accepts_matching_nans(tmp_path: Path) -> None:
    """A kernel whose outputs are NaN exactly where the reference's are must pass."""
    import polydyn as pd
    from polydyn.testing import check_kernel

    source = ("import polydyn as pd\nfrom polydyn import f32, out\n\nN = pd.sym('N')\n\n\n"
              "@pd.operator\ndef nan_out(A: f32[N], B: out(f32[N])):\n"
              "    for i in range(N):\n        B[i] = pd.sqrt(A[i])\n")
    _, module = _load_source(tmp_path, source, "nan_out")
    kernel = pd.compile(module.nan_out)
    check_kernel(kernel, {"N": 8}, seed=0)  # inputs in [-1, 1]: some outputs are NaN
