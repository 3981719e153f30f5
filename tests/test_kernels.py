"""The bundled kernels (kernels/) compiled for C, checked three ways:

- against the reference interpreter (polydyn.testing.check_kernel) on small shapes, as
  dispatched and with each variant forced, with the default tiles and with tiles capped at 8
  (so that the tiled variants run at sizes the interpreter can afford);
- against numpy_impl on shapes too large for the interpreter (numpy_impl is itself checked
  against the reference);
- calling conventions: given output buffers, strided, transposed and reversed views, `T=`,
  refused calls.

The reference interpreter runs about 1 µs per statement instance, so every reference case stays
under BUDGET instances (test_cases_are_valid_and_small checks it). Larger sweeps are `slow`.
"""

import inspect
import pkgutil
import random
import zlib

import islpy as isl
import numpy as np
import pytest

import kernels
import polydyn as pd
from kernels import ALL, load
from polydyn.testing import check_kernel, make_inputs

BUDGET = 100_000  # statement instances per case for the reference interpreter

# The syms of each kernel, in the order of the shape tuples below.
SYMS = {
    "matmul": "N M K",
    "batched_matmul": "B N M K",
    "bias_relu": "N M",
    "softmax": "N L",
    "layernorm": "N D",
    "conv2d": "B C F H W KH KW",
    "maxpool": "B C H W",
    "transpose": "N M",
    "jacobi2d": "N T",
}

# Output arguments (passed by keyword) and inout arguments (updated in place) of each kernel.
OUTPUTS = {
    "matmul": ("C",),
    "batched_matmul": ("C",),
    "bias_relu": ("Y",),
    "softmax": ("Y",),
    "layernorm": ("Y",),
    "conv2d": ("Y",),
    "maxpool": ("Y",),
    "transpose": ("B",),
    "jacobi2d": (),
}
INOUTS = {"jacobi2d": ("A",)}

# Statement instances the reference interpreter runs, as Python expressions of the syms.
COST = {
    "matmul": "N * M * (K + 1)",
    "batched_matmul": "B * N * M * (K + 1)",
    "bias_relu": "N * M",
    "softmax": "N * (3 * L + 3)",
    "layernorm": "N * (3 * D + 5)",
    "conv2d": "B * F * (H - KH + 1) * (W - KW + 1) * (C * KH * KW + 2)",
    "maxpool": "B * C * (H // 2) * (W // 2) * 6",
    "transpose": "N * M",
    "jacobi2d": "2 * T * (N - 2) ** 2",
}

# Each operator's assume= beyond "every sym >= 0", in Python syntax.
ASSUME = {
    "matmul": "N >= 1 and M >= 1 and K >= 1",
    "batched_matmul": "N >= 1 and M >= 1 and K >= 1",
    "softmax": "L >= 1",
    "layernorm": "D >= 1",
    "conv2d": "KH >= 1 and KW >= 1 and H >= KH and W >= KW",
    "jacobi2d": "N >= 3",
}

