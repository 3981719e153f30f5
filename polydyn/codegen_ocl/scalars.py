"""Local scalars that live across kernel launches or work-items, kept in global memory.

A local scalar is private to an iteration of its scope (the loops around its first
assignment); inside one kernel it is a private variable of the work-item, which holds the
value when the assignment and its reads run in the same launch and the same work-item. The
mapping can put them apart: in different kernels (a sequence split into launches, an
assignment before a parallel loop), in different iterations of a host loop around one kernel,
or in different work-items when an outer member (a skewed host loop) carries the dependence
and the mapped members need not be coincident for it. Such a scalar is stored expanded, as
the dependence analysis sees it (``acc[i]`` for scope ``(i)``): a global buffer over the
bounding box of its scope iterators, allocated per call like a temporary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import islpy as isl
import numpy as np

from ..scop.deps import local_flow
from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Scalar, Scop, Statement
from .plan import KernelSpec
from .pyexpr import pw_aff_to_py, set_to_py


@dataclass(frozen=True)
class SpilledScalar:
    """A local scalar stored in the global buffer ``pd_s_<name>``, indexed by its scope
    iterators: ``(v0 - lo0) * extent1 + (v1 - lo1)``. ``lo``/``extent`` are isl AST
    expressions in the syms (for the kernels); ``elements_py`` the buffer size (host)."""

    name: str
    dtype: str
    scope: tuple[str, ...]
    lo: tuple[Any, ...] = field(compare=False)
    extent: tuple[Any, ...] = field(compare=False)
    elements_py: str = "1"

    @property
    def buffer(self) -> str:
        return f"pd_s_{self.name}"

    @property
    def itemsize(self) -> int:
        return np.dtype(NUMPY_NAME[self.dtype]).itemsize


def scalar_users(scop: Scop) -> dict[str, set[str]]:
    """Statements that read or write each local scalar."""
    users: dict[str, set[str]] = {}
    for stmt in scop.statements:
        for name in _scalars_of(stmt):
            if scop.array(name).kind == "local":
                users.setdefault(name, set()).add(stmt.name)
    return users


def spilled_scalars(scop: Scop, kernels: list[list[KernelSpec]]) -> list[SpilledScalar]:
    """The local scalars whose values cross a private variable's reach in some variant
    (``kernels``: each variant's kernels): their statements fall in two or more kernels, or
    a value flows between two launches (host loop iterations) or two work-items of one."""
    users = scalar_users(scop)
    out = []
    for name, stmts in sorted(users.items()):
        flow = None
        for variant in kernels:
            using = [k for k in variant if stmts & set(k.statements)]
            if len(using) > 1:
                break
            if using:
                flow = local_flow(scop, {name}) if flow is None else flow
                if _crosses_placement(flow, using[0].placement):
                    break
        else:
            continue
        out.append(_spill(scop, name, stmts))
    return out


def spills_of_variants(scop: Scop, kernels: list[list[KernelSpec]],
                       spilled: list[SpilledScalar]) -> list[frozenset[str]]:
    """The spilled scalars each variant's kernels keep in global memory: a lane kernel
    keeps its scalars in the lanes, and a variant that uses none needs no buffer."""
    users = scalar_users(scop)
    out = []
    for variant in kernels:
        specs = [x for k in variant for x in k.family() if not x.lanes]
        out.append(frozenset(sc.name for sc in spilled
                             if any(users[sc.name] & set(k.statements) for k in specs)))
    return out


def _crosses_placement(flow: isl.UnionMap, placement: isl.UnionMap) -> bool:
    """Whether some value of ``flow`` goes from one launch or work-item of a kernel
    (``placement``: instance -> launch and work-item) to another."""
    places = flow.apply_domain(placement).apply_range(placement)
    if places.is_empty():
        return False
    return not places.is_subset(places.domain().union(places.range()).identity())


def _spill(scop: Scop, name: str, stmts: set[str]) -> SpilledScalar:
    array = scop.array(name)
    scope = tuple(array.scope)
    box = None  # { [scope values] } over every statement using the scalar
    for sname in sorted(stmts):
        image = _scope_image(scop.statement(sname), scope, scop.context)
        box = image if box is None else box.union(image)
    if box is None or box.is_empty() or not scope:
        return SpilledScalar(name, array.dtype, scope, (), (), "1")
    box = box.coalesce()
    where = box.params()
    build = isl.AstBuild.from_context(where)
    lo, extent, sizes = [], [], []
    for d in range(len(scope)):
        first, last = box.dim_min(d), box.dim_max(d)
        length = last.sub(first).add_constant_val(isl.Val.one(box.get_ctx()))
        lo.append(build.expr_from_pw_aff(first))
        extent.append(build.expr_from_pw_aff(length))
        sizes.append(f"max(1, {pw_aff_to_py(length, where)})")
    elements = f"({' * '.join(sizes)} if {set_to_py(where)} else 1)"
    return SpilledScalar(name, array.dtype, scope, tuple(lo), tuple(extent), elements)


def _scope_image(stmt: Statement, scope: tuple[str, ...], context: isl.Set) -> isl.Set:
    """``{ [scope values] }`` of the statement's instances (scope iterators in order)."""
    dom = stmt.domain.intersect_params(context)
    xs = [f"pd_x{d}" for d in range(dom.dim(isl.dim_type.set))]
    kept = ", ".join(xs[stmt.iters.index(v)] for v in scope)
    proj = isl.Map(f"{{ [{', '.join(xs)}] -> [{kept}] }}")
    return dom.reset_tuple_id().apply(proj)


def _scalars_of(stmt: Statement) -> set[str]:
    names = {e.name for e in stmt.value.walk() if isinstance(e, Scalar)}
    if isinstance(stmt.target, Scalar):
        names.add(stmt.target.name)
    return names
