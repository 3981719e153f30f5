"""The GPU target's schedule of an automatic variant: isl's own for the variant's region
(``gpu_schedule``; the CPU policy's tiling and threads do not apply), its parallel members
ordered so that an outer product comes innermost, then marked.

A work-item's register tile covers the two innermost mapped members (regtiles.py), and it
pays where each operand of the reduction below is invariant along one of them: then a step
of the reduction loads TM + TN values for TM x TN multiply-adds (matmul's ``A[i, k]`` along
``j``, ``B[k, j]`` along ``i``). isl orders conv2d's parallel members as the loops are written,
``b, f, oy, ox``; its two innermost, the output rows and columns, both move the input's window
``X[b, c, oy + ky, ox + kx]``, so each multiply-add loads an input value. With the output
channels moved inside, ``b, oy, f, ox``, the weights ``Wt[f, c, ky, kx]`` move along ``f``
only and the input along ``ox`` only: the implicit GEMM (output channels x output pixels x
input channels and window) that cuDNN's kernels compute.

So, in a permutable band whose statements have a loop below it (a reduction), when the two
innermost of its leading coincident members are not such a pair and moving an outer
coincident member next to the innermost one makes one, the member moves (the innermost,
usually the stride-1 loop that keeps loads coalesced, stays). Any order of a permutable
band's members keeps its dependences. Members are matched to loop iterators through the
band's schedule, which must be one iterator per member and statement; anything else keeps
isl's order. The recipe's ``gpu(product_order=False)`` keeps isl's order always.
"""

from __future__ import annotations

import islpy as isl

from ..parametric.variants import Variant
from ..schedule.auto import original_order, schedule_constraints
from ..schedule.bands import member_dependence
from ..schedule.transforms import reorder_band
from ..schedule.tree import is_band, map_bands, mark_loops
from ..scop.deps import Deps
from ..scop.ir import Load, Scop


def gpu_schedule(scop: Scop, deps: Deps, variant: Variant, outer_coincidence: bool,
                 computed: isl.Schedule | None = None, product_order: bool = True
                 ) -> isl.Schedule:
    """isl's own schedule for the variant's region (none of the CPU policy's edits), its
    parallel members in outer-product order (with ``product_order``), marked;
    with ``outer_coincidence`` isl looks for parallelism in the outermost band first (PPCG's
    setting for GPUs). ``computed``: isl's schedule (default options) under the operator's
    context, reused for a variant over that context without outer coincidence."""
    ctx = variant.region.get_ctx()
    if computed is not None and not outer_coincidence and \
            not ctx.get_schedule_outer_coincidence() and variant.region.is_equal(scop.context):
        schedule = computed
    else:
        old = ctx.get_schedule_outer_coincidence()
        ctx.set_schedule_outer_coincidence(int(outer_coincidence))
        try:
            schedule = schedule_constraints(scop, deps, variant.region).compute_schedule()
        except isl.Error:
            schedule = original_order(scop, variant.region)
        finally:
            ctx.set_schedule_outer_coincidence(old)
    return mark_loops(outer_product_order(schedule, scop) if product_order else schedule)


def outer_product_order(schedule: isl.Schedule, scop: Scop) -> isl.Schedule:
    """``schedule`` with the parallel members of each band reordered as the module says."""

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        order = _order(node, scop)
        return reorder_band(node, order) if order is not None else node

    return map_bands(schedule, visit)


def _order(band: isl.ScheduleNode, scop: Scop) -> list[int] | None:
    """The new order of ``band``'s members, or None to keep it."""
    if not is_band(band) or not band.band_get_permutable():
        return None
    n = band.band_n_member()
    lead = 0
    while lead < n and band.band_member_get_coincident(lead):
        lead += 1
    if lead < 3:
        return None
    roles = _member_iterators(band, scop, lead)
    if roles is None:
        return None
    inner = lead - 1
    if _outer_product(roles, scop, lead - 2, inner):
        return None
    for p in range(lead - 3, -1, -1):
        if _outer_product(roles, scop, p, inner):
            rest = [k for k in range(lead) if k not in (p, inner)]
            return [*rest, p, inner, *range(lead, n)]
    return None


def _member_iterators(band: isl.ScheduleNode, scop: Scop, lead: int
                      ) -> dict[str, list[str]] | None:
    """Per statement of the band with loops below it (a reduction), the iterator each of the
    ``lead`` members moves (``bands.member_dependence``); None when some member of some
    statement moves other than one iterator, or when no statement reduces below the band."""
    out: dict[str, list[str]] = {}
    for name, members in member_dependence(band, scop).items():
        if any(len(moved) != 1 for moved in members[:lead]):
            return None
        out[name] = [next(iter(moved)) for moved in members[:lead]]
    reducing = {name: its for name, its in out.items()
                if len(scop.statement(name).iters) > len(its)}
    return reducing or None


def _outer_product(roles: dict[str, list[str]], scop: Scop, p: int, q: int) -> bool:
    """Whether members ``p`` and ``q`` form an outer product for every reducing statement:
    each array it reads (not one the band's statements write) moves along one of them at
    most, some along ``p`` and some along ``q``."""
    written = {s.target.array for s in (scop.statement(name) for name in roles)
               if isinstance(s.target, Load)}
    for name, its in roles.items():
        along_p = along_q = False
        for e in scop.statement(name).value.walk():
            if not isinstance(e, Load) or e.array in written:
                continue
            uses = set().union(*(ix.vars() for ix in e.index)) if e.index else set()
            moves_p, moves_q = its[p] in uses, its[q] in uses
            if moves_p and moves_q:
                return False
            along_p |= moves_p
            along_q |= moves_q
        if not (along_p and along_q):
            return False
    return True


__all__ = ["gpu_schedule", "outer_product_order"]