# Hand-picked shapes: size 1 (and 0 where allowed), primes, around powers of two and tiles.
QUICK = {
    # rows of B under 32 columns run the narrow register tiers (vector64: 16-31 columns,
    # vector32: 8-15, vector16: 4-7)
    "matmul": [(1, 1, 1), (7, 13, 31), (16, 16, 16), (31, 1, 64), (1, 65, 37), (33, 32, 31),
               (9, 4, 12)],
    "batched_matmul": [(1, 1, 1, 1), (0, 3, 4, 5), (2, 7, 13, 5), (3, 16, 17, 15),
                       (2, 31, 33, 7), (8, 16, 16, 8), (2, 9, 5, 6)],
    "bias_relu": [(1, 1), (0, 5), (7, 13), (16, 17), (31, 65), (64, 63)],
    "softmax": [(1, 1), (0, 4), (7, 13), (16, 17), (3, 65), (33, 31)],
    "layernorm": [(1, 1), (1, 2), (7, 13), (16, 17), (31, 64), (3, 65)],
    # output rows of 32 columns or more run the tiled variants, narrower ones the narrow
    # register tiers (vector64: 16-31 columns, vector32: 8-15, vector16: 4-7); 64 input
    # channels and 32 output channels or more the transposed register tiles (channels)
    "conv2d": [(1, 1, 1, 1, 1, 1, 1), (2, 8, 8, 3, 34, 3, 3), (2, 9, 9, 3, 35, 3, 3),
               (2, 3, 17, 4, 9, 3, 3), (2, 1, 2, 16, 36, 1, 1),
               (1, 3, 2, 15, 16, 5, 3), (1, 1, 1, 31, 33, 3, 3), (1, 64, 33, 5, 5, 5, 5)],
    "maxpool": [(1, 1, 2, 2), (1, 1, 1, 5), (1, 2, 7, 13), (2, 3, 16, 17), (1, 1, 33, 31),
                (1, 1, 64, 65)],
    "transpose": [(1, 1), (1, 7), (13, 1), (3, 0), (16, 17), (32, 16), (31, 33), (64, 65)],
    "jacobi2d": [(3, 1), (3, 0), (7, 5), (16, 20), (17, 3), (33, 10)],
}
EXTRA = {
    "matmul": [(1, 1, 65), (65, 1, 1), (1, 64, 1), (13, 37, 7), (15, 17, 16), (32, 33, 31),
               (63, 2, 31), (64, 3, 64), (2, 63, 65), (40, 40, 40),
               # the narrow register tiers' edges: 8 rows and 4, 8, 16 columns
               (7, 7, 3), (17, 8, 5), (8, 31, 2), (17, 15, 33)],
    "batched_matmul": [(1, 32, 32, 32), (4, 13, 7, 37), (7, 1, 64, 3), (3, 17, 1, 65),
                       (9, 9, 10, 11)],
    "bias_relu": [(1, 64), (65, 1), (33, 32), (37, 31)],
    "softmax": [(1, 64), (64, 1), (65, 63), (13, 37), (2, 257)],
    "layernorm": [(0, 3), (64, 1), (65, 63), (37, 37), (2, 255)],
    "conv2d": [(1, 1, 1, 64, 65, 3, 3), (2, 3, 4, 17, 15, 2, 2), (1, 2, 2, 33, 32, 7, 1),
               (1, 2, 1, 5, 5, 5, 5),
               (3, 1, 1, 1, 13, 1, 13), (1, 4, 4, 13, 13, 13, 13),
               (2, 8, 8, 5, 10, 3, 3), (2, 9, 10, 4, 11, 3, 3), (1, 2, 3, 7, 13, 3, 3),
               (2, 1, 2, 16, 17, 1, 1),
               # the narrow register tiers' edges: 16 rows and 4, 8, 16 columns
               (2, 2, 33, 4, 18, 3, 3), (1, 3, 16, 3, 33, 3, 3), (3, 2, 15, 4, 17, 3, 3),
               (2, 2, 17, 5, 10, 3, 3), (1, 1, 31, 3, 6, 3, 3)],
    "maxpool": [(2, 2, 65, 63), (3, 1, 3, 3), (1, 4, 32, 33), (1, 1, 2, 129), (1, 1, 0, 4)],
    "transpose": [(32, 32), (63, 64), (37, 13), (65, 65), (0, 0)],
    "jacobi2d": [(31, 20), (32, 4), (64, 5), (65, 4), (13, 37), (4, 1),
                 # the wavefront region's edges (T >= 2 time tiles of 5) and its 32-row
                 # tiles of the skewed rows 2t + i (N - 2 + 2 (T - 1) of them)
                 (37, 9), (34, 10), (3, 10), (4, 11), (35, 14), (11, 15), (23, 19),
                 (24, 16)],
}
# Shapes past the automatic tile sizes (32, 64, 256) in some dims, small in the others, so
# that full and partial tiles both run; for jacobi2d, long time loops on small grids.
ACROSS_TILES = {
    "matmul": [(65, 257, 3), (257, 33, 7), (9, 9, 513)],
    "batched_matmul": [(2, 33, 257, 3), (1, 3, 5, 1025)],
    "bias_relu": [(129, 513), (1, 1031), (1031, 3)],
    "softmax": [(3, 1025), (257, 33)],
    "layernorm": [(2, 1031), (257, 31)],
    "conv2d": [(1, 2, 2, 66, 66, 2, 2), (1, 1, 1, 3, 300, 3, 3)],
    "maxpool": [(1, 1, 258, 130), (1, 2, 5, 1030)],
    "transpose": [(257, 259), (32, 256), (64, 512), (1, 1025), (1025, 3)],
    "jacobi2d": [(33, 33), (67, 7), (130, 2), (3, 128), (10, 125), (17, 121)],
}

