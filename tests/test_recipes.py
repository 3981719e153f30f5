"""Recipes (SPEC section 3): every variant's ``recipe`` is a pd.Schedule, the automatic
policy's too; its repr is Python that rebuilds it; compiling (region, recipe) of every variant
generates the same sources again, on C and OpenCL, and the replayed kernels agree with the
reference. The operators here are written the ways users write them, not as in kernels/."""

import json

import pytest

import polydyn as pd
from polydyn import f32, out, temp
from polydyn.pipeline import generate
from polydyn.target import GpuTarget
from polydyn.testing import check_kernel, region_points

N, M, K = pd.sym("N M K")


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def matmul_scalar(A: f32[N, K], B: f32[K, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            s = 0.0
            for k in range(K):
                s += A[i, k] * B[k, j]
            C[i, j] = s


@pd.operator(assume="N >= 1 and M >= 1 and K >= 1")
def linear(X: f32[N, K], W: f32[M, K], b: f32[M], Y: out(f32[N, M])):
    for n in range(N):
        for o in range(M):
            Y[n, o] = b[o]
            for k in range(K):
                Y[n, o] += X[n, k] * W[o, k]


@pd.operator(assume="N >= 1 and M >= 1")
def scaled_rows(X: f32[N, M], Y: out(f32[N, M])):
    for i in range(N):
        total = 0.0
        for j in range(M):
            total += X[i, j] * X[i, j]
        for j in range(M):
            Y[i, j] = X[i, j] / (total + 1.0)


@pd.operator(assume="N >= 3")
def heat(A: pd.inout(f32[N]), T: pd.index):
    nxt = temp(f32[N])
    for t in range(T):  # noqa: B007
        for i in range(1, N - 1):
            nxt[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
        for i in range(1, N - 1):
            A[i] = nxt[i]


@pd.operator(assume="N >= 1 and M >= 1")
def transpose_add(A: f32[M, N], B: f32[N, M], C: out(f32[N, M])):
    for i in range(N):
        for j in range(M):
            C[i, j] = A[j, i] + B[i, j]


OPERATORS = [matmul_scalar, linear, scaled_rows, heat, transpose_add]


def _plan(target):
    """The CPU this machine's compiler targets, or an OpenCL device of 256 work-items."""
    return GpuTarget(max_group=256) if target == "opencl" else target


def _replayed(op, target):
    gen = generate(op, _plan(target))
    recipes = [eval(repr(v.recipe), {"pd": pd}) for v in gen.scheduled]
    assert recipes == [v.recipe for v in gen.scheduled]
    return gen, [(v.region, r) for v, r in zip(gen.scheduled, recipes, strict=True)]


@pytest.mark.parametrize("target", ["c", "opencl"])
@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.scop.name)
def test_policy_recipes_replay_to_the_same_sources(op, target) -> None:
    gen, variants = _replayed(op, target)
    assert all(v.recipe.is_policy for v in gen.scheduled)
    again = generate(op, _plan(target), variants=variants)
    assert again.sources == gen.sources
    assert [v.name for v in again.scheduled] == [v.name for v in gen.scheduled]
    # and through JSON, as a cache or a tuner would keep them
    from_json = [(v.region, pd.Schedule.from_json(json.dumps(v.recipe.to_json())))
                 for v in gen.scheduled]
    assert generate(op, _plan(target), variants=from_json).sources == gen.sources


@pytest.mark.parametrize("op", [matmul_scalar, linear, heat], ids=lambda op: op.scop.name)
def test_replayed_kernels_agree_with_the_reference(op) -> None:
    k = pd.compile(op)
    again = pd.compile(op, variants=[(v.region, v.recipe) for v in k.variants])
    assert again.source == k.source
    for v in again.variants:
        for sizes in region_points(again.scop, v.region, hi=70, limit=3):
            check_kernel(again, {"T": 3, **sizes} if op is heat else sizes, variant=v.name)


def test_the_heat_recipe_states_the_double_buffer() -> None:
    gen = generate(heat, "c")
    assert gen.notes and all(v.recipe.has("double_buffer") for v in gen.scheduled)
    mixed = [(gen.scheduled[0].region, gen.scheduled[0].recipe),
             ("true", pd.Schedule.auto())]
    with pytest.raises(pd.ScheduleError, match="every variant's recipe or in none"):
        generate(heat, "c", variants=mixed)


def test_a_hand_written_policy_recipe_compiles_and_agrees() -> None:
    recipe = (pd.Schedule.isl().tile_band((0,), (8, 16, 4)).keep_partial_tiles()
              .fuse_inits().label("mine"))
    k = pd.compile(matmul_scalar, variants=[("true", recipe)])
    assert [v.name for v in k.variants] == ["mine"]
    assert k.variants[0].recipe == recipe
    for sizes in ({"N": 1, "M": 1, "K": 1}, {"N": 9, "M": 17, "K": 5},
                  {"N": 16, "M": 33, "K": 8}):
        check_kernel(k, sizes)


def test_repr_and_str() -> None:
    recipe = pd.Schedule.isl().tile_band((0, 1), (32, 256), deep=True).registers(
        4, 64, transposed=True).single_thread().label("v")
    assert repr(recipe) == ("pd.Schedule.isl().tile_band((0, 1), (32, 256), deep=True)"
                            ".registers(4, 64, transposed=True).single_thread().label('v')")
    assert str(recipe).splitlines()[0] == "pd.Schedule.isl()"
    assert len(str(recipe).splitlines()) == 5
    loops = pd.Schedule().tile(i=64, j=8).parallel("i").unroll("j", 2)
    assert repr(loops) == "pd.Schedule().tile(i=64, j=8).parallel('i').unroll('j', 2)"
    assert eval(repr(loops), {"pd": pd}) == loops
    assert repr(pd.Schedule.auto()) == "pd.Schedule.auto()"
    odd = pd.Schedule.from_json([["tile", [["i", 4]]], ["auto", []]])
    assert eval(repr(odd), {"pd": pd}) == odd


def test_the_gpu_mapping_is_a_directive() -> None:
    """An OpenCL variant's recipe is isl's schedule and the mapping's choices (``gpu``),
    not the CPU policy's tiles; a variant's own register tiles replay, and the C target
    ignores the directive."""
    k = pd.compile(matmul_scalar, target=_plan("opencl"),
                   variants=[("N >= 64 and M >= 64", pd.Schedule.isl().gpu(regtile="2x4")),
                             ("true", pd.Schedule.isl().gpu(regtile="off"))])
    first, second = k.variants
    assert repr(first.recipe) == ("pd.Schedule.isl().gpu(regtile='2x4', group=((16, 16),), "
                                  "bk=16, stages=2).label('user0')")
    assert "register tiles 2x4" in first.summary and "register tiles" not in second.summary
    for sizes in ({"N": 64, "M": 65, "K": 3}, {"N": 130, "M": 64, "K": 17},
                  {"N": 5, "M": 7, "K": 9}):
        check_kernel(k, sizes)
    again = pd.compile(matmul_scalar, target=_plan("opencl"),
                       variants=[(v.region, v.recipe) for v in k.variants])
    assert again.source == k.source
    bare = pd.compile(matmul_scalar, target=_plan("opencl"),
                      variants=[("true", pd.Schedule.isl().gpu(local=False))])
    assert repr(bare.variants[0].recipe) == ("pd.Schedule.isl().gpu(local=False, group=((16, "
                                             "16),)).label('user0')")
    assert "__local" not in bare.source and "register tiles" not in bare.variants[0].summary
    check_kernel(bare, {"N": 33, "M": 17, "K": 5})
    auto = generate(heat, _plan("opencl"))
    assert all(not v.recipe.has("tile_band") and v.recipe.has("gpu")
               for v in auto.scheduled)
    plain = generate(matmul_scalar, "c")
    mapped = [(v.region, eval(repr(v.recipe), {"pd": pd}).gpu(regtile="4x4"))
              for v in plain.scheduled]
    assert generate(matmul_scalar, "c", variants=mapped).sources == plain.sources


@pytest.mark.parametrize("build, message", [
    (lambda: pd.Schedule.isl().gpu(regtile="5"), "TMxTN"),
    (lambda: pd.Schedule.isl().gpu(outer=1), "True or False"),
    (lambda: pd.Schedule.isl().gpu(local="no"), "True or False"),
    (lambda: pd.Schedule().gpu(outer=True), "start the recipe with pd.Schedule.isl"),
    (lambda: pd.Schedule.isl().gpu(group=(0, 4)), "positive integers"),
    (lambda: pd.Schedule.isl().gpu(group=(2, 2, 2, 2)), "1 to 3"),
    (lambda: pd.Schedule.isl().gpu(group=((4, 4), (8, 2))), "one tuple per number"),
    (lambda: pd.Schedule.isl().gpu(group=(64, 64)), "more than 1024"),
    (lambda: pd.Schedule.isl().gpu(lanes=(96, 96)), "power of two"),
    (lambda: pd.Schedule.isl().gpu(lanes=(256, 128)), "at least the first"),
    (lambda: pd.Schedule.isl().gpu(lanes=256), "two positive integers"),
    (lambda: pd.Schedule.isl().gpu(columns=(64, 32)), "at most 1024"),
    (lambda: pd.Schedule.isl().gpu(bk=65), "1 to 64"),
    (lambda: pd.Schedule.isl().gpu(bk=True), "1 to 64"),
    (lambda: pd.Schedule().tile_band((0,), (4,)), "start the recipe with pd.Schedule.isl"),
    (lambda: pd.Schedule.isl().tile(i=4), "names the operator's loops"),
    (lambda: pd.Schedule.isl().tile_band((0,), (0, 4)), "positive integers"),
    (lambda: pd.Schedule.isl().wavefront((0,), (4, 4, 4)), "two tile sizes"),
    (lambda: pd.Schedule.isl().label("a */ b"), "printable"),
])
def test_malformed_recipes_are_refused(build, message) -> None:
    with pytest.raises(pd.ScheduleError, match=message):
        build()


def test_conflicting_recipes_are_refused() -> None:
    both = pd.Schedule.isl().wavefront((0,), (4, 4)).tile_band((0,), (4, 4))
    with pytest.raises(pd.ScheduleError, match="give one"):
        generate(matmul_scalar, "c", variants=[("true", both)])
    wide = pd.Schedule.isl().registers(4, 4096)
    with pytest.raises(pd.ScheduleError, match="bytes of accumulators"):
        generate(matmul_scalar, "c", variants=[("true", wide)])
    same = pd.Schedule.isl().label("x")
    with pytest.raises(pd.CompileError, match="labelled 'x'"):
        generate(matmul_scalar, "c", variants=[("N >= 5", same), ("true", same)])
