"""Operators compiled with their sizes fixed (``--assume``), as ``polydyn compile --assume``
does, get the schedule of the dynamic compile at those sizes: the same variant shape
(register tiles, fused inits) and the same results. With every size fixed, isl drops the band
members of one-iteration loops (a batch of 1), and the init statements must still leave the
band (schedule.auto.distribute_low_dims)."""

from __future__ import annotations

import pytest

import polydyn as pd
from kernels import load
from polydyn.operator_files import with_assume
from polydyn.testing import check_kernel

CASES = [
    # the channels variant's sizes (64 input channels): twenty seconds, the slow set
    pytest.param("conv2d", {"B": 1, "C": 64, "F": 32, "H": 12, "W": 12, "KH": 3, "KW": 3},
                 marks=pytest.mark.slow),
    ("conv2d", {"B": 2, "C": 3, "F": 8, "H": 9, "W": 7, "KH": 3, "KW": 2}),
    ("matmul", {"N": 1, "M": 40, "K": 33}),
    ("matmul", {"N": 97, "M": 65, "K": 31}),
    ("batched_matmul", {"B": 1, "N": 17, "M": 33, "K": 9}),
    ("softmax", {"N": 1, "L": 100}),
    ("jacobi2d", {"N": 20, "T": 3}),
    ("maxpool", {"B": 1, "C": 3, "H": 13, "W": 9}),
    ("layernorm", {"N": 5, "D": 17}),
]


@pytest.mark.parametrize(("name", "sizes"), CASES, ids=lambda x: str(x))
def test_fixed_sizes_keep_the_dynamic_schedule(name: str, sizes: dict[str, int]) -> None:
    op = load(name)[0]
    scop = with_assume(op, " and ".join(f"{k} = {v}" for k, v in sizes.items()))
    known = pd.compile(scop)
    dynamic = pd.compile(op)
    want = dynamic.select(**sizes).summary
    got = known.select(**sizes).summary
    for feature in ("register tiles", "set in", "packed", "transposed"):
        assert (feature in want) <= (feature in got), (want, got)
    check_kernel(known, sizes)


def test_fixed_work_tests_multiply_as_int64() -> None:
    """A thread test's work with every extent constant (1531^3 > 2^31) multiplies as int64_t:
    as int it overflowed and kept matmul 1531^3 on one thread (0.51x the dynamic compile)."""
    from polydyn.pipeline import generate

    sizes = {"N": 1531, "M": 1531, "K": 1531}
    scop = with_assume(load("matmul")[0], " and ".join(f"{k} = {v}" for k, v in sizes.items()))
    source = generate(scop, "c").sources["matmul.c"]
    assert "(int64_t)(1531) * (1531) * (1531)" in source
    assert "if((1531) * (1531) * (1531)" not in source


def test_fixed_sizes_are_constants_in_the_variant() -> None:
    """A size that a variant's region fixes is a constant in its code, subscripts included
    (as a parameter, gcc did not know max pooling's row stride: 0.85x the dynamic compile);
    sizes the region leaves free stay parameters."""
    from polydyn.pipeline import generate

    sizes = {"B": 1, "C": 64, "H": 112, "W": 112}
    scop = with_assume(load("maxpool")[0], " and ".join(f"{k} = {v}" for k, v in sizes.items()))
    source = generate(scop, "c").sources["maxpool.c"]
    for name, value in sizes.items():
        assert f"const int64_t {name} = {value};" in source
    dynamic = generate(load("matmul")[0], "c").sources["matmul.c"]
    one_row = dynamic[dynamic.index("/* variant N=1"):]
    one_row = one_row[:one_row.index("\n}\n")]
    assert "const int64_t N = 1;" in one_row and "const int64_t M" not in one_row
    generic = dynamic[dynamic.index("/* variant generic"):]
    assert "const int64_t N = " not in generic[:generic.index("\n}\n")]
