"""Helpers for differential tests: random inputs for an operator, and a checked run of a
kernel against the operator's reference semantics (the loop nest run on NumPy)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .parametric.binding import Binder
from .scop.exprs import NUMPY_NAME
from .scop.ir import Scop


def _scop(op_or_kernel: Any) -> Scop:
    return op_or_kernel.scop


def make_inputs(op: Any, sizes: Mapping[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random arrays (and value scalars) for every input and inout argument, by name.
    Floats are uniform in [-1, 1]; integers in [-8, 8]."""
    scop = _scop(op)
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for a in scop.arg_arrays:
        if a.kind not in ("in", "inout", "value"):
            continue
        shape = tuple(d.eval(sizes) for d in a.shape)
        dtype = np.dtype(NUMPY_NAME[a.dtype])
        if dtype.kind == "f":
            x = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        else:
            x = rng.integers(-8, 9, size=shape).astype(dtype)
        out[a.name] = x[()] if a.kind == "value" else x
    return out


def interpreted_outputs(op: Any, scop: Scop, sizes: Mapping[str, int],
                        start: Mapping[str, float], seed: int = 0,
                        lane_loops: bool = True) -> list[np.ndarray]:
    """The outputs and inouts of ``op`` after ``scop`` (``op``'s Scop or a rewrite of it)
    runs on the reference interpreter over ``make_inputs(op, sizes, seed)``, the arrays of
    each kind in ``start`` (out, temp) filled with that value first (NaN: a read before a
    write shows); ``lane_loops``: see ``interp.python_source``."""
    from .scop.interp import compiled_runner

    arrays: dict[str, Any] = make_inputs(op, sizes, seed)
    for a in scop.arrays:
        if a.kind in start:
            arrays[a.name] = np.full(tuple(d.eval(sizes) for d in a.shape), start[a.kind],
                                     np.dtype(NUMPY_NAME[a.dtype]))
    tensors = [arrays[a.name] for a in scop.arrays if a.is_tensor]
    values = [arrays[a.name] for a in scop.arrays if a.kind == "value"]
    with np.errstate(all="ignore"):
        compiled_runner(scop, lane_loops)(*[sizes[s] for s in scop.syms], *tensors, *values)
    return [arrays[a.name] for a in _scop(op).arrays if a.kind in ("out", "inout")]


def unset_values(scop: Scop) -> dict[str, float]:
    """``interpreted_outputs``' ``start`` that shows a read before a write: NaN in out and
    temp arrays where all of them hold floats, else 0."""
    written = [a for a in scop.arrays if a.kind in ("out", "temp")]
    value = np.nan if all(a.dtype in ("f32", "f64") for a in written) else 0
    return {"out": value, "temp": value}


def call_args(op: Any, inputs: Mapping[str, Any], sizes: Mapping[str, int]
              ) -> tuple[list[Any], dict[str, int]]:
    """Positional arguments (copied) and the keyword sizes a call needs."""
    binder = Binder(_scop(op))
    pos = [np.array(inputs[n], copy=True) if isinstance(inputs[n], np.ndarray) else inputs[n]
           for n in binder.names]
    kw = {s: int(sizes[s]) for s in binder.keyword_syms}
    return pos, kw


def tolerance(dtype: np.dtype, scale: float) -> float:
    """Absolute tolerance for comparing a kernel with the reference: reassociation and FMA
    contraction change the last bits of each operation, so allow a few hundred ulps of the
    result's magnitude (an indexing bug produces errors of order ``scale``)."""
    if dtype.kind != "f":
        return 0.0
    eps = float(np.finfo(dtype).eps)
    return 256 * eps * max(1.0, scale)


