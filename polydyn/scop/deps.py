"""Dependences of a Scop: flow (RAW), anti (WAR) and output (WAW) as isl union maps.

Every access relation and the original schedule are intersected with the statement domains
before the analysis (Scop.accesses and Scop.original_schedule do that): without it, matmul's
``C[i,j] = 0`` -> ``C[i,j] += ...`` dependence vanishes and the scheduler reorders them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from .ir import Scop


@dataclass(frozen=True)
class Deps:
    """``{ S[i] -> T[j] }`` relations: source instance before sink instance."""

    flow: isl.UnionMap = field(compare=False)  # write -> read of the value it wrote
    anti: isl.UnionMap = field(compare=False)  # read -> later overwrite
    output: isl.UnionMap = field(compare=False)  # write -> later overwrite
    live_in: isl.UnionMap = field(compare=False)  # reads with no source in the Scop
    # Dependences through local scalars taken as single cells (not expanded): they keep each
    # scalar's live ranges apart in the sequential order, so one C variable per thread holds it.
    locals_order: isl.UnionMap = field(compare=False)

    @cached_property
    def all(self) -> isl.UnionMap:
        """Every dependence between expanded accesses: the coincidence (parallelism) set
        (computed once: the AST annotation asks for it at every loop)."""
        return self.flow.union(self.anti).union(self.output).coalesce()

    @property
    def validity(self) -> isl.UnionMap:
        """What every schedule must respect: ``all`` plus the local scalars' live ranges."""
        return self.all.union(self.locals_order).coalesce()

    def __str__(self) -> str:
        return (f"flow: {self.flow}\nanti: {self.anti}\noutput: {self.output}\n"
                f"live-in reads: {self.live_in}")


def _memory_based(sources: isl.UnionMap, sinks: isl.UnionMap, sched: isl.UnionMap
                  ) -> isl.UnionMap:
    """``{ src -> sink }``: every source access before a sink access of the same element (a
    superset of the dataflow dependences, for when isl's exact analysis refuses)."""
    same = sources.apply_range(sinks.reverse())
    return same.intersect(sched.lex_lt_union_map(sched)).coalesce()


# The operations isl's dataflow analysis may spend on one kind of dependence (about 1.5 s;
# jacobi2d needs the most of the bundled kernels, under 300,000). Past it the dependences
# are memory-based (every earlier access of the same element), a superset, so a schedule
# that respects them is valid: nests of `%` and `//` guards over many writes reach it.
DEPS_MAX_OPERATIONS = 2_000_000


@contextmanager
def operations_quota(ctx: isl.Context, limit: int) -> Iterator[None]:
    """isl may spend ``limit`` operations inside the block, then raises isl.Error (the
    caller's answer is then the safe one); no limit afterwards."""
    ctx.reset_operations()
    ctx.set_max_operations(limit)
    try:
        yield
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()


def _dataflow(sinks: isl.UnionMap, sources: isl.UnionMap, sched: isl.UnionMap, *, must: bool
              ) -> isl.UnionFlow | None:
    """isl's exact dataflow analysis, or None where it refuses (some domains with
    existentials, a loop under a `%` guard) or runs past ``DEPS_MAX_OPERATIONS``."""
    try:
        with operations_quota(sinks.get_ctx(), DEPS_MAX_OPERATIONS):
            info = isl.UnionAccessInfo.from_sink(sinks)
            info = info.set_must_source(sources) if must else info.set_may_source(sources)
            return info.set_schedule_map(sched).compute_flow()
    except isl.Error:
        return None


def _flow(reads: isl.UnionMap, writes: isl.UnionMap, sched: isl.UnionMap
          ) -> tuple[isl.UnionMap, isl.UnionMap]:
    # flow: { W[...] -> R[...] }: the last write before each read
    flow = _dataflow(reads, writes, sched, must=True)
    if flow is None:  # every earlier write, and every read possibly live-in
        return _memory_based(writes, reads, sched), reads
    return flow.get_may_dependence(), flow.get_may_no_source()


def _anti(reads: isl.UnionMap, writes: isl.UnionMap, sched: isl.UnionMap) -> isl.UnionMap:
    # anti: { R[...] -> W[...] }: reads that precede each overwrite
    flow = _dataflow(writes, reads, sched, must=False)
    return _memory_based(reads, writes, sched) if flow is None else flow.get_may_dependence()


