"""Regions and variants (issue 3): every variant of every bundled kernel agrees with the
reference inside its region and on both sides of each region boundary; specialization shows
in the generated code; holes in a user partition are refused."""

import ctypes
import functools
import re

import numpy as np
import pytest

import polydyn as pd
from kernels import ALL, load
from polydyn.lowering.openmp import (
    PACKED_PARALLEL_MIN_WORK,
    PARALLEL_MIN_WORK,
    SEPARATE_PARALLEL_MIN_WORK,
    TILED_PARALLEL_MIN_WORK,
)
from polydyn.parametric.regions import parse_region
from polydyn.testing import check_kernel, region_points

SMALL_TILE = 8  # tiles of 8 put every region boundary at sizes the reference runs quickly
HI = {"matmul": 19, "batched_matmul": 17, "conv2d": 17, "jacobi2d": 14, "softmax": 20,
      "layernorm": 20, "bias_relu": 24, "maxpool": 20, "transpose": 26}
LIMIT = {"conv2d": 3, "batched_matmul": 4}
# Variants whose regions start past HI in some sym: their points come from this box (its
# largest bound replaces HI)
BOXES = {("conv2d", "channels"): "B <= 2 and C <= 65 and F <= 33 and H <= 5 and W <= 17"}

_KERNELS: dict[str, pd.Kernel] = {}


def kernel(name: str) -> pd.Kernel:
    if name not in _KERNELS:
        _KERNELS[name] = pd.compile(load(name)[0], max_tile=SMALL_TILE)
    return _KERNELS[name]


@pytest.mark.parametrize("name", list(ALL))
def test_variant_agrees_at_region_edges(name: str) -> None:
    """Every variant at points of its region's edges (the kernel compiles at test time, not
    at collection: one test per kernel, each variant named in its failure)."""
    k = kernel(name)
    for index, variant in enumerate(k.variants):
        region, hi = variant.region, HI.get(name, 16)
        if (name, variant.name) in BOXES:
            box = BOXES[name, variant.name]
            region = region.intersect(parse_region(k.scop, box))
            hi = max(int(x) for x in re.findall(r"\d+", box))
        points = region_points(k.scop, region, hi=hi, limit=LIMIT.get(name, 6), seed=index)
        assert points, f"{name}: no test point in region {variant.region}"
        for sizes in points:
            check_kernel(k, sizes, seed=len(sizes), variant=index)
            # the dispatcher picks the first variant whose region holds the point
            chosen = k.select(**sizes)
            assert k.variants.index(chosen) <= index, (variant.name, sizes)


# The CPUs the register-tile tests pin (``Options.isa``, ``l2_bytes``): Zen 5's AVX-512
# (32 zmm, 1 MiB of L2) and Zen 3's AVX2 (16 ymm, 512 KiB); the tests hold on any machine.
TARGETS = {"avx512": {"isa": "avx512", "l2_bytes": 1 << 20},
           "avx2": {"isa": "avx2", "l2_bytes": 1 << 19}}


@functools.cache
def _matmul(isa: str = "avx512") -> pd.Kernel:
    """The bundled matmul at its default tile sizes (compiled once per target for these
    tests)."""
    return pd.compile(load("matmul")[0], **TARGETS[isa])


def _variant_source(k: pd.Kernel, name: str) -> str:
    start = k.source.index(f"/* variant {name}:")
    end = k.source.find("/* variant", start + 10)
    return k.source[start:end if end > 0 else None]


@pytest.mark.parametrize("name", ALL)
def test_every_variant_but_generic_can_be_dispatched(name: str) -> None:
    """The dispatcher runs the first variant whose region holds the sizes: a variant whose
    region lies within those before it would never run, so none is built. ``generic``
    closes the cover and is kept, as the forced-generic baseline."""
    variants = kernel(name).variants
    assert variants[-1].name == "generic"
    for k, v in enumerate(variants[:-1]):
        earlier = [u.region for u in variants[:k]]
        if earlier:
            covered = functools.reduce(lambda a, b: a.union(b), earlier)
            assert not v.region.subtract(covered).is_empty(), (name, v.name)


def test_conv_tiles_within_channels_are_not_built() -> None:
    """With the default tiles, conv's ``full`` and ``tiled`` (C >= 64, F >= 112) lie within
    ``channels`` (C >= 64, F >= 32) on CPUs: neither is built."""
    assert [v.name for v in _conv2d().variants] == [
        "channels", "vector64", "vector32", "vector16", "B=1", "small", "generic"]


