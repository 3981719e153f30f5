"""Loads under `a if c else b` (guarded loads) in the C target's copies of arrays.

A guarded load's access relation stands for every instance of its statement, the condition
false included: `B[k - 1, j] if k >= 1 else 0.0` reads `B[-1, j]` as far as isl knows. Code
that loads a box of an array computed from the access relations, instead of executing the
guarded loads, must keep to the array's elements: the packed copies of a register-tiled
band's vector operand (`codegen_c/tiles.py: pack`, boxes from `astgen._footprint_box`) copied
row -1 of B, and the whole box of an empty array. The user's phrasing that matters most is
the padded convolution written with guards, checked here at many shapes.

The packed copies are checked without a sanitizer: the input is placed against a page that
may not be read (before its first element or after its last), so a read outside it is a
segmentation fault of a worker process. The sweep under AddressSanitizer is marked slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import polydyn as pd
from polydyn import f32, out
from tests.fuzz.runner import check_operator
from tests.test_sanitize import _run_sanitized, libasan  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[1]

N, M, K = pd.sym("N M K")
C, F, H, W, KH, KW, P = pd.sym("C F H W KH KW P")


@pd.operator
def mm_shifted_rows(A: f32[N, K], B: f32[K, M], Cm: out(f32[N, M])):
    """B's rows shifted down by one: the packed box of `B[k - 1, j]` started at row -1."""
    for i in range(N):
        for j in range(M):
            Cm[i, j] = 0.0
            for k in range(K):
                Cm[i, j] += A[i, k] * (B[k - 1, j] if k >= 1 else 0.0)


@pd.operator
def mm_short_operand(A: f32[N, K], B: f32[K - 2, M], Cm: out(f32[N, M])):
    """B has two rows fewer than the reduction: empty at K = 2."""
    for i in range(N):
        for j in range(M):
            Cm[i, j] = 0.0
            for k in range(K):
                Cm[i, j] += A[i, k] * (B[k - 2, j] if k >= 2 else 1.0)


@pd.operator
def mm_next_column(A: f32[N, K], B: f32[K, M], Cm: out(f32[N, M])):
    """A read one column ahead, zero past its last column."""
    for i in range(N):
        for j in range(M):
            Cm[i, j] = 0.0
            for k in range(K):
                Cm[i, j] += (A[i, k + 1] if k + 1 < K else 0.0) * B[k, j]


@pd.operator
def mm_column_guard(A: f32[N, K], B: f32[K, M], Cm: out(f32[N, M])):
    """A guard on the vector's column `j` for a load that does not move with it: inside A at
    every instance (k >= 1 where k + j >= M), outside at columns past the last (M - 1)."""
    for i in range(N):
        for j in range(M):
            Cm[i, j] = 0.0
            for k in range(K):
                Cm[i, j] += (A[i, k - 1] if k + j >= M else 0.0) * B[k, j]


@pd.operator
def conv_same(X: f32[C, H, W], Wt: f32[F, C, 3, 3], Y: out(f32[F, H, W])):
    """A 3 x 3 convolution padded by one, the padding written as guards."""
    for f, h, w in pd.grid(F, H, W):
        Y[f, h, w] = 0.0
        for c, r, s in pd.grid(C, 3, 3):
            Y[f, h, w] += (X[c, h + r - 1, w + s - 1]
                           if 1 <= h + r <= H and 1 <= w + s <= W else 0.0) * Wt[f, c, r, s]


@pd.operator
def conv_row_guard(X: f32[C, H, W], Wt: f32[F, C, 3, 3], Y: out(f32[F, H, W])):
    """A guard on the rows' channel `f` for a load that does not move with it: inside X at
    every instance (h >= 1 where h + f >= F), outside at rows past the last (F - 1), which a
    16-row register tile with repacked weights ran unclamped."""
    for f, h, w in pd.grid(F, H, W):
        Y[f, h, w] = 0.0
        for c, r, s in pd.grid(C, 3, 3):
            Y[f, h, w] += (X[c, h - 1, w + s - 1] if h + f >= F and 1 <= w + s <= W
                           else 0.0) * Wt[f, c, r, s]