# Shapes too big for the reference interpreter, checked against numpy_impl instead (which
# test_numpy_impl_matches_reference checks against the reference): they reach the tiled
# variants of the automatic policy. The first of each kernel runs unmarked.
LARGE = {
    "matmul": [(49, 257, 260), (48, 256, 256), (96, 512, 256), (100, 300, 70), (31, 300, 100),
               (1, 300, 200), (53, 300, 300), (257, 300, 70)],
    "batched_matmul": [(2, 50, 260, 257), (2, 48, 256, 256), (31, 64, 64, 64),
                       (1, 70, 50, 40)],
    "bias_relu": [(300, 1000), (1, 5000)],
    "softmax": [(100, 1000), (1, 3000)],
    "layernorm": [(100, 1000), (1, 3000)],
    "conv2d": [(2, 8, 8, 20, 20, 3, 3), (1, 16, 16, 30, 30, 3, 3), (3, 4, 5, 40, 33, 5, 1),
               (2, 64, 4, 50, 34, 3, 3), (2, 64, 6, 52, 40, 3, 3), (2, 64, 112, 6, 34, 3, 3),
               (2, 65, 114, 5, 41, 3, 3), (2, 64, 35, 6, 33, 3, 3)],
    "maxpool": [(2, 8, 66, 65), (1, 16, 31, 64)],
    "transpose": [(257, 259), (48, 512), (300, 200), (1, 1000)],
    "jacobi2d": [(200, 40), (64, 200), (100, 32)],
}

# Seeded random shapes: each sym drawn from POOL unless a kernel narrows it.
POOL = (1, 2, 3, 7, 13, 15, 16, 17, 31, 32, 33, 37, 63, 64, 65)
POOLS = {
    "batched_matmul": {"B": (1, 2, 3)},
    "conv2d": {"B": (1, 2), "C": (1, 2, 3), "F": (1, 2, 3), "KH": (1, 2, 3, 5), "KW": (1, 2, 3, 5)},
    "maxpool": {"B": (1, 2), "C": (1, 2, 3)},
    "jacobi2d": {"T": (0, 1, 2, 5, 10, 20)},
}
RANDOM_PER_KERNEL = 6

# One medium shape per kernel for the numpy_impl and strided-view checks.
MEDIUM = {
    "matmul": (13, 17, 31),
    "batched_matmul": (3, 7, 13, 5),
    "bias_relu": (17, 33),
    "softmax": (13, 37),
    "layernorm": (7, 33),
    "conv2d": (2, 3, 2, 9, 11, 3, 2),
    "maxpool": (2, 3, 9, 13),
    "transpose": (13, 17),
    "jacobi2d": (13, 7),
}


def sizes_of(name, shape):
    return dict(zip(SYMS[name].split(), shape, strict=True))


def is_valid(name, sizes):
    return min(sizes.values()) >= 0 and eval(ASSUME.get(name, "True"), {}, dict(sizes))


def cost(name, sizes):
    return eval(COST[name], {}, dict(sizes))


