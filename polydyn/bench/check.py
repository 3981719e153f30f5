"""Checking every implementation once per point, before it is timed.

Small points (at most ``INTERP_LIMIT`` statement instances) run polydyn kernels through
``polydyn.testing.check_kernel``, the reference interpreter (about 1 µs per instance run one
at a time; far less in its lane loops, ``scop/lanes.py``), and compare the baselines (NumPy,
torch) with the interpreter run on the point's inputs. Larger points compare with the
operator module's ``numpy_impl`` evaluated in float64, with a tolerance that grows with the
number of operations behind each output element (rounding error of a length-K reduction
grows like sqrt(K)); an indexing bug is off by the size of the values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..parametric.binding import Binder
from ..testing import call_args, check_kernel, tolerance
from .baselines import Impl, Results, ScopRef, as_results, inout_names
from .work import Work, output_elements

INTERP_LIMIT = 100_000


@dataclass(frozen=True)
class Verdict:
    """``how``: "interp" (the reference interpreter), "numpy-f64", or "none" (nothing to
    compare with); ``ok``; ``error``: the largest absolute difference; ``message`` on failure."""

    how: str
    ok: bool
    error: float = 0.0
    message: str = ""


def widened(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Float arrays as float64 (a more exact reference from the same NumPy code)."""
    return {n: (x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype.kind == "f"
                else x) for n, x in inputs.items()}


def numpy_reference(scop: Any, numpy_impl: Callable[..., Any] | None,
                    inputs: Mapping[str, Any], sizes: Mapping[str, int]) -> Results | None:
    """``numpy_impl`` on float64 copies of the inputs, or None without a numpy_impl."""
    if numpy_impl is None:
        return None
    from .baselines import function_impl

    prepared = function_impl("reference", scop, numpy_impl).prepare(widened(inputs), sizes)
    prepared.call()
    return prepared.results()


def compare(got: Results, want: Results, depth: float) -> tuple[float, str]:
    """Largest absolute error over the common arrays, and a message if one is out of bounds."""
    worst = 0.0
    for name, w in want.items():
        g = got.get(name)
        if g is None:
            return math.inf, f"{name}: missing from the result"
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return math.inf, f"{name}: shape {g.shape}, expected {w.shape}"
        if w.size == 0:
            continue
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isnan(gf), np.isnan(wf)):
            return math.inf, f"{name}: NaN pattern differs from the reference"
        finite = np.isfinite(wf)
        if not np.array_equal(gf[~finite], wf[~finite]):
            return math.inf, f"{name}: infinities differ from the reference"
        if not finite.any():
            continue
        err = float(np.max(np.abs(gf[finite] - wf[finite])))
        scale = float(np.max(np.abs(wf[finite])))
        tol = tolerance(g.dtype, scale) * max(1.0, math.sqrt(depth))
        if err > tol:
            return err, f"{name}: differs by {err:.3g} (tolerance {tol:.3g})"
        worst = max(worst, err)
    return worst, ""


def depth_of(w: Work, scop: Any, sizes: Mapping[str, int]) -> float:
    """Operations behind each output element, on average."""
    return w.flops / max(1, output_elements(scop, sizes))


class Checker:
    """Checks implementations at one point; the float64 NumPy reference is computed at most
    once and shared."""

    def __init__(self, scop: Any, numpy_impl: Callable[..., Any] | None,
                 inputs: Mapping[str, Any], sizes: Mapping[str, int], w: Work, seed: int):
        self.scop = scop
        self.numpy_impl = numpy_impl
        self.inputs = inputs
        self.sizes = dict(sizes)
        self.work = w
        self.seed = seed
        self._want: Results | None = None
        self._want_done = False

    def small(self) -> bool:
        return self.work.instances <= INTERP_LIMIT

    def want(self) -> Results | None:
        if not self._want_done:
            self._want = numpy_reference(self.scop, self.numpy_impl, self.inputs, self.sizes)
            self._want_done = True
        return self._want

    def check(self, impl: Impl, got: Results) -> Verdict:
        """``got`` is what ``impl`` produced on this point's inputs."""
        if self.small():
            if not impl.is_polydyn:
                return self._against_interpreter(got)
            try:
                err = check_kernel(impl.kernel, self.sizes, seed=self.seed, variant=impl.variant)
            except AssertionError as exc:
                return Verdict("interp", False, math.inf, str(exc))
            return Verdict("interp", True, float(err))
        want = self.want()
        if want is None:
            return Verdict("none", True, message="no numpy_impl and too large for the "
                           "reference interpreter")
        err, message = compare(got, want, depth_of(self.work, self.scop, self.sizes))
        return Verdict("numpy-f64", not message, err, message)

    def _against_interpreter(self, got: Results) -> Verdict:
        from ..scop.interp import run_reference

        pos, kw = call_args(ScopRef(self.scop), self.inputs, self.sizes)
        returned = run_reference(self.scop, tuple(pos), kw)
        if self.scop.outputs:
            want = as_results(self.scop, returned)
        else:  # the interpreter updated the inout arrays in place
            names = Binder(self.scop).names
            want = {n: pos[names.index(n)] for n in inout_names(self.scop)}
        err, message = compare(got, want, depth_of(self.work, self.scop, self.sizes))
        return Verdict("interp", not message, err, message)
