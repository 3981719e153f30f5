"""Initializations fused into register tiles: a statement that sets the cells a register
tile accumulates into (conv's ``Y[b, f, oy, ox] = 0``, a bias) runs inside the tile, just
before its reduction, instead of in a pass of its own over the whole array that the tiles
then read back; the C emitter starts the tile's accumulators from the init's values
(``codegen_c.tiles``), so the cells are written once.

The transformation is a schedule tree edit: the bands above the accumulators' mark get
the init statement's instances, each at the place of the tile that accumulates into its
cell, and the mark gets a sequence: the init's loops (under an ``init`` mark), then the
reduction. It is applied only when each cell's updates all run in one execution of the
tile (the untiled variants, not those whose reduction tiles split a cell's sum) and the
moved instances keep every dependence. Measured: docs/design.md, point 5e."""

from __future__ import annotations

import islpy as isl

from ..scop.deps import Deps
from ..scop.exprs import Load
from ..scop.ir import Scop
from .legality import is_legal
from .tree import (
    PROMOTE,
    InitMark,
    is_band,
    loop_mark,
    mark_id,
    node_at,
    node_path,
    statement_names,
)

_MARK = isl.schedule_node_type.mark
_FILTER = isl.schedule_node_type.filter
_SEQUENCE = isl.schedule_node_type.sequence


def fuse_inits(schedule: isl.Schedule, scop: Scop, deps: Deps) -> tuple[isl.Schedule, list[str]]:
    """Fuse each register tile's init statement into the tile (module docstring); the new
    schedule and what was fused, as ``"S0 set in S1's register tiles"``."""
    fused: list[str] = []
    for path in _promote_marks(schedule):
        result = _fuse_one(schedule, path, scop, deps)
        if result is not None:
            schedule, note = result
            fused.append(note)
    return schedule, fused


def _promote_marks(schedule: isl.Schedule) -> list[tuple[int, ...]]:
    """Paths of the accumulators' marks (fusing at one changes no path to another: the
    nodes it adds lie at the mark, and no such mark lies under another)."""
    out: list[tuple[int, ...]] = []

    def visit(node: isl.ScheduleNode) -> bool:
        if node.get_type() == _MARK and getattr(loop_mark(node), "role", "") == PROMOTE:
            out.append(node_path(node))
        return True

    schedule.get_root().foreach_descendant_top_down(visit)
    return out


def _fuse_one(schedule: isl.Schedule, path: tuple[int, ...], scop: Scop, deps: Deps
              ) -> tuple[isl.Schedule, str] | None:
    mark = node_at(schedule, path)
    reaching = mark.get_domain()
    names = statement_names(reaching)
    if len(names) != 1:
        return None
    (name,) = names
    update = scop.statement(name)
    if not isinstance(update.target, Load) or update.op == "=":
        return None
    writes = scop.accesses("write").intersect_domain(scop.domain())
    mine = writes.intersect_domain(reaching)
    for init in scop.statements:
        if not _is_init(scop, init.name, update.target.array, names):
            continue
        init_domain = isl.UnionSet.from_set(init.domain)
        init_writes = writes.intersect_domain(init_domain)
        cells = init_writes.range().intersect(mine.range())
        covered = init_writes.intersect_range(cells)
        if covered.is_empty() or not covered.is_injective():
            continue
        # every update of a covered cell accumulates under this mark
        if not writes.intersect_range(cells).subtract_domain(init_domain).domain() \
                .is_subset(reaching):
            continue
        updates = covered.apply_range(mine.reverse())  # init -> the updates of its cell
        if not updates.apply_range(mark.get_prefix_schedule_union_map()).is_single_valued():
            continue  # some of a cell's updates run in another execution of the tile
        one = updates.lexmin()
        fused = _rebuild(schedule, path, covered.domain(), one, init.iters)
        # the schedule kept every other dependence (the reductions' reordering included,
        # which plain validity does not allow): check those of the moved instances
        moved = covered.domain()
        own = deps.validity.intersect_domain(moved).union(
            deps.validity.intersect_range(moved))
        if fused is not None and is_legal(fused, own):
            return fused, f"{init.name} set in {name}'s register tiles"
    return None


def _is_init(scop: Scop, name: str, array: str, updates: set[str]) -> bool:
    """Statement ``name`` sets cells of ``array`` from values that do not read it."""
    if name in updates:
        return False
    stmt = scop.statement(name)
    if stmt.op != "=" or not isinstance(stmt.target, Load) or stmt.target.array != array:
        return False
    return not any(isinstance(e, Load) and e.array == array for e in stmt.value.walk())


