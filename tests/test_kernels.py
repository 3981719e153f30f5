"""The bundled kernels (kernels/): compiled C against the reference interpreter, and numpy_impl.

The reference interpreter runs about 1 µs per statement instance, so every case stays under
BUDGET instances (test_cases_are_valid_and_small checks it). Larger sweeps are marked `slow`.
"""

import inspect
import pkgutil
import random
import zlib

import numpy as np
import pytest

import kernels
import polydyn as pd
from kernels import ALL, load
from polydyn.testing import check_kernel, make_inputs

BUDGET = 70_000  # statement instances per case for the reference interpreter

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
OUTPUTS = {name: ("C",) for name in ("matmul", "batched_matmul")}
OUTPUTS |= {name: ("Y",) for name in ("bias_relu", "softmax", "layernorm", "conv2d", "maxpool")}
OUTPUTS |= {"transpose": ("B",), "jacobi2d": ()}
INOUTS = {"jacobi2d": ("A",)}

# Statement instances the reference interpreter runs for given sizes.
COST = {
    "matmul": lambda N, M, K: N * M * (K + 1),
    "batched_matmul": lambda B, N, M, K: B * N * M * (K + 1),
    "bias_relu": lambda N, M: N * M,
    "softmax": lambda N, L: N * (3 * L + 3),
    "layernorm": lambda N, D: N * (3 * D + 5),
    "conv2d": lambda B, C, F, H, W, KH, KW: (
        B * F * (H - KH + 1) * (W - KW + 1) * (C * KH * KW + 2)
    ),
    "maxpool": lambda B, C, H, W: B * C * (H // 2) * (W // 2) * 6,
    "transpose": lambda N, M: N * M,
    "jacobi2d": lambda N, T: 2 * T * (N - 2) ** 2,
}

# Each operator's assume= (beyond every size >= 0), as a predicate.
VALID = {
    "matmul": lambda N, M, K: min(N, M, K) >= 1,
    "batched_matmul": lambda B, N, M, K: min(N, M, K) >= 1,
    "softmax": lambda N, L: L >= 1,
    "layernorm": lambda N, D: D >= 1,
    "conv2d": lambda B, C, F, H, W, KH, KW: KH >= 1 and KW >= 1 and H >= KH and W >= KW,
    "jacobi2d": lambda N, T: N >= 3,
}

# Hand-picked shapes: size 1 (and 0 where allowed), primes, around powers of two and tiles.
QUICK = {
    "matmul": [(1, 1, 1), (7, 13, 31), (16, 16, 16), (17, 15, 33), (31, 1, 64), (1, 65, 37),
               (33, 32, 31)],
    "batched_matmul": [(1, 1, 1, 1), (0, 3, 4, 5), (2, 7, 13, 5), (3, 16, 17, 15),
                       (2, 31, 33, 7)],
    "bias_relu": [(1, 1), (0, 5), (7, 13), (16, 17), (31, 65), (64, 63)],
    "softmax": [(1, 1), (0, 4), (7, 13), (16, 17), (3, 65), (33, 31)],
    "layernorm": [(1, 1), (1, 2), (7, 13), (16, 17), (31, 64), (3, 65)],
    "conv2d": [(1, 1, 1, 1, 1, 1, 1), (1, 2, 3, 7, 13, 3, 3), (2, 1, 2, 16, 17, 1, 1),
               (1, 3, 2, 15, 16, 5, 3), (1, 1, 1, 31, 33, 3, 3), (1, 2, 1, 5, 5, 5, 5)],
    "maxpool": [(1, 1, 2, 2), (1, 1, 1, 5), (1, 2, 7, 13), (2, 3, 16, 17), (1, 1, 33, 31),
                (1, 1, 64, 65)],
    "transpose": [(1, 1), (1, 7), (13, 1), (3, 0), (16, 17), (31, 33), (64, 65)],
    "jacobi2d": [(3, 1), (3, 0), (7, 5), (16, 20), (17, 3), (33, 10)],
}
EXTRA = {
    "matmul": [(1, 1, 65), (65, 1, 1), (1, 64, 1), (13, 37, 7), (15, 17, 16), (32, 33, 31),
               (63, 2, 31), (64, 3, 64), (2, 63, 65), (40, 40, 40)],
    "batched_matmul": [(1, 32, 32, 32), (4, 13, 7, 37), (7, 1, 64, 3), (3, 17, 1, 65)],
    "bias_relu": [(1, 64), (65, 1), (33, 32), (37, 31), (128, 257)],
    "softmax": [(1, 64), (64, 1), (65, 63), (13, 37), (2, 257)],
    "layernorm": [(0, 3), (64, 1), (65, 63), (37, 37), (2, 255)],
    "conv2d": [(1, 1, 1, 64, 65, 3, 3), (2, 3, 4, 17, 15, 2, 2), (1, 2, 2, 33, 32, 7, 1),
               (3, 1, 1, 1, 13, 1, 13), (1, 4, 4, 13, 13, 13, 13)],
    "maxpool": [(2, 2, 65, 63), (3, 1, 3, 3), (1, 4, 32, 33), (1, 1, 2, 129), (1, 1, 0, 4)],
    "transpose": [(32, 32), (63, 64), (37, 13), (65, 65), (0, 0)],
    "jacobi2d": [(31, 20), (32, 4), (64, 5), (65, 4), (13, 37), (4, 1)],
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
    return min(sizes.values()) >= 0 and VALID.get(name, lambda **_: True)(**sizes)


def random_shapes(name, count=RANDOM_PER_KERNEL):
    """`count` valid shapes within BUDGET, drawn with a generator seeded by the kernel name."""
    rng = random.Random(f"polydyn-{name}")
    pools = POOLS.get(name, {})
    seen = set(QUICK[name]) | set(EXTRA[name])
    shapes = []
    for _ in range(10_000):
        shape = tuple(rng.choice(pools.get(sym, POOL)) for sym in SYMS[name].split())
        sizes = sizes_of(name, shape)
        if shape not in seen and is_valid(name, sizes) and COST[name](**sizes) <= BUDGET:
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
    for shape in EXTRA[name] + random_shapes(name)
]


@pytest.fixture(scope="module")
def compiled():
    """`compiled(name)`: the kernel compiled for C, once per test module."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = pd.compile(load(name)[0], target="c")
        return cache[name]

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
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=what)


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
    assert set(SYMS) == set(ALL) == set(QUICK) == set(EXTRA) == set(MEDIUM) == set(OUTPUTS)
    for name in ALL:
        op, numpy_impl = load(name)
        assert inspect.getmodule(numpy_impl).__doc__, f"{name}: module docstring"
        assert numpy_impl.__doc__, f"{name}: numpy_impl docstring"


def test_cases_are_valid_and_small():
    for param in QUICK_CASES + SLOW_CASES:
        name, sizes = param.values
        assert is_valid(name, sizes), param.id
        assert COST[name](**sizes) <= BUDGET, param.id
    assert len(QUICK_CASES) <= 60


# --- compiled kernels against the reference interpreter ---


@pytest.mark.parametrize(("name", "sizes"), QUICK_CASES + SLOW_CASES)
def test_kernel_matches_reference(compiled, name, sizes):
    seed = zlib.crc32(repr(sorted(sizes.items())).encode())
    error = check_kernel(compiled(name), sizes, seed=seed)
    assert np.isfinite(error)


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
    A, B = matmul_inputs(13, 17, 31)
    want = kernel.op.reference(A, B)
    buf = np.full((13, 17), np.nan, np.float32)
    returned = kernel(A, B, C=buf)
    assert_close(buf, want, "C=buf")
    assert returned is None or np.shares_memory(returned, buf)
    A2, B2 = matmul_inputs(13, 17, 31, seed=4)
    kernel(A2, B2, C=buf)  # overwritten, not accumulated
    assert_close(buf, kernel.op.reference(A2, B2), "C=buf, second call")


def test_matmul_transposed_and_reversed_views(compiled):
    """Fortran-order, negative-stride and offset views, as inputs and as the output buffer."""
    kernel = compiled("matmul")
    A, B = matmul_inputs(15, 33, 17)
    want = kernel.op.reference(A, B)
    A_view = np.asfortranarray(A)  # column-major
    B_big = np.zeros((17, 2 * 33 + 3), np.float32)
    B_view = B_big[:, 68:3:-2]  # negative column stride, offset into B_big
    B_view[...] = B
    assert_close(kernel(A_view, B_view), want, "views in, output returned")

    C_big = np.full((33, 15), 7.0, np.float32)
    C_view = C_big.T  # column-major output
    kernel(A_view, B_view, C=C_view)
    assert_close(C_view, want, "column-major C=")
    C_big = np.full((16, 33), 7.0, np.float32)
    kernel(A, B, C=C_big[:0:-1])  # reversed rows, skipping row 0
    assert_close(C_big[:0:-1], want, "reversed C=")
    assert (C_big[0] == 7.0).all()


def test_jacobi2d_time_steps_by_keyword(compiled):
    kernel = compiled("jacobi2d")
    A = make_inputs(kernel.op, {"N": 17, "T": 20}, seed=5)["A"]
    want = A.copy()
    assert kernel.op.reference(want, T=20) is None
    got = A.copy()
    assert kernel(got, T=20) is None
    assert_close(got, want, "T=20")
    assert (got[[0, -1]] == A[[0, -1]]).all(), "boundary rows changed"
    assert (got[:, [0, -1]] == A[:, [0, -1]]).all(), "boundary columns changed"
    unchanged = A.copy()
    kernel(unchanged, T=0)
    assert (unchanged == A).all()
    once = A.copy()
    kernel(once, T=1)
    assert_close(once, load("jacobi2d")[1](A, T=1), "T=1 against numpy_impl")
