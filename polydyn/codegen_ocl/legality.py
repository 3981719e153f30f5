"""The check that every launch is free of races: no dependence joins two work-items of one
launch.

A kernel's ``placement`` says which launch (host loop values) and which work-item (values of
the mapped members; for a lane kernel, which work-group) runs each instance. Work-items of
one launch run in no particular order (a GPU runs them at once; PoCL one after another), so
every dependence between two instances of a kernel must keep the mapped members' values: its
distance, projected onto the mapped schedule dimensions, is zero. Dependences between
launches are ordered by the launches themselves, and those within a work-item by its code:
a register-tiled kernel (regtiles.py) runs a work-item's instances in a new order, its
``order`` (a flat schedule), which must run the source of every dependence first.
"""

from __future__ import annotations

from typing import Any

import islpy as isl

from ..errors import InternalError


def races(dependences: isl.UnionMap, placement: isl.UnionMap, n_host: int) -> isl.UnionMap:
    """``{ src -> sink }``: the dependences between two instances that ``placement``
    (``{ instance -> [host values, mapped values] }``) puts on different work-items of one
    launch (same host values, some mapped value differs)."""
    domain = placement.domain()
    inside = dependences.intersect_domain(domain).intersect_range(domain)
    out = isl.UnionMap.empty(inside.get_space())
    if placement.is_empty():
        return out
    n_dims = isl.Set.from_union_set(placement.range()).dim(isl.dim_type.set)
    if n_dims == n_host:  # one work-item per launch
        return out
    xs, ys = [f"x{k}" for k in range(n_dims)], [f"y{k}" for k in range(n_dims)]
    same = [f"{x} = {y}" for x, y in zip(xs[:n_host], ys[:n_host], strict=True)]
    differ = " or ".join(f"{x} != {y}" for x, y in zip(xs[n_host:], ys[n_host:], strict=True))
    apart = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(ys)}] : "
                    f"{' and '.join([*same, f'({differ})'])} }}")
    pairs = inside.apply_domain(placement).apply_range(placement)  # { [h, m] -> [h', m'] }
    crossing = pairs.intersect(isl.UnionMap.from_map(apart.align_params(pairs.get_space())))
    if crossing.is_empty():
        return out
    # the instance pairs themselves, for the message
    return inside.intersect(placement.apply_range(crossing).apply_range(placement.reverse()))


def out_of_order(dependences: isl.UnionMap, order: isl.UnionMap) -> isl.UnionMap:
    """``{ src -> sink }``: the dependences between two instances of ``order``'s domain that
    ``order`` (``{ instance -> [flat schedule] }``) does not run source first."""
    domain = order.domain()
    inside = dependences.intersect_domain(domain).intersect_range(domain)
    pairs = inside.apply_domain(order).apply_range(order)  # { [flat] -> [flat] }
    if pairs.is_empty():
        return isl.UnionMap.empty(inside.get_space())
    space = isl.Set.from_union_set(order.range()).get_space()
    before = isl.UnionMap.from_map(isl.Map.lex_lt(space).align_params(pairs.get_space()))
    wrong = pairs.subtract(before)
    return inside.intersect(order.apply_range(wrong).apply_range(order.reverse()))


def check_launches(kernels: list[Any], dependences: isl.UnionMap, name: str) -> None:
    """Raise InternalError when some kernel of ``kernels`` (KernelSpec, fallbacks and
    alternatives included) has a dependence between two of its work-items."""
    for spec in kernels:
        for k in spec.family():
            if k.placement is None:
                continue
            found = races(dependences, k.placement, k.n_host)
            if not found.is_empty():
                raise InternalError(f"{name}: kernel {k.name} maps a loop that carries a "
                                    f"dependence onto work-items: {found}")
            order = getattr(k, "order", None)
            found = out_of_order(dependences, order) if order is not None else None
            if found is not None and not found.is_empty():
                raise InternalError(f"{name}: kernel {k.name} runs the instances of a "
                                    f"dependence in the wrong order: {found}")