def test_matmul_partition_and_specialized_code() -> None:
    k = _matmul()
    names = [v.name for v in k.variants]
    assert names == ["N=1", "skinny", "full", "tiled", "vector64", "vector32", "vector16",
                     "small", "generic"]
    # AVX2: register tiles of 6 x 2 ymm (16 f32 columns), narrow tiers of one ymm and xmm
    assert [v.name for v in _matmul("avx2").variants] == [
        "N=1", "skinny", "full", "tiled", "vector32", "vector16", "small", "generic"]
    assert re.search(r"float pd_acc\d+\[6\]\[16\]", _variant_source(_matmul("avx2"), "full"))
    full = _variant_source(k, "full")
    bounds = " ".join(re.findall(r"for \(int64_t c\d+ = [^;]*;[^;]*;", full))
    assert "pd_min" not in bounds and "pd_max" not in bounds, bounds
    n1 = _variant_source(k, "N=1")
    assert "const int64_t i = 0;" in n1  # the loop over N is gone
    # where the sum is not split among the threads (test_split_sums): strips of B's columns
    # for the threads, the reduction over k inside each strip in steps of 8 (a constant
    # count where K allows), the vector loop around the steps
    strips = n1.index("#pragma omp parallel for")
    steps = n1.index("pd_c2 += 8", strips)
    assert steps < n1.index("#pragma omp simd", steps) < n1.index("#pragma GCC unroll 8", steps)
    assert "pd_c5 <= 7;" in n1
    # C's cell held in a local over the 8 steps (in OpenMP's outlined function gcc, restrict
    # lost, had stored it after every step: half NumPy's speed at 1 x 1024 x 1024)
    assert re.search(r"float pd_cell\d+ = C\[\(i\) \* M \+ j\];", n1)
    assert not re.search(r"C\[\(i\) \* M \+ j\] = \(C\[", n1)
    # the last steps (K % 8, possibly none) load and store the cell only where they run
    assert re.search(r"if \(\(0\) < \(K % 8\)\)\s*\{\s*float pd_cell\d+ = C\[", n1)
    tiled = _variant_source(k, "tiled")
    # tile loops j, k (256) outside the row tiles (48: team regions' loops), B's tile
    # packed between them
    rows = re.search(r"pd_c2 = 0 \+ pd_t\d+ \* 48;", tiled)
    assert "c0 += 256" in tiled and rows and "#pragma omp simd" in tiled
    assert tiled.index("c1 += 256") < tiled.index("pd_pk") < rows.start()
    assert "pd_acc" in tiled  # accumulators promoted in full register tiles
    assert "pd_nr" in tiled and "pd_nv" in tiled  # and in partial ones
    assert k.select(N=1, M=64, K=64).name == "N=1"
    assert k.select(N=96, M=512, K=256).name == "full"
    assert k.select(N=257, M=512, K=300).name == "tiled"
    # with partial register tiles run as full ones, few rows or a short reduction still
    # run tiled; narrow rows of B (under three register vectors) do not
    assert k.select(N=5, M=256, K=128).name == "tiled"
    assert k.select(N=500, M=64, K=500).name == "small"
    # one row tile and two column tiles or more: tiled, B read in place
    assert [k.select(N=n, M=257, K=9).name for n in (2, 48)] == ["skinny"] * 2
    # a few row tiles whose columns and reduction are under 1024: untiled, unless made of
    # whole tiles alone
    assert [k.select(N=n, M=257, K=9).name for n in (49, 256, 257)] == \
        ["small", "small", "tiled"]
    assert k.select(N=128, M=1023, K=1023).name == "small"
    assert k.select(N=128, M=1024, K=768).name == "tiled"
    assert k.select(N=128, M=768, K=1024).name == "tiled"
    assert k.select(N=192, M=768, K=768).name == "full"
    skinny = _variant_source(k, "skinny")
    assert "pd_acc" in skinny and "pd_pk" not in skinny


@pytest.mark.parametrize("isa", list(TARGETS))
@pytest.mark.parametrize("shape", [(96, 512, 512), (97, 1024, 256), (100, 512, 1324),
                                   (49, 257, 1280), (101, 289, 1324), (53, 263, 1537),
                                   (95, 511, 1281), (96, 256, 1152), (61, 131, 1295),
                                   (300, 131, 271)])
def test_matmul_packed_tiles_against_float64(isa, shape) -> None:
    """Cache tiles read B from a padded local copy (power-of-two leading dimensions here);
    partial register tiles (rows of N % 6, columns of M % 32, AVX2: M % 16) run as full
    ones over clamped rows and the copy's zero-filled columns. Against a float64 product."""
    n, m, kk = shape
    k = _matmul(isa)
    assert "pd_pk" in _variant_source(k, k.select(N=n, M=m, K=kk).name)
    rng = np.random.default_rng(n + m + kk)
    A = rng.standard_normal((n, kk)).astype(np.float32)
    B = rng.standard_normal((kk, m)).astype(np.float32)
    want = A.astype(np.float64) @ B.astype(np.float64)
    for variant in (k.select(N=n, M=m, K=kk).name, "generic"):
        got = k.run_variant(variant, A, B)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(kk))


@pytest.mark.parametrize(("isa", "m", "tier"), [
    *(("avx512", m, tier) for m, tier in [(3, "small"), (4, "vector16"), (7, "vector16"),
                                          (8, "vector32"), (15, "vector32"), (16, "vector64"),
                                          (17, "vector64"), (31, "vector64"), (32, "small")]),
    *(("avx2", m, tier) for m, tier in [(3, "small"), (4, "vector16"), (7, "vector16"),
                                        (8, "vector32"), (15, "vector32"), (16, "small")])])
def test_matmul_narrow_register_tiers(isa, m, tier) -> None:
    """Rows of B shorter than two vector registers get 8-row register tiles of one zmm, ymm
    or xmm register (AVX2: ymm or xmm): the partial vector moved down to end at the row's
    end, partial rows clamped (fewer rows than a tile: N = 2, 7), against float64 at the
    tiers' edges."""
    k = _matmul(isa)
    if tier != "small":
        lanes = int(tier[len("vector"):]) // 4
        assert re.search(rf"float pd_acc\d+\[8\]\[{lanes}\]", _variant_source(k, tier))
    for n in (2, 7, 8, 9, 17, 31):
        for depth in (1, 5, 33):
            assert k.select(N=n, M=m, K=depth).name == tier
            rng = np.random.default_rng(n * 1000 + m * 10 + depth)
            A = rng.standard_normal((n, depth)).astype(np.float32)
            B = rng.standard_normal((depth, m)).astype(np.float32)
            want = A.astype(np.float64) @ B.astype(np.float64)
            for variant in (tier, "generic"):
                np.testing.assert_allclose(k.run_variant(variant, A, B), want, rtol=1e-4,
                                           atol=1e-4 * np.sqrt(depth))
            check_kernel(k, {"N": n, "M": m, "K": depth}, seed=n + m + depth)