def random_shapes(name, count=RANDOM_PER_KERNEL):
    """`count` valid shapes within BUDGET, drawn with a generator seeded by the kernel name."""
    rng = random.Random(f"polydyn-{name}")
    pools = POOLS.get(name, {})
    seen = set(QUICK[name]) | set(EXTRA[name]) | set(ACROSS_TILES[name])
    shapes = []
    for _ in range(10_000):
        shape = tuple(rng.choice(pools.get(sym, POOL)) for sym in SYMS[name].split())
        sizes = sizes_of(name, shape)
        if shape not in seen and is_valid(name, sizes) and cost(name, sizes) <= BUDGET:
            seen.add(shape)
            shapes.append(shape)
            if len(shapes) == count:
                break
    return shapes


def case(name, shape, *marks):
    sizes = sizes_of(name, shape)
    case_id = name + "-" + "-".join(f"{sym}{n}" for sym, n in sizes.items())
    return pytest.param(name, sizes, id=case_id, marks=marks)


QUICK_CASES = [case(name, shape) for name in ALL for shape in QUICK[name]]
SLOW_CASES = [
    case(name, shape, pytest.mark.slow)
    for name in ALL
    for shape in EXTRA[name] + ACROSS_TILES[name] + random_shapes(name)
]
LARGE_CASES = [
    case(name, shape, *([pytest.mark.slow] if k else []))
    for name in ALL
    for k, shape in enumerate(LARGE[name])
]


@pytest.fixture(scope="module")
def compiled():
    """`compiled(name, max_tile=None)`: the kernel compiled for C, once per test module.

    max_tile caps the automatic tile sizes, so that the tiled variants start at sizes the
    reference interpreter can check. The CPU is pinned to the AVX-512 plan (1 MiB of L2),
    whose tiles this file's shapes were picked around, on every machine (test_variants
    checks the plan of the machine at hand at its regions' edges, and the AVX2 plan's
    register tiles)."""
    cache = {}

    def get(name, max_tile=None):
        if (name, max_tile) not in cache:
            options = {} if max_tile is None else {"max_tile": max_tile}
            cache[name, max_tile] = pd.compile(load(name)[0], target="c", isa="avx512",
                                               l2_bytes=1 << 20, **options)
        return cache[name, max_tile]

    return get


def signature(numpy_impl):
    """The positional argument names of `numpy_impl` and its keyword-only (index sym) names."""
    params = inspect.signature(numpy_impl).parameters.values()
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    return positional, keywords


def call_inputs(name, sizes, seed):
    """(positional arrays in declaration order, index-sym keywords) for a call of kernel `name`."""
    op, numpy_impl = load(name)
    positional, keywords = signature(numpy_impl)
    inputs = make_inputs(op, sizes, seed=seed)
    assert sorted(inputs) == sorted(positional), "numpy_impl's arguments differ from the op's"
    return [inputs[arg] for arg in positional], {sym: sizes[sym] for sym in keywords}


def results(name, returned, args):
    """The results of one call as a tuple: the outputs returned, or the inout arrays updated."""
    if not OUTPUTS[name]:
        assert returned is None
        positional, _ = signature(load(name)[1])
        return tuple(args[positional.index(arg)] for arg in INOUTS[name])
    return returned if isinstance(returned, tuple) else (returned,)


def assert_close(got, want, what=""):
    """Same shape and dtype, and equal up to float32 rounding of the results' magnitude."""
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    scale = float(np.abs(want).max()) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale, err_msg=what)


def in_region(region, sizes):
    """Whether the sizes lie in a variant's region (an isl set over the syms)."""
    region = isl.Set(str(region))
    syms = [region.get_dim_name(isl.dim_type.param, k)
            for k in range(region.dim(isl.dim_type.param))]
    point = " and ".join(f"{sym} = {sizes[sym]}" for sym in syms)
    return not region.intersect(isl.Set(f"[{', '.join(syms)}] -> {{ : {point} }}")).is_empty()


