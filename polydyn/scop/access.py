"""isl relations of a Scop: domains, access relations and the original (program-order) schedule."""

from __future__ import annotations

import islpy as isl

from .ir import Aff, Cond, Guard, Load, Loop, Node, Scalar, Scop, Statement


def loop_constraints(loop: Loop) -> str:
    """isl text for ``var in range(lo, hi, step)``."""
    v, lo, hi = loop.var, loop.lo.to_isl(), loop.hi.to_isl()
    if loop.step > 0:
        text = f"{lo} <= {v} < {hi}"
    else:
        text = f"{hi} < {v} <= {lo}"
    if abs(loop.step) != 1:
        text += f" and exists (e_{v}: {v} = {lo} + {loop.step} * e_{v})"
    return text


def make_domain(params: str, name: str, iters: tuple[str, ...], constraints: list[str],
                context: isl.Set) -> isl.Set:
    """``params -> { name[iters] : constraints }`` intersected with the context."""
    body = " and ".join(f"({c})" for c in constraints) if constraints else ""
    text = f"{params} -> {{ {name}[{', '.join(iters)}] {': ' + body if body else ''} }}"
    dom = isl.Set(text)
    return dom.intersect_params(context).coalesce()


def conds_text(conds: list[tuple[Cond, bool]]) -> list[str]:
    return [c.to_isl() if positive else f"not {c.to_isl()}" for c, positive in conds]


def statement_accesses(scop: Scop, stmt: Statement, kind: str,
                       expand_locals: bool = True) -> isl.UnionMap:
    """``{ S[i] -> A[f(i)] }`` for reads (kind="read") or writes (kind="write")."""
    refs: list[Load | Scalar] = []
    if kind == "write":
        refs.append(stmt.target)
    else:
        if stmt.op != "=":
            refs.append(stmt.target)
        refs.extend(e for e in stmt.value.walk() if isinstance(e, Load | Scalar))
    params = scop.param_space_text()
    out = isl.UnionMap.empty(scop.context.get_space())
    for ref in refs:
        if isinstance(ref, Scalar):
            arr = scop.array(ref.name)
            if arr.kind != "local":
                continue  # runtime value arguments are never written: no dependences
            scope = arr.scope if expand_locals else ()
            name, index = ref.name, tuple(Aff.var(v) for v in scope)
        else:
            name, index = ref.array, ref.index
        text = (f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> "
                f"{name}[{', '.join(i.to_isl() for i in index)}] }}")
        access = isl.Map(text).intersect_domain(stmt.domain)
        out = out.union(isl.UnionMap.from_map(access))
    return out.coalesce()


def original_schedule(scop: Scop) -> isl.UnionMap:
    """``{ S[i,j] -> [b0, i, b1, j, b2, 0...] }``, padded to one length (program order)."""
    rows: dict[str, list[str]] = {}

    def walk(nodes: tuple[Node, ...], prefix: list[str]) -> None:
        for pos, node in enumerate(nodes):
            if isinstance(node, Loop):
                dim = node.var if node.step > 0 else f"-{node.var}"
                walk(node.body, [*prefix, str(pos), dim])
            elif isinstance(node, Guard):
                walk(node.then, [*prefix, str(pos), "0"])
                walk(node.orelse, [*prefix, str(pos), "1"])
            else:
                rows[node.name] = [*prefix, str(pos)]

    walk(scop.tree, [])
    width = max((len(r) for r in rows.values()), default=1)
    params = scop.param_space_text()
    sched = isl.UnionMap.empty(scop.context.get_space())
    for stmt in scop.statements:
        row = rows[stmt.name] + ["0"] * (width - len(rows[stmt.name]))
        text = f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> [{', '.join(row)}] }}"
        sched = sched.union(isl.UnionMap.from_map(isl.Map(text).intersect_domain(stmt.domain)))
    return sched