@pytest.mark.parametrize("m", [33, 47, 48, 49, 64, 65, 80, 81, 96, 97, 100, 129])
def test_partial_vector_at_half_width(m) -> None:
    """A partial vector of a two-zmm register tile that is at most one zmm long (M % 32 in
    1-16) runs on a tile of one zmm (16 lanes), chosen at run time beside the two-zmm one;
    every variant against float64 on both sides of the half (M % 32 = 16, 17), with rows
    and depths that leave partial row tiles too."""
    k = _matmul()
    for name in ("small", "tiled", "generic"):
        source = _variant_source(k, name)
        assert re.search(r"float pd_acc\d+\[6\]\[16\]", source), name
        assert re.search(r"float pd_acc\d+\[6\]\[32\]", source), name
    rng = np.random.default_rng(m)
    for n, depth in ((7, 5), (50, 33)):
        A = rng.standard_normal((n, depth)).astype(np.float32)
        B = rng.standard_normal((depth, m)).astype(np.float32)
        want = A.astype(np.float64) @ B.astype(np.float64)
        point = parse_region(k.scop, f"N = {n} and M = {m} and K = {depth}")
        for v in k.variants:
            if not point.is_subset(v.region):
                continue
            np.testing.assert_allclose(k.run_variant(v.name, A, B), want, rtol=1e-4,
                                       atol=1e-4 * np.sqrt(depth), err_msg=v.name)


def test_packed_tiles_copied_by_every_thread() -> None:
    """Where the threads split a cache tile's row tiles, one parallel region opens at the
    pack: every thread copies B's tile into a buffer of its own (reading a tile another
    core copied cost 4-6% of a 2-thread 1024^3 matmul), no ``parallel for`` shares out the
    copy, and the loops below share out the row tiles without forks of their own (a
    barrier after each, as the end of its own region had)."""
    k = _matmul()
    for name in ("full", "tiled", "generic"):
        source = _variant_source(k, name)
        lines = [line.strip() for line in source.splitlines()]
        decls = [i for i, line in enumerate(lines) if re.match(r"float pd_pk\d+_s\[", line)]
        assert decls, name
        for i in decls:
            assert lines[i - 1] == "{" and lines[i - 2] == \
                f"#pragma omp parallel if((N) * (M) * (K) >= {PACKED_PARALLEL_MIN_WORK})", \
                (name, lines[i - 2])
        copies = [i for i, line in enumerate(lines) if line.startswith("for (int64_t pd_q0")]
        assert copies and all("omp" not in lines[i - 1] for i in copies), name
        assert "#pragma omp barrier" in source, name


Kt, Nt, Mt = pd.sym("K N M")


@pd.operator
def _gradient(X: pd.f32[Kt, Nt], G: pd.f32[Kt, Mt], W: pd.out(pd.f32[Nt, Mt])):
    """A weight's gradient X.T @ G, the sum innermost: X is the register tiles' rows
    operand, read down its columns."""
    for i in range(Nt):
        for j in range(Mt):
            W[i, j] = 0.0
            for k in range(Kt):
                W[i, j] += X[k, i] * G[k, j]


def test_rows_operand_read_down_its_columns_is_packed() -> None:
    """``X[k, i]`` in a register tile: each reduction step reads the tile's rows from one
    line of X, a line per step, so the cache tiles copy the rows of each row of register
    tiles into one run per step (6 cells, unpadded; a partial row of tiles' as many as it
    has), and the tiles read the copy. Every variant against float64 at the cache tiles'
    edges (48 rows, 256 columns and steps, +-1) and partial register tiles (rows % 6)."""
    k = pd.compile(_gradient)
    for name in ("full", "tiled", "generic"):
        source = _variant_source(k, name)
        assert re.search(r"pd_pk\d+\[pd_q0 \* 6 \+ pd_q1 \* 1\] = X\[", source), name
        assert not re.search(r"\bX\[\(k\) \* N \+ i\]", source.split("pd_acc", 1)[1]), name
    rng = np.random.default_rng(5)
    for n, m, depth in ((47, 257, 255), (49, 96, 257), (96, 256, 256), (53, 300, 513),
                        (7, 129, 1)):
        X = rng.standard_normal((depth, n)).astype(np.float32)
        G = rng.standard_normal((depth, m)).astype(np.float32)
        want = X.T.astype(np.float64) @ G.astype(np.float64)
        point = parse_region(k.scop, f"N = {n} and M = {m} and K = {depth}")
        ran = []
        for v in k.variants:
            if point.is_subset(v.region):
                ran.append(v.name)
                np.testing.assert_allclose(k.run_variant(v.name, X, G), want, rtol=1e-4,
                                           atol=1e-4 * np.sqrt(depth), err_msg=v.name)
        assert "generic" in ran and len(ran) > 1, (n, m, depth, ran)