def reachable(variants):
    """The names of the variants the dispatcher can pick (first region that matches wins)."""
    names, earlier = [], None
    for variant in variants:
        region = isl.Set(str(variant.region))
        rest = region if earlier is None else region.subtract(earlier)
        if not rest.is_empty():
            names.append(variant.name)
        earlier = region if earlier is None else earlier.union(region)
    return names


def strided(array, fill):
    """(big, view): `view` holds `array`, every axis strided by 2 inside `big` filled with fill."""
    big = np.full(tuple(2 * n + 1 for n in array.shape), fill, array.dtype)
    view = big[tuple(slice(1, None, 2) for _ in array.shape)]
    view[...] = array
    return big, view


def gaps(big):
    """The elements of `big` outside its strided view."""
    outside = np.ones(big.shape, bool)
    outside[tuple(slice(1, None, 2) for _ in big.shape)] = False
    return big[outside]


# --- the library itself (no C compiler needed) ---


def test_library_is_complete():
    modules = {info.name for info in pkgutil.iter_modules(kernels.__path__)}
    assert {module.removeprefix("kernels.") for module, _ in ALL.values()} == modules
    assert set(SYMS) == set(ALL) == set(QUICK) == set(EXTRA) == set(ACROSS_TILES)
    assert set(ALL) == set(LARGE) == set(MEDIUM) == set(OUTPUTS)
    for name in ALL:
        _, numpy_impl = load(name)
        assert inspect.getmodule(numpy_impl).__doc__, f"{name}: module docstring"
        assert numpy_impl.__doc__, f"{name}: numpy_impl docstring"


def test_cases_are_valid_and_small():
    for param in QUICK_CASES + SLOW_CASES:
        name, sizes = param.values
        assert is_valid(name, sizes), param.id
        assert cost(name, sizes) <= BUDGET, param.id
    assert len(QUICK_CASES) <= 60


# --- compiled kernels against the reference interpreter ---


@pytest.mark.parametrize(("name", "sizes"), QUICK_CASES + SLOW_CASES)
def test_kernel_matches_reference(compiled, name, sizes):
    seed = zlib.crc32(repr(sorted(sizes.items())).encode())
    error = check_kernel(compiled(name), sizes, seed=seed)
    assert np.isfinite(error)


# The shapes checked against the reference with each variant forced: default tile sizes, and
# tiles capped at 8 (where the quick shapes reach the tiled and full-tile variants).
VARIANT_SHAPES = {None: {name: QUICK[name] + ACROSS_TILES[name] for name in ALL}, 8: QUICK}


@pytest.mark.parametrize("max_tile", list(VARIANT_SHAPES))
@pytest.mark.parametrize("name", list(ALL))
def test_every_variant_on_the_cases_in_its_region(compiled, name, max_tile):
    """Each variant forced (not only the one the dispatcher picks) on the small cases it covers."""
    kernel = compiled(name, max_tile)
    for variant in kernel.variants:
        for shape in VARIANT_SHAPES[max_tile][name]:
            sizes = sizes_of(name, shape)
            if in_region(variant.region, sizes):
                check_kernel(kernel, sizes, seed=7, variant=variant.name)


@pytest.mark.parametrize(("name", "sizes"), LARGE_CASES)
def test_large_against_numpy(compiled, name, sizes):
    """Every variant whose region holds these sizes, and the dispatched call, vs numpy_impl."""
    kernel = compiled(name)
    args, index = call_inputs(name, sizes, seed=8)
    want = load(name)[1](*[arg.copy() for arg in args], **index)
    want = want if isinstance(want, tuple) else (want,)
    variants = [variant.name for variant in kernel.variants if in_region(variant.region, sizes)]
    for variant in [None, *variants]:
        run_args = [arg.copy() for arg in args]
        if variant is None:
            returned = kernel(*run_args, **index)
        else:
            returned = kernel.run_variant(variant, *run_args, **index)
        for i, (g, w) in enumerate(zip(results(name, returned, run_args), want, strict=True)):
            assert_close(g, w, f"{name} {sizes} variant {variant or 'dispatched'} result {i}")