def _rebuild(schedule: isl.Schedule, path: tuple[int, ...], moved: isl.UnionSet,
             one: isl.UnionMap, iters: tuple[str, ...]) -> isl.Schedule | None:
    """The schedule with the instances ``moved`` (an init's) taken out of their own branch
    and run at the mark at ``path``, before its subtree, each where ``one`` (moved -> an
    update instance below the mark) runs; None where the tree has a node this cannot
    copy. The tree is copied node by node (isl cannot widen a filter in place)."""
    to_update = isl.UnionPwMultiAff.from_union_map(one)

    def walk(old: isl.ScheduleNode, new: isl.ScheduleNode, where: tuple[int, ...]
             ) -> isl.ScheduleNode | None:
        """Copy the subtree at ``old`` onto the leaf ``new``; the node at ``new``'s place.
        ``where``: ``old``'s path while it is on the mark's path, else None."""
        kind = old.get_type()
        if where == path:  # the mark: the moved instances' loops, then the mark's tree
            node = _init_loops(new, moved, len(iters))
            below = walk(old, node, None)
            return None if below is None else below.parent().parent()
        if kind == isl.schedule_node_type.leaf:
            return new
        if kind in (_SEQUENCE, isl.schedule_node_type.set):
            on = path[len(where)] if where is not None else -1
            filters = isl.UnionSetList.alloc(old.get_ctx(), old.n_children())
            for k in range(old.n_children()):
                mine = old.child(k).filter_get_filter()
                filters = filters.add(mine.union(moved) if k == on else mine.subtract(moved))
            node = new.insert_sequence(filters) if kind == _SEQUENCE else \
                new.insert_set(filters)
            for k in range(old.n_children()):
                below = walk(old.child(k).child(0), node.child(k).child(0),
                             (*where, k, 0) if k == on else None)
                if below is None:
                    return None
                node = below.parent().parent()
            return node
        if kind == _MARK:
            node = new.insert_mark(old.mark_get_id())
        elif is_band(old):
            node = _copy_band(old, new, to_update if where is not None else None)
        else:  # a filter outside a sequence, a context, an extension: not made here
            return None
        below = walk(old.child(0), node.child(0), (*where, 0) if where is not None else None)
        return None if below is None else below.parent()

    copy = isl.Schedule.from_domain(schedule.get_domain()).get_root().child(0)
    done = walk(schedule.get_root().child(0), copy, (0,))
    return None if done is None else done.get_schedule()


def _init_loops(leaf: isl.ScheduleNode, moved: isl.UnionSet, n: int) -> isl.ScheduleNode:
    """At ``leaf``: a sequence of the moved instances, in a parallel band over their ``n``
    iterators, then the rest; returns the leaf of the rest."""
    rest = leaf.get_domain().subtract(moved)
    filters = isl.UnionSetList.alloc(leaf.get_ctx(), 2).add(moved).add(rest)
    node = leaf.insert_sequence(filters).child(0).child(0)
    node = node.insert_partial_schedule(_identity(moved)).band_set_permutable(1)
    for k in range(n):
        node = node.band_member_set_coincident(k, 1)
    node = node.insert_mark(mark_id(InitMark()))
    return node.parent().parent().child(1).child(0)


def _copy_band(old: isl.ScheduleNode, leaf: isl.ScheduleNode,
               to_update: isl.UnionPwMultiAff | None) -> isl.ScheduleNode:
    """Band ``old`` inserted at ``leaf`` with its flags and options; with ``to_update``, its
    schedule extended to the moved instances (each where its update runs)."""
    mupa = old.band_get_partial_schedule()
    if to_update is not None:
        mupa = mupa.union_add(mupa.pullback_union_pw_multi_aff(to_update))
    node = leaf.insert_partial_schedule(mupa).band_set_permutable(old.band_get_permutable())
    for k in range(old.band_n_member()):
        node = node.band_member_set_coincident(k, old.band_member_get_coincident(k))
        node = node.band_member_set_ast_loop_type(k, old.band_member_get_ast_loop_type(k))
    return node.band_set_ast_build_options(old.band_get_ast_build_options())


def _identity(domain: isl.UnionSet) -> isl.MultiUnionPwAff:
    """``{ S[i0, ..] -> [i0, ..] }`` on ``domain`` (one statement's instances)."""
    sets: list[isl.Set] = []
    domain.foreach_set(sets.append)
    (dom,) = sets
    maff = isl.MultiAff.identity_on_domain_space(dom.get_space())
    return isl.MultiUnionPwAff.from_multi_pw_aff(
        isl.MultiPwAff.from_multi_aff(maff).intersect_domain(dom))
