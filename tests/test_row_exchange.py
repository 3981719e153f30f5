"""Two row loops around one product (``Y[n, b, :] = X[n, b, :] @ W``, a [sequence, batch,
features] input, or a batch-first one): the automatic policy tiles the longer of the two as
the register tiles' rows (``regions._rows_exchange``), whichever the operator writes inside,
and a policy recipe states the exchange (``order_band``). The operators here are written as
users write them."""

import functools

import numpy as np
import pytest

import polydyn as pd
from polydyn import f32, out
from polydyn.pipeline import generate
from polydyn.schedule.auto import original_order
from polydyn.schedule.variant import order_bands
from polydyn.scop.deps import compute_deps
from polydyn.testing import check_kernel
from tests.phrasings import batched_linear_nt_seq_first as seq_first_linear

N, B, M, K = pd.sym("N B M K")


@pd.operator(assume="N >= 1 and B >= 1 and M >= 1 and K >= 1")
def seq_first(X: f32[N, B, K], W: f32[K, M], Y: out(f32[N, B, M])):
    for n in range(N):
        for b in range(B):
            for o in range(M):
                acc = 0.0
                for k in range(K):
                    acc += X[n, b, k] * W[k, o]
                Y[n, b, o] = acc


@pd.operator(assume="N >= 1 and B >= 1 and M >= 1 and K >= 1")
def batch_first_bias(X: f32[B, N, K], W: f32[K, M], bias: f32[M], Y: out(f32[B, N, M])):
    for b, n, o in pd.grid(B, N, M):
        Y[b, n, o] = bias[o]
        for k in range(K):
            Y[b, n, o] += X[b, n, k] * W[k, o]


@pd.operator(assume="N >= 2 and M >= 2")
def skewed(A: pd.inout(f32[N, M])):
    for i in range(1, N):
        for j in range(M - 1):
            A[i, j] = A[i - 1, j + 1] * 0.5 + A[i, j]


ROWS = [(1, 1), (1, 5), (5, 1), (2, 3), (3, 2), (47, 48), (48, 47), (48, 48), (49, 2),
        (2, 49), (97, 7), (7, 97), (96, 2), (2, 96)]
COLUMNS = [(1, 3), (5, 13), (9, 2), (17, 7), (96, 31), (256, 256), (289, 300)]


def _want(X, W, bias=None):
    out64 = np.einsum("abk,km->abm", X.astype(np.float64), W.astype(np.float64))
    return out64 if bias is None else out64 + bias


@functools.cache
def _kernel(name: str) -> pd.Kernel:
    """An operator's kernel by name, compiled when first asked for."""
    return pd.compile({"seq_first": seq_first, "batch_first_bias": batch_first_bias}[name])


# the batch-first layout's exchange: in the slow set (CI checks it through
# tests/phrasings.py's batched_linear)
BATCH_FIRST = pytest.param("batch_first_bias", marks=pytest.mark.slow)


@pytest.mark.parametrize("name, rows", [("seq_first", "N"),
                                        pytest.param("batch_first_bias", "B",
                                                     marks=pytest.mark.slow)])
def test_the_longer_row_member_is_tiled(name, rows) -> None:
    """The outer row member (N of a sequence-first input, B of a batch-first one) gives the
    rows where it is the longer one; the inner one where it is at least as long."""
    k = _kernel(name)
    names = [v.name for v in k.variants]
    assert f"tiled:{rows}" in names and "tiled" in names
    outer, inner = ("N", "B") if name == "seq_first" else ("B", "N")
    at = {"M": 768, "K": 768}
    assert k.select(**{outer: 128, inner: 8}, **at).name == f"tiled:{rows}"
    assert k.select(**{outer: 8, inner: 128}, **at).name == "tiled"
    assert k.select(**{outer: 128, inner: 128}, **at).name == "tiled"
    assert k.select(**{outer: 40, inner: 8}, **at).name == f"skinny:{rows}"
    assert k.select(**{outer: 128, inner: 1}, **at).name == f"{inner}=1"
    assert k.select(**{outer: 128, inner: 8}, M=17, K=64).name == f"vector64:{rows}"
    exchanged = next(v for v in k.variants if v.name == f"tiled:{rows}")
    assert exchanged.recipe.has("order_band") and "members of band" in exchanged.summary


@pytest.mark.parametrize("name", ["seq_first", BATCH_FIRST])
def test_every_variant_agrees_at_its_edges(name) -> None:
    """Every (rows, batch) pair of ``ROWS`` (one, primes, a row tile +-1, either longer)
    times every (columns, reduction) of ``COLUMNS``, through the dispatcher against float64;
    every variant but the generic one runs somewhere."""
    k = _kernel(name)
    rng = np.random.default_rng(7)
    ran = set()
    for outer, inner in ROWS:
        for m, depth in COLUMNS:
            X = rng.standard_normal((outer, inner, depth)).astype(np.float32)
            W = rng.standard_normal((depth, m)).astype(np.float32)
            args = (X, W) if name == "seq_first" else \
                (X, W, rng.standard_normal(m).astype(np.float32))
            sizes = {"N": outer, "B": inner} if name == "seq_first" else \
                {"B": outer, "N": inner}
            ran.add(k.select(**sizes, M=m, K=depth).name)
            np.testing.assert_allclose(k(*args), _want(*args), rtol=1e-4,
                                       atol=1e-4 * np.sqrt(depth),
                                       err_msg=f"{name} {sizes} M={m} K={depth}")
    assert ran == {v.name for v in k.variants} - {"generic"}