@pd.operator
def conv_padded(X: f32[C, H, W], Wt: f32[F, C, KH, KW],
                Y: out(f32[F, H + 2 * P - KH + 1, W + 2 * P - KW + 1])):
    """Any window, any padding P."""
    for f, h, w in pd.grid(F, H + 2 * P - KH + 1, W + 2 * P - KW + 1):
        Y[f, h, w] = 0.0
        for c, r, s in pd.grid(C, KH, KW):
            Y[f, h, w] += (X[c, h + r - P, w + s - P]
                           if P <= h + r < H + P and P <= w + s < W + P else 0.0) \
                * Wt[f, c, r, s]


@pd.operator
def conv1d_same(X: f32[C, W], Wt: f32[F, C, 3], Y: out(f32[F, W])):
    for f, w in pd.grid(F, W):
        Y[f, w] = 0.0
        for c, s in pd.grid(C, 3):
            Y[f, w] += Wt[f, c, s] * (X[c, w + s - 1] if 1 <= w + s <= W else 0.0)


# Sizes: empty arrays, single elements, tiles of 4 and 8 plus and minus one, the default
# tiles' regions (register tiles of 32 columns, 96 columns for packing, 64 input and 32 output
# channels for the transposed tiles).
MM_POINTS = [{"N": n, "M": m, "K": k} for n, m, k in [
    (0, 3, 3), (3, 0, 3), (3, 3, 2), (9, 9, 0), (9, 9, 1), (9, 9, 2), (1, 5, 5), (4, 4, 4),
    (5, 5, 5), (3, 3, 3), (5, 9, 9), (7, 17, 8), (9, 17, 9), (8, 7, 9), (3, 97, 2),
    (3, 97, 3), (7, 100, 9), (50, 97, 5), (2, 260, 2), (2, 260, 7), (5, 17, 2), (5, 33, 4)]]
CONV_POINTS = [{"C": c, "F": f, "H": h, "W": w} for c, f, h, w in [
    (0, 3, 5, 5), (2, 3, 0, 5), (2, 3, 5, 0), (2, 0, 3, 3), (2, 3, 1, 1), (1, 1, 2, 2),
    (3, 4, 4, 4), (2, 5, 5, 9), (3, 5, 3, 7), (2, 9, 3, 8), (3, 5, 3, 17), (2, 7, 2, 31),
    (2, 7, 2, 16), (1, 17, 60, 20), (64, 33, 2, 5), (65, 32, 1, 17), (64, 0, 3, 3)]]
PADDED_POINTS = [{"C": 2, "F": 3, "H": h, "W": w, "KH": kh, "KW": kw, "P": p}
                 for h, w, kh, kw, p in [(5, 7, 3, 3, 1), (4, 9, 5, 3, 2), (1, 1, 3, 3, 1),
                                         (0, 4, 1, 1, 0), (6, 5, 2, 4, 3), (3, 17, 3, 5, 2)]]
CONV1D_POINTS = [{"C": c, "F": f, "W": w} for c, f, w in [
    (0, 3, 5), (2, 3, 0), (3, 7, 1), (5, 9, 33), (70, 13, 17), (3, 8, 9)]]
OPERATORS = {
    "mm_shifted_rows": (mm_shifted_rows, MM_POINTS),
    "mm_short_operand": (mm_short_operand, MM_POINTS),
    "mm_next_column": (mm_next_column, MM_POINTS),
    "mm_column_guard": (mm_column_guard, MM_POINTS),
    "conv_same": (conv_same, CONV_POINTS),
    "conv_row_guard": (conv_row_guard, CONV_POINTS),
    "conv_padded": (conv_padded, PADDED_POINTS),
    "conv1d_same": (conv1d_same, CONV1D_POINTS),
}


def check_all(name: str, max_tile: int | None) -> dict:
    """Every variant of the operator (compiled with ``max_tile``, None: the default tiles)
    against the reference, at its points that lie in the variant's region and three more."""
    op, points = OPERATORS[name]
    kernel = pd.compile(op, max_tile=max_tile) if max_tile else pd.compile(op)
    return check_operator(op, kernel=kernel, hi=12, limit=3, seed=1, extra_points=points)


@pytest.mark.parametrize(("name", "max_tile"), [
    ("mm_shifted_rows", None), ("mm_short_operand", 4), ("conv_same", 4)])
def test_guarded_loads_every_variant(name, max_tile):
    stats = check_all(name, max_tile)
    assert stats["runs"] >= len(OPERATORS[name][1])


