"""Size tests as Python conditions over the syms: the operator's context and each variant's
region, printed from isl once at compile time and evaluated per call without isl (what a
loaded artifact checks sizes with)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# what the expressions may call (nothing else)
EVAL_NAMES = {"__builtins__": {}, "max": max, "min": min}


class SizeTests:
    """``context`` and ``regions``: Python conditions (text) over the Scop's sym names; a
    region's condition holds only within the context (the caller tests that first)."""

    def __init__(self, context: str, regions: Sequence[str]):
        self.context = context
        self.regions = list(regions)
        self._context = compile(context, "<polydyn context>", "eval")
        self._regions = [compile(r, "<polydyn region>", "eval") for r in self.regions]

    def in_context(self, syms: Mapping[str, int]) -> bool:
        return bool(eval(self._context, EVAL_NAMES, dict(syms)))

    def in_region(self, index: int, syms: Mapping[str, int]) -> bool:
        return bool(eval(self._regions[index], EVAL_NAMES, dict(syms)))


def size_tests(scop: Any, regions: Sequence[Any]) -> SizeTests:
    """The tests of ``scop``'s context and of the isl sets ``regions`` (needs isl)."""
    import islpy as isl

    from ..codegen_ocl.pyexpr import set_to_py

    universe = isl.Set.universe(scop.context.get_space())
    return SizeTests(set_to_py(scop.context, universe),
                     [set_to_py(r, scop.context) for r in regions])
