"""Stages 4-5 of the C target for each variant: its isl AST, the lowering passes, its C
function. Variants are independent of each other (each function is printed by an emitter of
its own, so its text depends on its variant alone), so a machine with CPUs to spare builds
them in worker processes forked from this one: the Scop, the dependences and the schedules
are isl objects that cannot be pickled, but a forked child has them already and sends back
text. isl's AST build is most of a cold compile (a product's variants take 0.2-0.6 s each).
"""

from __future__ import annotations

import multiprocessing
import sys
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from ..astgen import build_ast
from ..lowering.collapse import collapse
from ..lowering.tree import tree_text
from ..parametric.variants import Variant
from ..schedule.variant import code_region
from ..scop.ir import Scop
from . import toolchain
from .emit import CEmitter


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
    ast = collapse(build_ast(unit.variant.schedule, code_region(unit.variant.region),
                             unit.scop, unit.deps), unit.scop)
    emitter = CEmitter(unit.scop, unit.zero_init, unit.planned_for)
    function = emitter.variant_function(unit.fname, unit.variant, ast)
    return Code(function, tree_text(ast) if with_tree else "")


def variant_codes(units: Sequence[Unit], with_tree: bool = False,
                  on_code: Callable[[Code], None] | None = None,
                  processes: int | None = None) -> list[Code]:
    """Each unit's ``Code``, in order; ``on_code`` hears of each as soon as it exists (a
    build starts compiling it). Up to ``processes`` (default: the CPUs this process may use)
    forked workers build them where there are three units or more (a fork costs 10-20 ms)
    and the platform forks safely (Linux). A unit that fails in a worker (or a worker that
    dies) is built again here, so that its error is raised as it is without workers."""
    processes = min(len(units), toolchain.usable_cpus() if processes is None else processes)
    done: dict[int, Code] = {}
    if processes >= 2 and len(units) >= 3 and sys.platform.startswith("linux"):
        done = _in_workers(units, with_tree, on_code, processes)
    out = []
    for k, unit in enumerate(units):
        if k not in done:
            done[k] = variant_code(unit, with_tree)
            if on_code is not None:
                on_code(done[k])
        out.append(done[k])
    return out


# the units a forked worker reads (set while the pool's workers are forked)
_UNITS: Sequence[Unit] = ()


def _work(k: int, with_tree: bool) -> Code | None:
    try:
        return variant_code(_UNITS[k], with_tree)
    except Exception:  # built again in the parent, which raises it there
        return None


def _in_workers(units: Sequence[Unit], with_tree: bool, on_code: Callable[[Code], None] | None,
                processes: int) -> dict[int, Code]:
    """The codes the workers built, by unit; the units heaviest first (by their schedules'
    text), so that the last one to finish is a light one."""
    global _UNITS
    order = sorted(range(len(units)), key=lambda k: -len(str(units[k].variant.schedule)))
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