@pytest.mark.slow
@pytest.mark.parametrize("max_tile", [4, 8, None])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_guarded_loads_every_variant_sweep(name, max_tile):
    check_all(name, max_tile)


# Every input against a page that may not be read: before its first element, then after its
# last (an empty input: at the start of such a page). The copies of the packed operand and
# the register tiles' columns past their box, in every variant that holds the sizes, must
# read the inputs' elements only.
FENCED_SIZES = {
    "conv_row_guard": [(1, 17, 60, 20), (1, 13, 64, 17), (2, 3, 5, 5)],  # C, F, H, W
    **{name: [(5, 9, 9), (4, 4, 4), (9, 9, 2), (9, 9, 3), (7, 17, 8), (5, 17, 2), (2, 33, 3),
              (3, 97, 2), (7, 100, 9)]  # N, M, K
       for name in ("mm_shifted_rows", "mm_short_operand", "mm_column_guard")},
}
FENCED = textwrap.dedent('''
    import ctypes, mmap, sys
    import numpy as np
    import polydyn as pd
    from tests.test_guarded_loads import FENCED_SIZES, OPERATORS
    from polydyn.testing import call_args, make_inputs
    from polydyn.scop.interp import run_reference

    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    maps = []

    def fenced(values, at_end):
        """``values`` between two pages that may not be accessed, against the first
        (at_end False) or the last."""
        pages = -(-values.nbytes // PAGE)
        mm = mmap.mmap(-1, (pages + 2) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        for page in (0, pages + 1):
            assert libc.mprotect(base + page * PAGE, PAGE, 0) == 0
        maps.append(mm)
        offset = (pages + 1) * PAGE - values.nbytes if at_end else PAGE
        arr = np.frombuffer(mm, values.dtype, values.size, offset).reshape(values.shape)
        arr[...] = values
        return arr

    name, max_tile = sys.argv[1], int(sys.argv[2])
    op = OPERATORS[name][0]
    k = pd.compile(op, max_tile=max_tile) if max_tile else pd.compile(op)
    syms = [s for s in "CFHW" if s in k.scop.syms] or ["N", "M", "K"]
    runs = 0
    for values in FENCED_SIZES[name]:
        sizes = dict(zip(syms, values))
        args, kw = call_args(k, make_inputs(k, sizes), sizes)
        want = run_reference(k.scop, tuple(args), kw)
        for index in range(len(k.variants)):
            for at_end in (False, True):
                try:
                    got = k.run_variant(index, *(fenced(a, at_end) for a in args), **kw)
                except pd.ShapeError:  # the sizes lie outside this variant's region
                    continue
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                runs += 1
    assert runs, "no variant ran"
    print(f"OK {name} {runs} runs", flush=True)
''')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect'ed pages")
@pytest.mark.parametrize(("name", "max_tile"), [
    ("mm_shifted_rows", 4), ("mm_short_operand", 4), ("mm_column_guard", 0),
    pytest.param("conv_row_guard", 0, marks=pytest.mark.slow)])  # 24 s: the slow set
def test_copies_and_tiles_read_only_the_inputs(name, max_tile, tmp_path):
    """A packed copy of `B[k - 1, j] if k >= 1` read B's row -1, one of `B[k - 2, j]` the
    box of an empty B (K = 2); a register tile's columns past its box read `A[i, -1]` under
    `k + j >= M`, and one's rows past its box `X[c, -1, w]` under `h + f >= F`: each a
    segmentation fault here. (max_tile 0: the default tiles.)"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), POLYDYN_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "fenced.py"
    script.write_text(FENCED)
    proc = subprocess.run([sys.executable, str(script), name, str(max_tile)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    assert f"OK {name}" in proc.stdout


SANITIZED = textwrap.dedent('''
    import sys
    from tests.test_guarded_loads import check_all

    for name in sys.argv[1:]:
        for max_tile in (4, 8, None):
            stats = check_all(name, max_tile)
        print(f"OK {name} {stats['variants']} variants", flush=True)
''')


@pytest.mark.slow
def test_guarded_loads_under_address_sanitizer(libasan, tmp_path):  # noqa: F811
    _run_sanitized(libasan, tmp_path, SANITIZED, tuple(sorted(OPERATORS)))
