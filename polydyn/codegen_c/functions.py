"""Stages 4-5 of the C target for each variant: its isl AST, the lowering passes, its C
function. Variants are independent of each other (each function is printed by an emitter of
its own, so its text depends on its variant alone), so a machine with CPUs to spare builds
them in worker processes forked from this one: the Scop, the dependences and the schedules
are isl objects that cannot be pickled, but a forked child has them already and sends back
text. isl's AST build is most of that work (a product's variants take 0.2-0.6 s each); gcc
compiles each function as it arrives (``toolchain.EarlyUnits``).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from .. import astgen
from ..lowering import collapse as passes
from ..lowering.tree import tree_text
from ..parametric.variants import Variant
from ..schedule.variant import code_region
from ..scop.ir import Scop
from . import toolchain
from .emit import CEmitter

# Seconds of work, estimated, from which the variants other than the first are built in
# workers (a pool of two costs about 30 ms; a test's small operators take less than this)
WORKERS_MIN_SECONDS = 0.5
# CPUs from which workers are used by default: on two, gcc's units (about 60% of a cold
# compile's CPU time) keep the second CPU busy while this process generates, and a cold
# compile in workers ran no faster (bench/RESULTS.md, "Variants generated in forked workers")
WORKERS_MIN_CPUS = 3


@dataclass(frozen=True)
class Unit:
    """One variant to print as the function ``fname`` of the module of ``scop``."""

    scop: Scop
    deps: Any
    variant: Variant
    fname: str
    zero_init: frozenset[str]
    planned_for: str


@dataclass(frozen=True)
class Code:
    """A variant's C function and, when asked for, its loop tree as text (the AST dump)."""

    function: str
    tree: str = ""


def variant_code(unit: Unit, with_tree: bool = False) -> Code:
    """``unit``'s AST (with the lowering passes: two loops along contiguous rows as one) and
    its C function."""
    ast = passes.collapse(astgen.build_ast(unit.variant.schedule,
                                           code_region(unit.variant.region), unit.scop,
                                           unit.deps), unit.scop)
    emitter = CEmitter(unit.scop, unit.zero_init, unit.planned_for)
    function = emitter.variant_function(unit.fname, unit.variant, ast)
    return Code(function, tree_text(ast) if with_tree else "")


def variant_codes(units: Sequence[Unit], with_tree: bool = False,
                  on_code: Callable[[Code], None] | None = None,
                  processes: int | None = None) -> list[Code]:
    """Each unit's ``Code``, in order; ``on_code`` hears of each as soon as it exists (a
    build starts compiling it). The heaviest unit (by its schedule's text) is built here
    first; where the others would take ``WORKERS_MIN_SECONDS`` or more at its pace, up to
    ``processes`` forked workers build them, on Linux (default: the CPUs this process may
    use, from ``WORKERS_MIN_CPUS`` on, else none). A unit that fails in a worker (or a
    worker that dies) is built again here, so that its error is raised as it is without
    workers."""
    if processes is None:
        cpus = toolchain.usable_cpus()
        processes = cpus if cpus >= WORKERS_MIN_CPUS else 1
    processes = min(len(units) - 1, processes)
    order = sorted(range(len(units)), key=lambda k: -len(str(units[k].variant.schedule)))
    done: dict[int, Code] = {}

    def here(k: int) -> None:
        done[k] = variant_code(units[k], with_tree)
        if on_code is not None:
            on_code(done[k])

    start = time.perf_counter()
    if order:
        here(order[0])
    rest = order[1:]
    if processes >= 2 and sys.platform.startswith("linux") and \
            (time.perf_counter() - start) * len(rest) >= WORKERS_MIN_SECONDS:
        done.update(_in_workers(units, rest, with_tree, on_code, processes))
    for k in rest:
        if k not in done:
            here(k)
    return [done[k] for k in range(len(units))]


# the units a forked worker reads (set while the pool's workers are forked)
_UNITS: Sequence[Unit] = ()


def _work(k: int, with_tree: bool) -> Code | None:
    try:
        return variant_code(_UNITS[k], with_tree)
    except Exception:  # built again in the parent, which raises it there
        return None


def _in_workers(units: Sequence[Unit], order: Sequence[int], with_tree: bool,
                on_code: Callable[[Code], None] | None, processes: int) -> dict[int, Code]:
    """The codes the workers built of the units ``order`` names, in that order, by unit."""
    global _UNITS
    done: dict[int, Code] = {}
    _UNITS = units
    try:
        with warnings.catch_warnings():
            # (Python 3.12 warns of fork in a process with threads: a progress line's or a
            # host program's; a worker touches none of their locks, only isl and its text)
            warnings.simplefilter("ignore", DeprecationWarning)
            pool = ProcessPoolExecutor(processes, multiprocessing.get_context("fork"))
            futures = {pool.submit(_work, k, with_tree): k for k in order}
        with pool:
            for future in as_completed(futures):
                code = future.result()
                if code is not None:
                    done[futures[future]] = code
                    if on_code is not None:
                        on_code(code)
    except (BrokenProcessPool, OSError):  # a worker died, or none could start: built here
        pass
    finally:
        _UNITS = ()
    return done