def test_packed_tiles_keep_accumulators_in_registers(tmp_path) -> None:
    """A pack inside a parallel loop (batched matmul's batch loop) puts its buffer in the
    function that holds the register tiles; read as a local array there, gcc kept the
    accumulators in memory (a stack operand on every FMA; 8 x 256^3 ran at 45% of
    1 x 256^3 per thread). Through a restrict pointer it keeps them in registers."""
    import subprocess

    from polydyn.options import Options

    k = pd.compile(load("batched_matmul")[0])
    assert re.search(r"float \*restrict pd_pk\d+ = pd_pk\d+_s;", _variant_source(k, "full"))
    src = tmp_path / "bmm.c"
    src.write_text(k.source)
    options = Options()
    asm = tmp_path / "bmm.s"
    subprocess.run([options.cc, *options.all_cflags, "-S", str(src), "-o", str(asm)],
                   check=True)
    fmas = [line for line in asm.read_text().splitlines() if "vfmadd" in line]
    if not fmas:
        pytest.skip("no FMA instructions on this target")
    assert not [line for line in fmas if "(%rsp)" in line], "accumulators in memory"


def test_explain_names_the_variant_and_the_skipped_ones() -> None:
    k = _matmul()
    text = k.explain(N=1000, M=3, K=64)
    assert "runs small" in text and "skips N=1" in text and "skips full" in text


def test_user_regions_with_a_hole_are_refused() -> None:
    op = load("matmul")[0]
    with pytest.raises(pd.CompileError, match=r"do not cover.*N=") as info:
        pd.compile(op, variants=[("N >= 64", None), ("N <= 16", None)])
    assert "uncovered" in str(info.value)


def test_user_regions_cover_and_run() -> None:
    op = load("matmul")[0]
    k = pd.compile(op, variants=[("N >= 16", None), ("N < 16", None)])
    assert [v.region.is_empty() for v in k.variants] == [False, False]
    for n in (1, 15, 16, 17):
        check_kernel(k, {"N": n, "M": 9, "K": 5})


def test_dispatch_agrees_with_forced_generic() -> None:
    k = kernel("matmul")
    rng = np.random.default_rng(3)
    A = rng.standard_normal((24, 16), dtype=np.float32)
    B = rng.standard_normal((16, 32), dtype=np.float32)
    np.testing.assert_allclose(k(A, B), k.run_variant("generic", A, B), rtol=1e-5, atol=1e-5)


N, M = pd.sym("N M")


@pd.operator
def shifted_reduction(A: pd.f32[M, M + 1], B: pd.inout(pd.f32[N, M + 1])):
    # the register tile's target subscript is `k + 1`: accumulators are indexed by the
    # iterators' offsets in the tile, not by the subscripts (a fuzzer finding)
    for i in range(N):
        for j in range(M):
            for k in range(M):
                B[i, k + 1] += A[j, k] * 0.5


def test_register_tile_with_offset_subscript() -> None:
    k = pd.compile(shifted_reduction, max_tile=4)
    assert "pd_acc" in k.source
    for index in range(len(k.variants)):
        for sizes in region_points(k.scop, k.variants[index].region, hi=14, limit=4,
                                   seed=index):
            check_kernel(k, sizes, variant=index)


@pytest.mark.parametrize("name", ["matmul", "batched_matmul", "conv2d"])
def test_no_nested_parallel_regions(name) -> None:
    """Where an inner loop may take the threads, one team region shares out either the
    outer loop or the loops inside it, rather than nesting parallel constructs (libgomp
    creates new threads for each nested team): no `omp parallel` lies inside the loop of
    another one, and the team regions are there."""
    source = pd.compile(load(name)[0]).source
    assert "pd_team_size()" in source
    depth = 0
    open_at: list[int] = []  # brace depth of the loop body of each enclosing parallel loop
    pending = False
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("#pragma omp parallel"):
            assert not open_at, f"nested parallel construct in {name}:\n{line}"
            pending = True
        for ch in text:
            if ch == "{":
                depth += 1
                if pending:
                    open_at.append(depth)
                    pending = False
            elif ch == "}":
                if open_at and open_at[-1] == depth:
                    open_at.pop()
                depth -= 1
    assert depth == 0 and "omp parallel" in source


@pytest.mark.parametrize("n", [1, 5, 6, 7, 47, 48, 49, 97, 150])
def test_matmul_team_regions(n) -> None:
    """The tiled matmul's team regions against float64: one row tile (its register-tile
    loops share out their iterations, a barrier after each; in ``skinny``, unpacked, the
    column tiles), several (the row tiles shared out), with partial register and cache
    tiles in both; the dispatched variant and ``generic``. K x M is large enough that even
    one row takes the threads around register tiles (``TILED_PARALLEL_MIN_WORK``)."""
    k = _matmul()
    depth, m = 1100, 3850  # partial k and column tiles, a partial vector (3850 = 120 x 32 + 10)
    assert depth * m >= TILED_PARALLEL_MIN_WORK
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, depth)).astype(np.float32)
    B = rng.standard_normal((depth, m)).astype(np.float32)
    for variant in (k.select(N=n, M=m, K=depth).name, "generic"):
        got = k.run_variant(variant, A, B)
        np.testing.assert_allclose(got, A.astype(np.float64) @ B.astype(np.float64),
                                   rtol=1e-4, atol=1e-4 * np.sqrt(depth))