def _output(writes: isl.UnionMap, sched: isl.UnionMap) -> isl.UnionMap:
    # output: { W1[...] -> W2[...] }: the previous write of the same element
    flow = _dataflow(writes, writes, sched, must=True)
    return _memory_based(writes, writes, sched) if flow is None else flow.get_may_dependence()


def compute_deps(scop: Scop) -> Deps:
    reads = scop.accesses("read")
    writes = scop.accesses("write")
    sched = scop.original_schedule()
    flow, live_in = _flow(reads, writes, sched)
    locals_order = _locals_order(scop, sched)
    return Deps(flow=flow.coalesce(), anti=_anti(reads, writes, sched).coalesce(),
                output=_output(writes, sched).coalesce(), live_in=live_in.coalesce(),
                locals_order=locals_order)


def keeps_dependences(before: Scop, after: Scop) -> bool:
    """Every dependence of ``before``'s program order holds in ``after``'s (a rewrite that
    reorders statements: scop.epilogue, scop.fuse)."""
    validity = compute_deps(before).validity
    sched = after.original_schedule()
    times = validity.apply_domain(sched).apply_range(sched)
    for m in _maps(times):
        lex_ge = isl.Map.lex_ge(m.get_space().domain()).align_params(m.get_space())
        if not m.intersect(lex_ge).is_empty():
            return False
    return True


def _locals_order(scop: Scop, sched: isl.UnionMap) -> isl.UnionMap:
    """All dependences through unexpanded local scalars: ``{ S2[i] -> S4[i', j] : ... }``."""
    local_cells = isl.UnionSet.empty(scop.context.get_space())
    for a in scop.arrays:
        if a.kind == "local":
            local_cells = local_cells.union(isl.UnionSet(f"{{ {a.name}[] }}"))
    if local_cells.is_empty():
        return isl.UnionMap.empty(scop.context.get_space())
    reads = scop.accesses("read", expand_locals=False).intersect_range(local_cells)
    writes = scop.accesses("write", expand_locals=False).intersect_range(local_cells)
    flow, _ = _flow(reads, writes, sched)
    anti = _anti(reads, writes, sched)
    return flow.union(anti).union(_output(writes, sched)).coalesce()


def local_flow(scop: Scop, names: set[str] | None = None) -> isl.UnionMap:
    """``{ S[i] -> T[j] }``: values passed through the local scalars ``names`` (default: all
    of them), expanded over their scope."""
    if names is None:
        names = {a.name for a in scop.arrays if a.kind == "local"}
    if not names:
        return isl.UnionMap.empty(scop.context.get_space())

    def only_locals(umap: isl.UnionMap) -> isl.UnionMap:
        out = isl.UnionMap.empty(umap.get_space())
        for m in _maps(umap):
            if m.get_tuple_name(isl.dim_type.out) in names:
                out = out.union(isl.UnionMap.from_map(m))
        return out

    flow, _ = _flow(only_locals(scop.accesses("read")), only_locals(scop.accesses("write")),
                    scop.original_schedule())
    return flow


def zero_init_arrays(scop: Scop, deps: Deps) -> frozenset[str]:
    """Outputs and temporaries that must start as zeros: some element is read before any
    write, or not every element is written (the reference starts every output at zero)."""
    out = set()
    live_arrays = {m.get_tuple_name(isl.dim_type.out) for m in _maps(deps.live_in)}
    writes = scop.accesses("write")
    for a in scop.arrays:
        if a.kind not in ("out", "temp"):
            continue
        if a.name in live_arrays:
            out.add(a.name)
            continue
        if a.kind == "out" and not _fully_written(scop, writes, a.name):
            out.add(a.name)
    return frozenset(out)


def _fully_written(scop: Scop, writes: isl.UnionMap, name: str) -> bool:
    from .checks import array_bounds

    written = writes.range().coalesce()
    bounds = isl.UnionSet.from_set(array_bounds(scop, name).intersect_params(scop.context))
    return bounds.is_subset(written)


def _maps(umap: isl.UnionMap) -> list[isl.Map]:
    out: list[isl.Map] = []
    umap.foreach_map(out.append)
    return out