@pytest.mark.parametrize("max_tile", list(VARIANT_SHAPES))
@pytest.mark.parametrize("name", list(ALL))
def test_cases_reach_every_variant(compiled, name, max_tile):
    """The shapes of this file make the dispatcher pick every variant it can pick."""
    kernel = compiled(name, max_tile)
    shapes = VARIANT_SHAPES[max_tile][name] + (LARGE[name] if max_tile is None else [])
    picked = {kernel.select(**sizes_of(name, shape)).name for shape in shapes}
    missed = [(v.name, str(v.region)) for v in kernel.variants
              if v.name in reachable(kernel.variants) and v.name not in picked]
    assert not missed, f"no test shape of {name} runs these variants: {missed}"


@pytest.mark.parametrize("name", list(ALL))
def test_numpy_impl_matches_reference(name):
    op, numpy_impl = load(name)
    args, index = call_inputs(name, sizes_of(name, MEDIUM[name]), seed=1)
    ref_args = [arg.copy() for arg in args]
    want = results(name, op.reference(*ref_args, **index), ref_args)
    got = numpy_impl(*[arg.copy() for arg in args], **index)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, f"{name} result {i}")


@pytest.mark.parametrize("name", list(ALL))
def test_strided_views(compiled, name):
    """Inputs and output buffers that are views strided on every axis give correct results."""
    op, _ = load(name)
    args, index = call_inputs(name, sizes_of(name, MEDIUM[name]), seed=2)
    ref_args = [arg.copy() for arg in args]
    want = results(name, op.reference(*ref_args, **index), ref_args)

    in_bigs, in_views = zip(*(strided(arg, fill=7.0) for arg in args), strict=True)
    out_bigs, out_views = {}, {}
    for out_name, w in zip(OUTPUTS[name], want, strict=False):
        out_bigs[out_name], out_views[out_name] = strided(np.full_like(w, np.nan), fill=7.0)
    compiled(name)(*in_views, **index, **out_views)

    got = results(name, tuple(out_views.values()) or None, list(in_views))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, f"{name} result {i}")
    for big in [*in_bigs, *out_bigs.values()]:
        assert (gaps(big) == 7.0).all(), "wrote outside the view"
    inouts = INOUTS.get(name, ())
    positional, _ = signature(load(name)[1])
    for arg_name, arg, view in zip(positional, args, in_views, strict=True):
        if arg_name not in inouts:
            assert (view == arg).all(), f"input {arg_name} was modified"


# --- calling conventions ---


def matmul_inputs(n, m, k, seed=3):
    inputs = make_inputs(load("matmul")[0], {"N": n, "M": m, "K": k}, seed=seed)
    return inputs["A"], inputs["B"]


def test_matmul_into_given_buffer(compiled):
    kernel = compiled("matmul")
    a, b = matmul_inputs(13, 17, 31)
    want = kernel.op.reference(a, b)
    buf = np.full((13, 17), np.nan, np.float32)
    returned = kernel(a, b, C=buf)
    assert_close(buf, want, "C=buf")
    assert returned is None or np.shares_memory(returned, buf)
    a2, b2 = matmul_inputs(13, 17, 31, seed=4)
    kernel(a2, b2, C=buf)  # overwritten, not accumulated
    assert_close(buf, kernel.op.reference(a2, b2), "C=buf, second call")