def test_threads_around_register_tiles_need_more_work() -> None:
    """Loops around register tiles take the threads from TILED_PARALLEL_MIN_WORK
    multiply-adds on (a 64^3 matmul ran 1.7x faster on one thread than on two), the region
    at a pack (no fork per tile) from PACKED_PARALLEL_MIN_WORK; other loops (matmul's
    C = 0, bias + relu) from PARALLEL_MIN_WORK instances."""
    matmul = _matmul().source
    tiled, plain = f">= {TILED_PARALLEL_MIN_WORK}", f">= {PARALLEL_MIN_WORK}"
    packed = f"omp parallel if((N) * (M) * (K) >= {PACKED_PARALLEL_MIN_WORK})"
    seen = [0, 0, 0]
    for line in matmul.splitlines():
        if line.strip() == f"#pragma {packed}":
            seen[2] += 1
        elif "omp parallel" in line and "(N) * (M) * (K)" in line:
            assert tiled in line and plain not in line, line
            seen[0] += 1
        elif "omp parallel" in line and "(N) * (M) >=" in line:
            assert plain in line, line
            seen[1] += 1
    assert min(seen) > 0, seen
    assert tiled not in pd.compile(load("bias_relu")[0]).source
    # a batch loop, whose iterations share no data, from SEPARATE_PARALLEL_MIN_WORK (8 x
    # 64^3 ran 1.4x faster on two threads than on one, 32 x 32^3 1.8x); the loops inside
    # one product keep TILED_PARALLEL_MIN_WORK
    assert not [line for line in matmul.splitlines()
                if f">= {SEPARATE_PARALLEL_MIN_WORK} " in line and packed not in line]
    batched = pd.compile(load("batched_matmul")[0]).source
    lines = [line for line in batched.splitlines() if "omp parallel" in line and "(K)" in line]
    batch = [line for line in lines if "(B) * (N) * (M) * (K)" in line]
    assert batch and all(f">= {SEPARATE_PARALLEL_MIN_WORK} " in line for line in batch)
    assert all(tiled in line for line in lines if line not in batch)


@pytest.mark.parametrize("threads", [3, 4])
@pytest.mark.parametrize("n", [97, 241, 300])
def test_matmul_team_tails(threads, n) -> None:
    """Full row tiles that do not divide among the threads (2, 5 and 6 of them on 3 and 4
    threads): the threads share out whole tiles, then all of them run each remaining tile,
    sharing out its register tiles (a thread that skipped one would leave rows unwritten,
    or wait at a barrier the others never reach); against float64, the dispatched variant
    and ``generic``."""
    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    k = _matmul()
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, 300)).astype(np.float32)
    B = rng.standard_normal((300, 289)).astype(np.float32)
    gomp.omp_set_num_threads(threads)
    try:
        for variant in (k.select(N=n, M=289, K=300).name, "generic"):
            got = k.run_variant(variant, A, B)
            np.testing.assert_allclose(got, A.astype(np.float64) @ B.astype(np.float64),
                                       rtol=1e-4, atol=1e-4 * np.sqrt(300))
    finally:
        gomp.omp_set_num_threads(before)


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("batch", [1, 2, 3, 5])
def test_batched_team_tails(threads, batch) -> None:
    """A batch loop around packed cache tiles, as a team region: the threads share out
    whole batches while every thread has one, then all of them run each remaining batch
    (its tile loops in every thread, each packing its own copy) and share out its row
    tiles. Batched matmul and a batched linear layer (one weight for every batch), their
    ``tiled`` variants forced, against float64."""
    from tests import phrasings as ph

    gomp = ctypes.CDLL("libgomp.so.1")
    before = gomp.omp_get_max_threads()
    rng = np.random.default_rng(batch)
    n, depth, m = 97, 300, 289  # partial row, reduction and column tiles
    X = rng.standard_normal((batch, n, depth)).astype(np.float32)
    Bm = rng.standard_normal((batch, depth, m)).astype(np.float32)
    W = rng.standard_normal((depth, m)).astype(np.float32)
    bias = rng.standard_normal(m).astype(np.float32)
    X64 = X.astype(np.float64)
    cases = [(pd.compile(load("batched_matmul")[0]), (X, Bm), X64 @ Bm.astype(np.float64)),
             (pd.compile(ph.batched_linear), (X, W, bias), X64 @ W.astype(np.float64) + bias)]
    gomp.omp_set_num_threads(threads)
    try:
        for k, args, want in cases:
            np.testing.assert_allclose(k.run_variant("tiled", *args), want, rtol=1e-4,
                                       atol=1e-4 * np.sqrt(depth), err_msg=k.scop.name)
    finally:
        gomp.omp_set_num_threads(before)


def test_one_batch_of_long_products_runs_tiled() -> None:
    """At one batch, batched matmul runs its untiled ``B=1`` variant while the columns and
    the reduction stay within ``BATCH_ONE_UNTILED_MAX``, its tiled ones past it (their
    batch loop a team region); conv2d's ``B=1`` (no packed band) keeps every size."""
    from polydyn.parametric.regions import BATCH_ONE_UNTILED_MAX as MOST

    k = pd.compile(load("batched_matmul")[0])
    assert k.select(B=1, N=512, K=MOST, M=MOST).name == "B=1"
    assert k.select(B=1, N=512, K=MOST + 1, M=768).name == "tiled"
    assert k.select(B=1, N=512, K=768, M=MOST + 1).name == "tiled"
    assert k.select(B=1, N=8, K=768, M=3072).name == "skinny"
    assert k.select(B=1, N=512, K=4096, M=64).name == "B=1"  # too few columns to tile
    assert k.select(B=2, N=512, K=768, M=768).name == "tiled"
    conv = pd.compile(load("conv2d")[0])
    assert conv.select(B=1, C=16, H=56, W=56, F=2048, KH=3, KW=3).name == "B=1"


