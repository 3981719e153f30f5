"""Sums into cells shared by the lanes of a work-group on OpenCL (codegen_ocl/lanes.py,
lanemit.py): a kernel of one mapped member whose loops sum (or take the max) into one cell per
value runs one value per work-item where its groups fill the device, else a group of lanes per
value (reading along the loop: ``A @ x``) or per 32 values (reading along the member: ``x @
B``, a warp over 32 neighbouring columns), each lane summing its share of the loop into a
private accumulator, the shares combined, lane 0 storing the cell. Every width, against the
reference, at value counts around 32 and loop lengths around the lanes' count."""

from __future__ import annotations

import numpy as np
import pytest

import polydyn as pd
from kernels import load
from polydyn import f32, i32, out
from polydyn.runtime.opencl import opencl_available
from polydyn.testing import call_args, check_kernel, make_inputs

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform (install PoCL)"),
]

N, M, K = pd.sym("N M K")


@pd.operator(assume="M >= 1 and K >= 1")
def vec_mat(x: f32[K], W: f32[K, M], y: out(f32[M])):
    """``x @ W``: the columns are neighbours in memory."""
    for j in range(M):
        y[j] = 0.0
        for k in range(K):
            y[j] += x[k] * W[k, j]


@pd.operator(assume="M >= 1 and K >= 1")
def mat_vec_bias(A: f32[M, K], x: f32[K], b: f32[M], y: out(f32[M])):
    """``A @ x + b``, the sum started from the bias: the rows' elements are neighbours."""
    for i in range(M):
        y[i] = b[i]
        for k in range(K):
            y[i] += A[i, k] * x[k]


@pd.operator(assume="M >= 1 and K >= 1")
def column_max(X: f32[K, M], y: out(f32[M])):
    """A max into each column's cell, from the first row."""
    for j in range(M):
        y[j] = X[0, j]
        for k in range(K):
            y[j] = max(y[j], X[k, j])


@pd.operator(assume="M >= 1 and K >= 1")
def column_stats(X: i32[K, M], s: out(i32[M]), q: out(i32[M])):
    """Two sums of one loop, into two arrays, then a use of both after it."""
    for j in range(M):
        s[j] = 0
        q[j] = 0
        for k in range(K):
            s[j] += X[k, j]
            q[j] += X[k, j] * X[k, j] % 7
        q[j] = q[j] - s[j]


OPS = [vec_mat, mat_vec_bias, column_max, column_stats]
COUNTS = (1, 31, 32, 33, 65)
LENGTHS = (1, 7, 8, 9, 33, 257)


def _spec(k):
    """The one kernel of the operator's last variant, with its alternatives."""
    (spec,) = k.mappings[-1].kernels
    return spec


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_width_gives_the_reference(op) -> None:
    """One value per work-item (groups fill the device), lanes per value, and the wide
    lanes (few groups), at value counts around 32 and loop lengths around 8 and 32."""
    k = pd.compile(op, target="opencl")
    assert any(x.lanes for spec in k.mappings[-1].kernels for x in spec.family())
    old = k.compute_units
    try:
        for units in (1, 3, 10**6):
            k.compute_units = units
            for count in COUNTS:
                for length in LENGTHS:
                    check_kernel(k, {"M": count, "K": length}, seed=count * 31 + length)
    finally:
        k.compute_units = old


def test_columns_where_the_member_reads_along_rows() -> None:
    """``x @ W`` takes 32 columns per group (8 lanes each, 32 in the wide twin); ``A @ x``
    a group per row (256 lanes, 1024), dealing each row out to the lanes, the bias read
    once per row notwithstanding."""
    wide = _spec(pd.compile(vec_mat, target="opencl")).alternatives
    assert [(x.columns, x.lanes, x.local_size) for x in wide] == [(32, 8, (256,)),
                                                                   (32, 32, (1024,))]
    spec = _spec(pd.compile(mat_vec_bias, target="opencl"))  # a dot product in a scalar
    assert [(x.columns, x.lanes) for x in (spec, *spec.alternatives)] == [(0, 256), (0, 1024)]


def test_the_launch_picks_by_the_groups_it_makes() -> None:
    """The first kernel whose work-groups reach the compute units: 256 values per group,
    then 32, else the wide twin."""
    k = pd.compile(vec_mat, target="opencl")
    old = k.compute_units
    try:
        for units, want in ((4, "groups 4 of 256"), (5, "groups 32 of 256"),
                            (33, "groups 32 of 1024")):
            k.compute_units = units
            assert want in k.explain(M=1024, K=64), (units, k.explain(M=1024, K=64))
    finally:
        k.compute_units = old


def test_gemv_in_the_bundled_product() -> None:
    """matmul's ``N = 1`` variant is ``x @ B``: its lanes share each column's sum."""
    k = pd.compile(load("matmul")[0], target="opencl")
    spec = k.mappings[0].kernels[0]
    assert [x.columns for x in spec.alternatives] == [32, 32]
    old = k.compute_units
    try:
        k.compute_units = 10**6
        for m in (1, 33, 100):
            for length in (1, 9, 300):
                check_kernel(k, {"N": 1, "M": m, "K": length}, seed=m + length, variant=0)
    finally:
        k.compute_units = old


@pytest.mark.parametrize("order", ["reverse", "rotate"])
def test_any_order_of_groups_and_lanes(order, monkeypatch) -> None:
    """Work-groups and lanes numbered in another order (POLYDYN_OCL_PERMUTE): the same
    results (a race between lanes or groups would show)."""
    monkeypatch.setenv("POLYDYN_OCL_PERMUTE", order)
    for op in (vec_mat, column_stats):
        k = pd.compile(op, target="opencl")
        k.compute_units = 10**6
        for count, length in ((33, 9), (64, 300)):
            check_kernel(k, {"M": count, "K": length}, seed=count + length)


def test_same_bits_run_to_run() -> None:
    k = pd.compile(vec_mat, target="opencl")
    sizes = {"M": 70, "K": 1025}
    inputs = make_inputs(k, sizes, 5)
    runs = []
    for units in (10**6, 10**6):
        k.compute_units = units
        args, kw = call_args(k, inputs, sizes)
        runs.append(np.asarray(k(*args, **kw)).tobytes())
    assert runs[0] == runs[1]
