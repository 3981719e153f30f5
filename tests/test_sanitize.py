"""Memory safety of generated code (issue 8): the differential tests of bundled kernels, once
with kernels built under AddressSanitizer and UBSan (POLYDYN_SANITIZE=1), at sizes that leave
partial tiles (tiles of 8, sizes 9 and 17), so an out-of-bounds access in a partial tile
cannot hide behind a correct-looking result.

The instrumented libraries are loaded into a Python subprocess that preloads libasan;
sanitizer reports abort it (halt_on_error), and its stderr must not mention one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

KERNELS = ("matmul", "conv2d", "jacobi2d", "softmax", "maxpool", "transpose")

# Per kernel: the largest sym for region_points, and explicit sizes of 9 and 17 along the
# tiled dimensions (small elsewhere, to keep the reference interpreter quick).
SCRIPT = textwrap.dedent('''
    import sys
    import polydyn as pd
    from kernels import load
    from tests.fuzz.runner import check_operator

    HI = {"matmul": 17, "conv2d": 10, "jacobi2d": 17, "softmax": 17, "maxpool": 17,
          "transpose": 17}
    POINTS = {
        "matmul": [{"N": 9, "M": 17, "K": 9}, {"N": 17, "M": 9, "K": 17},
                   {"N": 9, "M": 9, "K": 9}, {"N": 1, "M": 17, "K": 9}],
        "conv2d": [{"B": 1, "C": 2, "F": 9, "H": 10, "W": 17, "KH": 2, "KW": 1},
                   {"B": 1, "C": 9, "F": 2, "H": 17, "W": 9, "KH": 1, "KW": 2}],
        "jacobi2d": [{"N": 9, "T": 2}, {"N": 17, "T": 2}],
        "softmax": [{"N": 9, "L": 17}, {"N": 17, "L": 9}],
        "maxpool": [{"B": 1, "C": 2, "H": 17, "W": 9}, {"B": 2, "C": 1, "H": 9, "W": 17}],
        "transpose": [{"N": 9, "M": 17}, {"N": 17, "M": 17}, {"N": 17, "M": 9}],
    }
    for name in sys.argv[1:]:
        op = load(name)[0]
        k = pd.compile(op, max_tile=8)
        stats = check_operator(op, kernel=k, hi=HI[name], limit=3, seed=1,
                               extra_points=POINTS[name])
        print(f"OK {name} {stats['variants']} variants {stats['runs']} runs", flush=True)
''')


# The default tiles (6 x 32 register tiles, 48 x 256 x 256 cache tiles, packed B) at sizes
# that leave partial register tiles, which run as full ones over padded rows and packed
# columns: every variant holding the sizes, against the float64 NumPy result.
SCRIPT_DEFAULT_TILES = textwrap.dedent('''
    import sys
    import numpy as np
    import polydyn as pd
    from kernels import load
    from polydyn.testing import make_inputs

    SHAPES = {
        "matmul": [{"N": 49, "M": 257, "K": 256}, {"N": 101, "M": 289, "K": 300},
                   {"N": 47, "M": 263, "K": 255}, {"N": 5, "M": 37, "K": 40}],
        "batched_matmul": [{"B": 2, "N": 53, "M": 263, "K": 260}],
        "conv2d": [{"B": 1, "C": 64, "F": 53, "H": 12, "W": 40, "KH": 3, "KW": 3}],
    }
    for name in sys.argv[1:]:
        op, numpy_impl = load(name)
        k = pd.compile(op)
        for sizes in SHAPES[name]:
            args = list(make_inputs(k, sizes).values())
            want = numpy_impl(*[a.astype(np.float64) for a in args])
            for index, variant in enumerate(k.variants):
                try:
                    got = k.run_variant(index, *args)
                except pd.ShapeError:  # the sizes lie outside this variant's region
                    continue
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3,
                                           err_msg=f"{name} {variant.name} {sizes}")
        print(f"OK {name}", flush=True)
''')


# Phrasings whose register tiles read their input two elements apart (convolutions with
# stride 2, one with its edges padded), every variant at sizes that leave partial tiles.
SCRIPT_STRIDED = textwrap.dedent('''
    import sys
    import polydyn as pd
    from tests import phrasings as ph
    from tests.fuzz.runner import check_operator

    POINTS = [{"B": 1, "C": 5, "F": 15, "P": 3, "Q": 17},
              {"B": 1, "C": 7, "F": 13, "P": 2, "Q": 15},
              {"B": 2, "C": 9, "F": 29, "P": 4, "Q": 33},
              {"B": 1, "C": 3, "F": 14, "P": 1, "Q": 16}]
    for name in sys.argv[1:]:
        op = getattr(ph, name)
        stats = check_operator(op, kernel=pd.compile(op), hi=20, limit=3, seed=1,
                               extra_points=POINTS)
        print(f"OK {name} {stats['variants']} variants {stats['runs']} runs", flush=True)
''')


# A product that reads one array both along the rows and along the vector (A A^T): the
# vector's read from panels or a copy, the rows' in place, at sizes that leave partial tiles
# (rows past 6 and 12, vectors past 16 and 32). (Its lower triangle cannot run here: isl
# throws a C++ exception inside a call while planning its diagonal tiles, and the preloaded
# runtime aborts on any C++ throw.)
SCRIPT_GRAM = textwrap.dedent('''
    import sys
    import polydyn as pd
    from tests import test_repacked_products as products
    from tests.fuzz.runner import check_operator

    POINTS = [{"N": n, "K": k} for n, k in ((13, 5), (31, 17), (33, 2), (47, 9), (97, 3))]
    for name in sys.argv[1:]:
        op = getattr(products, name)
        stats = check_operator(op, kernel=pd.compile(op), hi=40, limit=3, seed=1,
                               extra_points=POINTS)
        print(f"OK {name} {stats['variants']} variants {stats['runs']} runs", flush=True)
''')


def _libasan() -> str | None:
    try:
        out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out if out and os.path.isabs(out) and os.path.exists(out) else None


def _sanitizer_works(libasan: str, tmp: Path) -> bool:
    """A trivial -fsanitize=address,undefined build links and loads here."""
    src = tmp / "probe.c"
    src.write_text("int probe(int x) { return x + 1; }\n")
    lib = tmp / "libprobe.so"
    cc = os.environ.get("POLYDYN_CC", "cc")
    build = subprocess.run([cc, "-shared", "-fPIC", "-fsanitize=address,undefined", str(src),
                            "-o", str(lib)], capture_output=True, text=True)
    if build.returncode != 0:
        return False
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0")
    run = subprocess.run([sys.executable, "-c",
                          f"import ctypes; assert ctypes.CDLL({str(lib)!r}).probe(1) == 2"],
                         env=env, capture_output=True, text=True, timeout=60)
    return run.returncode == 0


@pytest.fixture(scope="module")
def libasan(tmp_path_factory) -> str:
    path = _libasan()
    if path is None:
        pytest.skip("libasan is not available (gcc -print-file-name=libasan.so)")
    if not _sanitizer_works(path, tmp_path_factory.mktemp("probe")):
        pytest.skip("-fsanitize=address,undefined does not build or load here")
    return path


def _run_sanitized(libasan: str, tmp_path: Path, script: str, names: tuple[str, ...]
                   ) -> None:
    env = dict(os.environ)
    env.update({
        "POLYDYN_SANITIZE": "1",
        "POLYDYN_CACHE_DIR": str(tmp_path / "cache"),
        "LD_PRELOAD": libasan,
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "2",
    })
    path = tmp_path / "sanitized_kernels.py"
    path.write_text(script)
    proc = subprocess.run([sys.executable, str(path), *names], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    report = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}"
    print(proc.stdout)
    assert proc.returncode == 0, report
    assert "AddressSanitizer" not in proc.stderr, report
    assert "runtime error" not in proc.stderr, report
    for name in names:
        assert f"OK {name}" in proc.stdout, report
    # the kernels really were instrumented: their libraries reference the ASan runtime
    libs = list((tmp_path / "cache").rglob("*.so"))
    assert libs, "no library was built"
    for lib in libs:
        assert b"__asan_" in lib.read_bytes(), f"{lib} is not built with -fsanitize=address"


def test_kernels_under_address_sanitizer(libasan, tmp_path):
    _run_sanitized(libasan, tmp_path, SCRIPT, KERNELS)


def test_default_register_tiles_under_address_sanitizer(libasan, tmp_path):
    _run_sanitized(libasan, tmp_path, SCRIPT_DEFAULT_TILES,
                   ("matmul", "batched_matmul", "conv2d"))


@pytest.mark.slow
def test_strided_register_tiles_under_address_sanitizer(libasan, tmp_path):
    _run_sanitized(libasan, tmp_path, SCRIPT_STRIDED, ("conv_stride2", "conv_stride2_same_if"))


@pytest.mark.slow
def test_gram_register_tiles_under_address_sanitizer(libasan, tmp_path):
    _run_sanitized(libasan, tmp_path, SCRIPT_GRAM, ("gram",))


def test_sanitizer_catches_an_out_of_bounds_access(libasan, tmp_path):
    """The harness itself: an instrumented library that writes one element past a buffer
    handed to it from Python is reported, and the process fails."""
    src = tmp_path / "oob.c"
    src.write_text("void oob(float *a, long n) { for (long i = 0; i <= n; i++) a[i] = 1; }\n")
    lib = tmp_path / "liboob.so"
    cc = os.environ.get("POLYDYN_CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-fsanitize=address,undefined", str(src),
                    "-o", str(lib)], check=True)
    code = (f"import ctypes, numpy as np\nlib = ctypes.CDLL({str(lib)!r})\n"
            "a = np.zeros(1000, np.float32)\nb = a[:999].copy()\n"
            "lib.oob(b.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(999))\n")
    env = dict(os.environ, LD_PRELOAD=libasan,
               ASAN_OPTIONS="detect_leaks=0:halt_on_error=1")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "AddressSanitizer" in proc.stderr