@functools.cache
def _conv2d(isa: str = "avx512") -> pd.Kernel:
    return pd.compile(load("conv2d")[0], **TARGETS[isa])


def _check_conv(k: pd.Kernel, b: int, c: int, f: int, h: int, w: int, seed: int,
                variants: tuple[str, ...] = ()) -> None:
    """A 3 x 3 conv of random inputs against float64: the dispatched call, or each of
    ``variants`` (the name ``select`` picks for these sizes where given as "")."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((b, c, h, w)).astype(np.float32)
    Wt = rng.standard_normal((f, c, 3, 3)).astype(np.float32)
    windows = np.lib.stride_tricks.sliding_window_view(X.astype(np.float64), (3, 3),
                                                       axis=(2, 3))
    want = np.einsum("bcyxij,fcij->bfyx", windows, Wt.astype(np.float64))
    sizes = {"B": b, "C": c, "F": f, "H": h, "W": w, "KH": 3, "KW": 3}
    runs = [k(X, Wt)] if not variants else \
        [k.run_variant(v or k.select(**sizes).name, X, Wt) for v in variants]
    for got in runs:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(c * 9))


@pytest.mark.parametrize(("isa", "ow", "tier"), [
    *(("avx512", ow, tier) for ow, tier in [(4, "vector16"), (7, "vector16"), (8, "vector32"),
                                            (15, "vector32"), (16, "vector64"),
                                            (26, "vector64"), (31, "vector64"),
                                            (32, "small")]),
    *(("avx2", ow, tier) for ow, tier in [(4, "vector16"), (7, "vector16"), (8, "vector32"),
                                          (15, "vector32"), (16, "small")])])
def test_conv_narrow_register_tiers(isa, ow, tier) -> None:
    """Output rows too short for register tiles of two vector registers get tiles of one
    zmm, ymm or xmm register, 16 rows (AVX2: ymm or xmm, 12 rows), partial vectors shifted
    to end at the row's end, partial rows clamped; against float64 at the tiers' edges,
    with output channels around the tile's rows."""
    k = _conv2d(isa)
    rows = 16 if isa == "avx512" else 12
    for f in (rows - 1, rows, 2 * rows + 1):
        b, c, h = 2, 5, 4
        sizes = {"B": b, "C": c, "F": f, "H": h, "W": ow + 2, "KH": 3, "KW": 3}
        assert k.select(**sizes).name == tier
        if tier != "small":
            shape = int(tier[len("vector"):]) // 4
            assert f"[{rows}][{shape}]" in _variant_source(k, tier)  # the accumulators
        _check_conv(k, b, c, f, h, ow + 2, seed=ow * 100 + f)


@pytest.mark.parametrize(("b", "oh", "ow"), [(2, 32, 16), (1, 64, 31), (2, 64, 8), (4, 64, 4),
                                          (1, 8, 16)])
def test_conv_repacked_weights(b, oh, ow) -> None:
    """16-row register tiles read the weights from a copy with the output channels
    innermost (one pointer, constant offsets), made where a weight is used at least 1024
    times (B x OH x OW); rows past F read the copy's zero padding. Against float64, with F
    around the tile's 16 rows; at (1, 8, 16) the weights are read in place."""
    k = _conv2d()
    c = 3
    for f in (16, 17, 33):
        sizes = {"B": b, "C": c, "F": f, "H": oh + 2, "W": ow + 2, "KH": 3, "KW": 3}
        tier = k.select(**sizes).name
        assert tier.startswith("vector")
        assert "pd_rp1[" in _variant_source(k, tier)
        _check_conv(k, b, c, f, oh + 2, ow + 2, seed=f * ow)


def test_conv_channels_innermost_in_register_tiles() -> None:
    """In every register tile of conv, the window loops run outside the input channels'
    (a reordered sum: the channel loop has the long count and constant strides), and the
    results agree with float64 at sizes that take the full and the partial tiles."""
    k = _conv2d()
    tiles = 0
    for variant in k.variants:
        source = _variant_source(k, variant.name)
        for tile in re.finditer(r"\w+ pd_acc\d+\[\d+\]\[\d+\];", source):
            loops = re.findall(r"for \(int64_t (pd_c\d+) = 0; \1 (<=?) ([^;]+);",
                               source[tile.end():])[:3]
            assert [bound for _, _, bound in loops[:2]] == ["KH", "KW"], loops
            assert "K" not in loops[2][2], loops  # C, or a channel tile's last point
            tiles += 1
    assert tiles >= len(k.variants)
    for b, c, f, h, w in ((1, 7, 13, 5, 40), (2, 65, 50, 4, 36), (1, 3, 6, 3, 34)):
        _check_conv(k, b, c, f, h, w, seed=c, variants=("", "generic"))


@pytest.mark.parametrize(("isa", "b", "c", "h"), [
    ("avx512", 1, 5, 34), ("avx512", 2, 5, 4), ("avx512", 2, 64, 4), ("avx2", 2, 5, 4),
    ("avx2", 2, 64, 4)])