def check_kernel(kernel: Any, sizes: Mapping[str, int], seed: int = 0,
                 variant: int | str | None = None) -> float:
    """Run ``kernel`` and its operator's reference on the same random inputs; assert every
    output and inout agrees; return the largest absolute error."""
    scop = kernel.scop
    inputs = make_inputs(kernel, sizes, seed)
    ref_args, kw = call_args(kernel, inputs, sizes)
    got_args, _ = call_args(kernel, inputs, sizes)
    from .scop.interp import run_reference

    want = run_reference(scop, tuple(ref_args), kw)
    got = kernel(*got_args, **kw) if variant is None else \
        kernel.run_variant(variant, *got_args, **kw)
    pairs = []
    outs = [a for a in scop.arg_arrays if a.kind == "out"]
    if outs:
        want_t = want if isinstance(want, tuple) else (want,)
        got_t = got if isinstance(got, tuple) else (got,)
        pairs += [(a.name, w, g) for a, w, g in zip(outs, want_t, got_t)]
    binder = Binder(scop)
    for k, name in enumerate(binder.names):
        if scop.array(name).kind == "inout":
            pairs.append((name, ref_args[k], got_args[k]))
    worst = 0.0
    for name, w, g in pairs:
        w = np.asarray(w)
        g = np.asarray(g)
        assert g.shape == w.shape, f"{name}: shape {g.shape} != reference {w.shape}"
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype} != reference {w.dtype}"
        if w.size == 0:
            continue
        same_nan = np.isnan(w) == np.isnan(g) if w.dtype.kind == "f" else True
        assert np.all(same_nan), f"{name}: NaN pattern differs from the reference"
        finite = np.isfinite(w) if w.dtype.kind == "f" else np.ones(w.shape, bool)
        assert np.array_equal(w[~finite], g[~finite], equal_nan=True), \
            f"{name}: non-finite values differ"
        wf, gf = w[finite].astype(np.float64), g[finite].astype(np.float64)
        if wf.size == 0:
            continue
        err = float(np.max(np.abs(wf - gf)))
        tol = tolerance(w.dtype, float(np.max(np.abs(wf))))
        if err > tol:
            bad = np.unravel_index(int(np.argmax(np.where(finite, np.abs(
                w.astype(np.float64) - g.astype(np.float64)), -1))), w.shape)
            raise AssertionError(
                f"{kernel.name} {dict(sizes)} variant={variant}: {name} differs from the "
                f"reference by {err:.3g} (tolerance {tol:.3g}); first worst at {bad}: "
                f"got {g[bad]!r}, want {w[bad]!r}")
        worst = max(worst, err)
    return worst


def in_context(op: Any, sizes: Mapping[str, int]) -> bool:
    """Whether the sizes satisfy the operator's context (its ``assume``)."""
    import islpy as isl

    scop = _scop(op)
    point = " and ".join(f"{s} = {v}" for s, v in sizes.items())
    return not scop.context.intersect(isl.Set(
        f"{scop.param_space_text()} -> {{ : {point} }}")).is_empty()


def check_everywhere(kernel: Any, shapes: Iterable[tuple[int, ...]], hi: int,
                     limit: int = 4) -> None:
    """``check_kernel`` at every size tuple of ``shapes`` (values of the operator's syms in
    order, cut to their number) that its context allows, then with each variant forced at
    up to ``limit`` points of its region, edges first, every sym at most ``hi``."""
    scop = kernel.scop
    for values in shapes:
        sizes = dict(zip(scop.syms, values[:len(scop.syms)], strict=True))
        if in_context(kernel, sizes):
            check_kernel(kernel, sizes)
    for index, v in enumerate(kernel.variants):
        for sizes in region_points(scop, v.region, hi=hi, limit=limit):
            check_kernel(kernel, sizes, variant=index)


def region_points(scop: Scop, region: Any, hi: int = 30, limit: int = 8, seed: int = 0,
                  lo: int = 0) -> list[dict[str, int]]:
    """Up to ``limit`` sym assignments in ``region`` with every sym in [lo, hi]: points on
    the region's boundary (a step of one in some sym leaves the region) first, then inside."""
    import random

    import islpy as isl

    space = region.get_space()
    names = [space.get_dim_name(isl.dim_type.param, k)
             for k in range(space.dim(isl.dim_type.param))]
    n = len(names)
    if n == 0:
        return [{}] if not region.is_empty() else []
    pts = region.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
    xs = [f"x{k}" for k in range(n)]
    box = isl.Set(f"{{ [{', '.join(xs)}] : " +
                  " and ".join(f"{lo} <= {x} <= {hi}" for x in xs) + " }")
    edges = isl.Set.empty(pts.get_space())
    for k in range(n):
        for step in (1, -1):
            moved = [f"{x} + {step}" if j == k else x for j, x in enumerate(xs)]
            shift = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(moved)}] }}")
            edges = edges.union(pts.subtract(pts.apply(shift)))
    pts = pts.intersect(box)
    edges = edges.intersect(box)
    rng = random.Random(seed)
    chosen: list[tuple[int, ...]] = []
    for part, quota in ((edges.coalesce(), (limit + 1) // 2), (pts, limit)):
        for _ in range(12 * limit):
            if len(chosen) >= quota or part.is_empty():
                break
            # a random sub-box, then isl's sample point inside it
            cons = []
            for x in xs:
                a = rng.randint(lo, hi)
                b = rng.randint(a, min(hi, a + max(2, (hi - lo) // 2)))
                cons.append(f"{a} <= {x} <= {b}")
            sub = part.intersect(isl.Set(f"{{ [{', '.join(xs)}] : {' and '.join(cons)} }}"))
            if sub.is_empty():
                continue
            p = sub.sample_point()
            point = tuple(p.get_coordinate_val(isl.dim_type.set, k).to_python()
                          for k in range(n))
            if point not in chosen:
                chosen.append(point)
        if not chosen and not part.is_empty():  # a thin region: isl's own sample point
            p = part.sample_point()
            chosen.append(tuple(p.get_coordinate_val(isl.dim_type.set, k).to_python()
                                for k in range(n)))
    return [dict(zip(names, c)) for c in chosen[:limit]]
