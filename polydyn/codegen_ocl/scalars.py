"""Local scalars that live across kernel launches, kept in global memory.

A local scalar is private to an iteration of its scope (the loops around its first
assignment); inside one kernel that is a private variable of the work-item, since the mapped
members are coincident for the scalar's (expanded) dependences too. When the mapping puts its
writes and reads in different kernels (a sequence split into launches, a host loop around
them, an assignment before a parallel loop), a private variable would lose the value between
launches. Such a scalar is stored expanded, as the dependence analysis sees it
(``acc[i]`` for scope ``(i)``): a global buffer over the bounding box of its scope
iterators, allocated per call like a temporary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import islpy as isl
import numpy as np

from ..scop.ir import NUMPY_NAME, Scalar, Scop, Statement
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


def spilled_scalars(scop: Scop, kernel_statements: list[list[tuple[str, ...]]]
                    ) -> list[SpilledScalar]:
    """The local scalars whose statements fall in two or more kernels of some variant;
    ``kernel_statements`` holds, per variant, the statements of each kernel."""
    users = scalar_users(scop)
    out = []
    for name, stmts in sorted(users.items()):
        if any(sum(1 for k in kernels if stmts & set(k)) > 1 for kernels in kernel_statements):
            out.append(_spill(scop, name, stmts))
    return out


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