def test_matmul_transposed_and_reversed_views(compiled):
    """Fortran-order, negative-stride and offset views, as inputs and as the output buffer."""
    kernel = compiled("matmul")
    a, b = matmul_inputs(15, 33, 17)
    want = kernel.op.reference(a, b)
    a_view = np.asfortranarray(a)  # column-major
    b_big = np.zeros((17, 2 * 33 + 3), np.float32)
    b_view = b_big[:, 68:3:-2]  # negative column stride, offset into b_big
    b_view[...] = b
    assert_close(kernel(a_view, b_view), want, "views in, output returned")

    c_big = np.full((33, 15), 7.0, np.float32)
    c_view = c_big.T  # column-major output
    kernel(a_view, b_view, C=c_view)
    assert_close(c_view, want, "column-major C=")
    c_big = np.full((16, 33), 7.0, np.float32)
    kernel(a, b, C=c_big[:0:-1])  # reversed rows, skipping row 0
    assert_close(c_big[:0:-1], want, "reversed C=")
    assert (c_big[0] == 7.0).all()


def test_jacobi2d_time_steps_by_keyword(compiled):
    kernel = compiled("jacobi2d")
    a = make_inputs(kernel.op, {"N": 17, "T": 20}, seed=5)["A"]
    want = a.copy()
    assert kernel.op.reference(want, T=20) is None
    got = a.copy()
    assert kernel(got, T=20) is None
    assert_close(got, want, "T=20")
    assert (got[[0, -1]] == a[[0, -1]]).all(), "boundary rows changed"
    assert (got[:, [0, -1]] == a[:, [0, -1]]).all(), "boundary columns changed"
    unchanged = a.copy()
    kernel(unchanged, T=0)
    assert (unchanged == a).all()
    once = a.copy()
    kernel(once, T=1)
    assert_close(once, load("jacobi2d")[1](a, T=1), "T=1 against numpy_impl")


def test_refused_calls_name_the_argument_and_write_nothing(compiled):
    kernel = compiled("matmul")
    a, b = matmul_inputs(4, 5, 6)
    buf = np.full((4, 5), 7.0, np.float32)
    with pytest.raises(pd.ShapeError, match="'B'"):
        kernel(a, b[:-1], C=buf)  # K differs between A and B
    with pytest.raises(pd.ShapeError, match="'C'"):
        kernel(a, b[:, :-1], C=buf)  # M differs between B and C
    with pytest.raises(pd.ShapeError, match="'C'"):
        kernel(a, b, C=buf.astype(np.float64))
    assert (buf == 7.0).all()
    f32 = np.float32
    with pytest.raises(pd.ShapeError, match="outside"):  # KH > H: outside assume
        compiled("conv2d")(np.zeros((1, 1, 2, 2), f32), np.zeros((1, 1, 3, 3), f32))
    with pytest.raises(pd.ShapeError, match="outside"):  # N >= 3
        compiled("jacobi2d")(np.zeros((2, 2), f32), T=1)
    with pytest.raises(pd.ShapeError, match="T"):
        compiled("jacobi2d")(np.zeros((3, 3), f32))


def test_values_that_expose_numerics(compiled):
    """Softmax of large values (max subtraction), max pooling of negatives (starts at -inf),
    layernorm of constant rows (zero variance: the output is beta)."""
    f32 = np.float32
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], f32)
    y = compiled("softmax")(x)
    assert np.isfinite(y).all()
    assert_close(y, load("softmax")[1](x), "softmax, large inputs")
    x = -5.0 - np.arange(2 * 3 * 5 * 4, dtype=f32).reshape(2, 3, 5, 4)
    assert_close(compiled("maxpool")(x), load("maxpool")[1](x), "maxpool, negative inputs")
    x = np.full((3, 8), 0.25, f32)
    gamma, beta = np.linspace(-1, 1, 8, dtype=f32), np.linspace(2, 3, 8, dtype=f32)
    assert_close(compiled("layernorm")(x, gamma, beta), np.tile(beta, (3, 1)), "constant rows")


def test_each_variant_holds_its_function(tmp_path):
    """``Variant.source`` (SPEC section 2): the variant's C function, fresh and from the cache
    (a second compile loads the entry)."""
    for _ in range(2):
        k = pd.compile(load("transpose")[0], cache_dir=tmp_path)
        for i, v in enumerate(k.variants):
            assert f"int transpose_v{i}(" in v.source and f"variant {v.name}:" in v.source
            assert v.source in k.source