def test_conv_deep_register_tiles(isa, b, c, h) -> None:
    """Conv's wide register tiles have as many rows of output channels as the registers
    hold (``B=1`` and ``generic``): 14 x 2 zmm on AVX-512, 6 x 2 ymm on AVX2; against
    float64 with F around one and two tiles, the weights read from the repacked copy (B x
    OH x OW >= 1024) and in place, and F past the rows of a cache tile (8 register tiles)
    with 64 channels."""
    k = _conv2d(isa)
    rows, width = (14, 32) if isa == "avx512" else (6, 16)
    for name in ("B=1", "generic"):
        assert re.search(rf"pd_acc\d+\[{rows}\]\[{width}\]", _variant_source(k, name)), name
    for f in (rows - 1, rows, rows + 1, 2 * rows + 1, *((8 * rows + 1,) if c == 64 else ())):
        _check_conv(k, b, c, f, h, 36, seed=f + h, variants=("", "generic"))


@pytest.mark.parametrize("isa", list(TARGETS))
def test_conv_channel_register_tiles(isa) -> None:
    """With 64 input channels or more and a vector's worth of output channels, conv's
    register tiles run transposed (``channels``): the vector along the output channels (the
    weights from a copy with them innermost, zero past F), a row per output column (rows
    past the image clamped). Against float64 at the region's edges (C = 63 / 64, F = one
    vector -1 / +0), partial vectors (F one over a vector, two), output widths around the
    rows and 1, and small images that would otherwise take the narrow tiers."""
    k = _conv2d(isa)
    rows, lanes = (14, 32) if isa == "avx512" else (6, 16)
    source = _variant_source(k, "channels")
    assert re.search(rf"pd_acc\d+\[{rows}\]\[{lanes}\]", source)
    assert "pd_rp1[" in source
    edge = {"B": 1, "H": 3, "W": rows + 2, "KH": 3, "KW": 3}
    assert k.select(C=64, F=lanes, **edge).name == "channels"
    assert k.select(C=63, F=lanes, **edge).name != "channels"
    assert k.select(C=64, F=lanes - 1, **edge).name != "channels"
    for b, c, f, h, w in ((1, 64, lanes, 3, rows + 2), (2, 64, lanes + 1, 4, rows + 3),
                          (1, 65, 2 * lanes + 3, 3, rows + 1), (1, 64, lanes, 5, 3),
                          (2, 70, 3 * lanes - 1, 3, 2 * rows + 1), (1, 64, lanes, 10, 12)):
        assert k.select(B=b, C=c, F=f, H=h, W=w, KH=3, KW=3).name == "channels"
        _check_conv(k, b, c, f, h, w, seed=f + w, variants=("channels", "generic"))


def test_conv_weight_copy_kept_between_calls() -> None:
    """The channels tiles' weight copy (16 x 16 local tiles, zeros past F) lives in a buffer
    kept from one call to the next: a larger call after a smaller one gets a new buffer, a
    smaller one after it reuses the larger, its rows' padding written again; partial tiles
    of the input channels (C % 16) and of F. Against float64."""
    k = _conv2d()
    for b, c, f, h, w in ((1, 64, 33, 3, 16), (1, 150, 95, 4, 17), (1, 64, 33, 3, 16),
                          (2, 81, 40, 3, 9), (1, 150, 95, 4, 17)):
        _check_conv(k, b, c, f, h, w, seed=c + f, variants=("channels",))


def test_jacobi2d_wavefront_tiles() -> None:
    """Time tiling: isl's skewed band tiled 5 x 32 on (t, t + i), the tiles run in
    wavefronts shared out among threads, the double-buffered steps (A -> B, B -> A)
    distributed below (each row a vector loop); from two time tiles on (T >= 10)."""
    op, numpy_impl = load("jacobi2d")
    k = pd.compile(op)
    assert [v.name for v in k.variants] == ["wavefront", "generic"]
    assert [k.select(N=500, T=t).name for t in (9, 10)] == ["generic", "wavefront"]
    assert k.select(N=3, T=10).name == "wavefront"
    wave = _variant_source(k, "wavefront")
    # B's edges copied once on threads (rows 0 and N - 1 as vector loops), then the
    # wavefronts in order, the tiles of one wavefront on threads, each step's rows as a
    # vector loop inside a tile
    first_loop = wave.index("for (int64_t pd_c0 = 0; pd_c0 <= ")
    assert wave.count("#pragma omp parallel for") == 2
    assert first_loop < wave.rindex("#pragma omp parallel for")
    assert wave[first_loop:].count("#pragma omp simd") == 2
    assert "A[(i) * N + j] = B[(i) * N + j]" not in wave  # no copy back
    rng = np.random.default_rng(5)
    for n, t in [(70, 23), (37, 10), (131, 12)]:
        a = rng.standard_normal((n, n)).astype(np.float32)
        tiled, plain = a.copy(), a.copy()
        k.run_variant("wavefront", tiled, T=t)
        k.run_variant("generic", plain, T=t)
        # the same operations on the same values, in another order of the points
        assert np.array_equal(tiled, plain), (n, t)
        np.testing.assert_allclose(tiled, numpy_impl(a.astype(np.float64), T=t),
                                   rtol=1e-5, atol=1e-5)