def test_repacked_tiles_take_the_longer_row_loop() -> None:
    """With W stored along the rows (nn.Linear's ``W[o, k]``), the repacked register tiles
    run where either row loop has ``REPACK_ROWS`` rows, over the longer one; dot products
    where neither has. Every region's edges (rows 5, 6, 7; the two loops equal) against float64."""
    from polydyn.pipeline import REPACK_ROWS

    k = pd.compile(seq_first_linear)
    few = REPACK_ROWS - 1
    assert k.select(N=128, B=8, M=768, K=768).name == "small:N"
    assert k.select(N=8, B=128, M=768, K=768).name == "small"
    assert k.select(N=512, B=1, M=768, K=768).name == "B=1"
    assert k.select(N=few + 1, B=few, M=64, K=64).name == "small:N"
    assert k.select(N=few, B=few, M=64, K=64).name.startswith("dot")
    rng = np.random.default_rng(11)
    ran = set()
    for n, b in ((1, 1), (few, few), (few + 1, few), (few, few + 1), (few + 1, few + 1),
                 (few + 2, 1), (1, few + 2), (49, 3), (3, 49), (97, 7)):
        for m, depth in ((1, 3), (17, 33), (100, 7)):
            X = rng.standard_normal((n, b, depth)).astype(np.float32)
            W = rng.standard_normal((m, depth)).astype(np.float32)
            bias = rng.standard_normal(m).astype(np.float32)
            ran.add(k.select(N=n, B=b, M=m, K=depth).name)
            want = np.einsum("abk,mk->abm", X.astype(np.float64), W.astype(np.float64)) + bias
            np.testing.assert_allclose(k(X, W, bias), want, rtol=1e-4,
                                       atol=1e-4 * np.sqrt(depth), err_msg=f"{n} {b} {m}")
    assert {"small:N", "small", "B=1", "N=1"} <= ran and any(r.startswith("dot") for r in ran)
    variants = [(v.region, eval(repr(v.recipe), {"pd": pd})) for v in k.variants]
    assert generate(seq_first_linear, "c", variants=variants).source == k.source


def test_the_generic_variant_agrees() -> None:
    k = _kernel("seq_first")
    for sizes in ({"N": 3, "B": 50, "M": 33, "K": 9}, {"N": 50, "B": 3, "M": 260, "K": 5},
                  {"N": 1, "B": 1, "M": 1, "K": 1}):
        check_kernel(k, sizes, variant="generic")


def test_the_exchange_replays() -> None:
    k = _kernel("seq_first")
    variants = [(v.region, eval(repr(v.recipe), {"pd": pd})) for v in k.variants]
    assert any(r.has("order_band") for _, r in variants)
    assert generate(seq_first, "c", variants=variants).source == k.source


def test_a_hand_written_order_band_compiles_and_agrees() -> None:
    """The batch member outermost, as a recipe: the rows then come from N at every size."""
    recipe = (pd.Schedule.isl().order_band((0, 1, 0), (1, 0, 2, 3))
              .tile_band((0, 1, 0), (1, 8, 32, 16)).fuse_inits().label("mine"))
    k = pd.compile(seq_first, variants=[("true", recipe)])
    assert k.variants[0].recipe == recipe
    for sizes in ({"N": 1, "B": 1, "M": 1, "K": 1}, {"N": 9, "B": 2, "M": 33, "K": 17},
                  {"N": 16, "B": 3, "M": 64, "K": 16}):
        check_kernel(k, sizes)


@pytest.mark.parametrize("build, message", [
    (lambda: pd.Schedule.isl().order_band((0,), (0, 0)), "permutation"),
    (lambda: pd.Schedule.isl().order_band((0,), (1, 2)), "permutation"),
    (lambda: pd.Schedule.isl().order_band((0,), (0, True)), "permutation"),
    (lambda: pd.Schedule().order_band((0,), (1, 0)), "start the recipe with pd.Schedule.isl"),
    (lambda: pd.Schedule.isl().order_band((-1,), (1, 0)), "non-negative"),
])
def test_malformed_orders_are_refused(build, message) -> None:
    with pytest.raises(pd.ScheduleError, match=message):
        build()


def test_an_order_of_a_band_that_is_not_there_is_refused() -> None:
    wrong = pd.Schedule.isl().order_band((0, 1, 0), (1, 0))
    with pytest.raises(pd.ScheduleError, match="no band of 2 members at"):
        generate(seq_first, "c", variants=[("true", wrong)])


def test_an_order_that_breaks_a_dependence_is_refused() -> None:
    """A band that is not permutable (the program order of ``A[i, j] = A[i - 1, j + 1]``):
    exchanging its loops runs a read before the write it needs; keeping the order
    recomputes which members carry nothing."""
    scop = skewed.scop
    deps = compute_deps(scop)
    plain = original_order(scop, scop.context)  # one band: [0, i, 0, j, 0]
    with pytest.raises(pd.ScheduleError, match="breaks the dependence S0 -> S0"):
        order_bands(plain, (((0,), (0, 3, 2, 1, 4)),), deps)
    kept = order_bands(plain, (((0,), (0, 1, 2, 3, 4)),), deps).get_root().child(0)
    assert [kept.band_member_get_coincident(k) for k in (1, 3)] == [False, True]
