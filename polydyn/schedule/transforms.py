"""Pure schedule-tree edits: permuting a band's members, tiling with full-tile isolation,
dropping parallel flags."""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from .tree import is_band, map_bands


def multi_val(space: isl.Space, values: Sequence[int]) -> isl.MultiVal:
    mv = isl.MultiVal.zero(space)
    for k, v in enumerate(values):
        mv = mv.set_val(k, isl.Val.int_from_si(space.get_ctx(), int(v)))
    return mv


def _as_set(uset: isl.UnionSet) -> isl.Set | None:
    sets: list[isl.Set] = []
    uset.foreach_set(sets.append)
    if len(sets) != 1:
        return None
    return sets[0]


def full_tiles(node: isl.ScheduleNode, sizes: Sequence[int],
               along: Sequence[int] | None = None) -> isl.Set | None:
    """``[[outer] -> [t...]]``: the tiles (as the tile band's scaled values) in which every
    statement of the band has an instance at every point, for the band at ``node`` before
    it is tiled (as PPCG isolates full tiles). Per statement: a tile full for one statement
    and partial for another is not full (isl then drops the partial statement's instances
    from the isolated code). With ``along``, only those members must be full (of the
    others, a tile's first point must exist)."""
    box = [s if along is None or k in along else 1 for k, s in enumerate(sizes)]
    domain = node.get_domain()
    prefix = node.get_prefix_schedule_union_map().intersect_domain(domain)
    # band: { S[i] -> [x...] } (the band's own values, before tiling)
    band = node.band_get_partial_schedule_union_map().intersect_domain(domain)
    tile_band = node.band_tile(multi_val(node.band_get_space(), sizes))
    tiles_map = tile_band.band_get_partial_schedule_union_map().intersect_domain(domain)
    tiles = _as_set(prefix.reverse().apply_range(tiles_map).wrap())
    if tiles is None:
        return None
    full = tiles
    statements: list[isl.Set] = []
    domain.foreach_set(statements.append)
    for stmt in statements:
        one = isl.UnionSet.from_set(stmt)
        image = _as_set(prefix.intersect_domain(one).reverse().apply_range(
            band.intersect_domain(one)).wrap())
        if image is None:
            return None
        full = _full_for(full, image, box)
    return full.coalesce()


def _full_for(tiles: isl.Set, image: isl.Set, sizes: Sequence[int]) -> isl.Set:
    """The tiles of ``tiles`` whose every point lies in ``image`` (one statement's)."""
    n_outer = tiles.unwrap().dim(isl.dim_type.in_)
    outer = ", ".join(f"o{k}" for k in range(n_outer))
    ts = [f"t{k}" for k in range(len(sizes))]
    xs = [f"x{k}" for k in range(len(sizes))]
    cons = " and ".join(f"{t} <= {x} < {t} + {s}" for t, x, s in zip(ts, xs, sizes))
    # box: { [[o] -> [t]] -> [[o] -> [x]] : t <= x < t + size }
    box = isl.Map(f"{{ [[{outer}] -> [{', '.join(ts)}]] -> [[{outer}] -> [{', '.join(xs)}]] "
                  f": {cons} }}")
    box = box.align_params(image.get_space())
    not_full = box.intersect_range(image.complement()).domain()
    return tiles.subtract(not_full.align_params(tiles.get_space()))


def tile_band(node: isl.ScheduleNode, sizes: Sequence[int], isolate: bool = True,
              full_along: Sequence[int] | None = None) -> isl.ScheduleNode:
    """Tile the band at ``node``; with ``isolate``, full tiles are generated apart, without
    min/max bounds (with ``full_along``, tiles full along those members, whatever their
    extent along the others). Returns the tile band (its child is the point band)."""
    full = full_tiles(node, sizes, full_along) if isolate else None
    node = node.band_tile(multi_val(node.band_get_space(), sizes))
    if full is not None and not full.is_empty():
        option = isl.UnionSet.from_set(full.set_tuple_name("isolate"))
        node = node.band_set_ast_build_options(option)
    return node


def reorder_band(node: isl.ScheduleNode, order: list[int]) -> isl.ScheduleNode:
    """Permute the members of a band: member ``k`` becomes member ``order[k]`` (the
    coincident flags follow their members, the band stays as permutable as it was)."""
    n = node.band_n_member()
    coincident = [bool(node.band_member_get_coincident(k)) for k in range(n)]
    permutable = node.band_get_permutable()
    mupa = node.band_get_partial_schedule()
    lst = isl.UnionPwAffList.alloc(mupa.get_ctx(), n)
    for k in order:
        lst = lst.add(mupa.get_union_pw_aff(k))
    new = isl.MultiUnionPwAff.from_union_pw_aff_list(mupa.get_space(), lst)
    node = node.delete().insert_partial_schedule(new).band_set_permutable(int(permutable))
    for k, old in enumerate(order):
        node = node.band_member_set_coincident(k, int(coincident[old]))
    return node


def drop_parallel(schedule: isl.Schedule) -> isl.Schedule:
    """Every band member sequential: for regions where threads do not pay."""

    def seq(node: isl.ScheduleNode) -> isl.ScheduleNode:
        for k in range(node.band_n_member()):
            node = node.band_member_set_coincident(k, 0)
        return node

    return map_bands(schedule, seq)


def all_bands(schedule: isl.Schedule) -> list[isl.ScheduleNode]:
    """Every band node, in pre-order (a band before the bands below it)."""
    out: list[isl.ScheduleNode] = []

    def walk(node: isl.ScheduleNode) -> None:
        if is_band(node):
            out.append(node)
        for k in range(node.n_children()):
            walk(node.child(k))

    walk(schedule.get_root())
    return out


def outermost_bands(schedule: isl.Schedule) -> list[isl.ScheduleNode]:
    """Band nodes with no band above them."""
    out: list[isl.ScheduleNode] = []

    def walk(node: isl.ScheduleNode) -> None:
        if is_band(node):
            out.append(node)
            return
        for k in range(node.n_children()):
            walk(node.child(k))

    walk(schedule.get_root())
    return out