def test_temporary_placed_like_its_partner() -> None:
    """jacobi-2d's temporary B is allocated at the offset within a page that A has (no 4K
    aliasing between loads of one and stores to the other); every variant gives the same
    result wherever A starts in its page, in both variants."""
    from polydyn.codegen_c.emit import alloc_partner

    op, numpy_impl = load("jacobi2d")
    assert alloc_partner(op.scop, op.scop.array("B")) == "A"
    k = pd.compile(op)
    assert k.source.count("pd_alloc_like(sizeof(float) * (size_t)(N) * (size_t)(N), 0, A, "
                          "&pd_tb_B)") == 2
    rng = np.random.default_rng(7)
    n, t = 41, 11
    a = rng.standard_normal((n, n)).astype(np.float32)
    want = numpy_impl(a.astype(np.float64), T=t)
    pool = np.zeros(n * n + 2048, np.float32)  # A's start moves through a page
    first = (-pool.ctypes.data // 4) % 1024
    for shift in (0, 1, 15, 16, 500, 1023):
        view = pool[first + shift:first + shift + n * n].reshape(n, n)
        assert view.ctypes.data % 4096 == 4 * shift
        for variant in ("wavefront", "generic"):
            view[...] = a
            k.run_variant(variant, view, T=t)
            np.testing.assert_allclose(view, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{variant} with A at {4 * shift}")


def test_wavefront_only_for_time_iterated_stencils() -> None:
    """Operators whose isl schedule has a parallel loop get no wavefront plan; the OpenCL
    partition gets no wavefront region."""
    from polydyn.parametric.regions import partition
    from polydyn.schedule.auto import isl_schedule, scheduler_schedule
    from polydyn.schedule.wavefront import wavefront_plan
    from polydyn.scop.deps import compute_deps

    def own(scop, deps):
        return scheduler_schedule(scop, deps, scop.context)

    for name in ("matmul", "conv2d", "softmax", "transpose"):
        scop = load(name)[0].scop
        assert wavefront_plan(scop, own(scop, compute_deps(scop))) is None, name
    scop = load("jacobi2d")[0].scop
    deps = compute_deps(scop)
    wave = wavefront_plan(scop, own(scop, deps))
    assert wave is not None and wave.sizes == (5, 32)
    base = isl_schedule(scop, deps, scop.context)
    assert "wavefront" not in [p.name for p in partition(scop, base, cpu=False, wave=wave)]
    assert "wavefront" in [p.name for p in partition(scop, base, cpu=True, wave=wave)]


def test_cpu_target_sizes_cache_tiles_from_its_l2() -> None:
    """Cache tiles fill half of the target's L2: matmul's 48 x 256 x 256 f32 tiles (360
    KiB) fit half of 1 MiB; with 512 KiB one of the 256s is halved."""
    def sizes(l2: int) -> str:
        k = pd.compile(load("matmul")[0], isa="avx2", l2_bytes=l2)
        assert f"Tiles planned for: avx2, 16 vector registers of 32 bytes, {l2 // 1024} KiB " \
            "of L2." in k.header
        return re.search(r"tiled ([0-9x]+)", k.variants[-1].summary).group(1)

    assert sizes(1 << 20) == "48x256x256"
    assert sizes(1 << 19) == "48x128x256"


@pytest.mark.parametrize(("isa", "l2"), [("avx3", 1 << 20), ("avx2", 1000)])
def test_cpu_target_refuses_unknown_settings(isa, l2) -> None:
    from polydyn.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="POLYDYN_"):
        pd.compile(load("bias_relu")[0], isa=isa, l2_bytes=l2)


@pytest.mark.parametrize(("isa", "name"), [
    ("sse", "matmul"), ("neon", "matmul"),
    pytest.param("sse", "conv2d", marks=pytest.mark.slow),
    pytest.param("neon", "conv2d", marks=pytest.mark.slow)])
def test_other_plans_agree_at_region_edges(isa, name) -> None:
    """The plans of the instruction sets no machine here has (16-byte vectors: SSE with 16
    registers, NEON with 32) compile to correct code too: every variant against the
    reference at points of its region (tiles capped at 8, as in the sweep above)."""
    k = pd.compile(load(name)[0], max_tile=SMALL_TILE, isa=isa, l2_bytes=1 << 18)
    assert f"Tiles planned for: {isa}," in k.header
    for index, variant in enumerate(k.variants):
        for sizes in region_points(k.scop, variant.region, hi=HI.get(name, 16),
                                   limit=LIMIT.get(name, 3), seed=index):
            check_kernel(k, sizes, seed=len(sizes), variant=index)


Bn, Cn, Hn, Wn = pd.sym("Bn Cn Hn Wn")


@pd.operator()
def _channel_scale(X: pd.f32[Bn, Cn, Hn, Wn], g: pd.f32[Cn], b: pd.f32[Cn],
                   Y: pd.out(pd.f32[Bn, Cn, Hn, Wn])):
    """Batch norm at inference: a scale and a shift per channel, read along no loop but c."""
    for i, c, h, w in pd.grid(Bn, Cn, Hn, Wn):
        Y[i, c, h, w] = X[i, c, h, w] * g[c] + b[c]


@pd.operator()
def _transposed(X: pd.f32[Hn, Wn], Y: pd.out(pd.f32[Wn, Hn])):
    for h, w in pd.grid(Hn, Wn):
        Y[w, h] = X[h, w] * 2.0


def test_cache_tiles_only_where_an_access_is_transposed() -> None:
    """A value per channel is not a transposed access (it does not move along the inner
    loop): the nest streams untiled. A transpose's read is, and gets cache tiles."""
    from polydyn.pipeline import generate

    def tiled(op: pd.Operator) -> bool:
        return any(v.summary.startswith("tiled") for v in generate(op, "c").scheduled)

    assert not tiled(_channel_scale)
    assert tiled(_transposed)
    k = pd.compile(_channel_scale)
    for sizes in ({"Bn": 0, "Cn": 3, "Hn": 2, "Wn": 2}, {"Bn": 2, "Cn": 5, "Hn": 7, "Wn": 33}):
        check_kernel(k, sizes)
