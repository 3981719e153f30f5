"""How a parallel loop's work spreads over its iterations, from isl's view of the statement
instances below it (``Instance.iterators``): a loop over a triangle (syrk's column tiles, the
rows of a causal mask) gives its iterations unequal work, so the C printer shares them out
cyclically rather than in equal blocks."""

from __future__ import annotations

import islpy as isl

from ..schedule.reductions import CARRY_MAX_OPERATIONS
from ..scop.deps import operations_quota
from .tree import Loop, instances


def uneven_work(n: Loop) -> bool:
    """Whether the trip count of a loop inside ``n`` changes with ``n``'s iterator at more
    than one of its values. The last partial tile of a tiled loop changes it at one value
    only (``min(c0 + 47, N - 1) - c0``), and does not count."""
    maps = [inst.iterators for inst in instances(n.body) if inst.iterators is not None]
    if not maps:
        return False
    try:
        with operations_quota(maps[0].get_ctx(), CARRY_MAX_OPERATIONS):
            return any(_moving_extent(m.domain(), n.iterator) for m in maps)
    except isl.Error:  # past the quota too: equal blocks, as for any other loop
        return False


def _moving_extent(loops: isl.Set, it: str) -> bool:
    """Over ``loops`` (the loop values at which a statement runs, ``{ [c0, c1, ...] }``):
    some loop inside ``it`` has an extent that depends on ``it`` on a piece holding two of its
    values."""
    pos = loops.find_dim_by_name(isl.dim_type.set, it)
    if pos < 0:
        return False
    dims = loops.dim(isl.dim_type.set)
    one = isl.Val.one(loops.get_ctx())
    for d in range(pos + 1, dims):
        # loop d's extent as a function of the loops around it (made parameters)
        inner = loops.project_out(isl.dim_type.set, d + 1, dims - d - 1)
        first = inner.dim(isl.dim_type.param)
        inner = inner.move_dims(isl.dim_type.param, first, isl.dim_type.set, 0, d)
        extent = inner.dim_max(0).sub(inner.dim_min(0)).add_constant_val(one)
        at = extent.get_space().find_dim_by_name(isl.dim_type.param, it)
        for piece, aff in extent.get_pieces():
            if aff.get_coefficient_val(isl.dim_type.param, at).is_zero():
                continue
            values = piece.move_dims(isl.dim_type.set, 0, isl.dim_type.param, at, 1)
            pairs = isl.Map.from_domain_and_range(values, values)
            if not pairs.intersect(isl.Map.lex_lt(values.get_space())).is_empty():
                return True
    return False
