"""Shrinking a failing operator: greedy one-edit-at-a-time reduction of the operator tree, and
of the recipe it failed under.

Edits, biggest first: drop a statement, loop or if; inline an if's branch; replace a loop
header by a plainer one; make an update a plain ``=``; replace an expression by one of its
operands or by a constant; drop the ``assume``; then, for a failure under a recipe, drop the
recipe's region (the recipe then covers the whole domain), one of its steps, or one loop of a
tile. An edit is kept when the smaller operator still fails the same way (same status; for
errors the same exception type), on the same target. When an edit removes a loop that the
recipe names, the recipe loses what names it (``schedules.restrict``); when it removes a sym,
the region loses its bounds on that sym. Candidates are checked ``jobs`` at a time in the
worker pool. Unused arrays and syms are dropped as we go.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from .generator import Assign, Ex, If, Loop, Op, generate, render
from .schedules import restrict

_SIZES = re.compile(r" at (\{[^}]*\})")


def failing_points(message: str) -> list[dict[str, int]]:
    """The sym values named in a failure message (``variant 2 (tiled) at {'N': 9}``)."""
    points = []
    for text in _SIZES.findall(message or ""):
        try:
            point = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(point, dict) and point not in points:
            points.append(point)
    return points


# ------------------------------------------------------------------------------------------
# Candidate edits


def _expr_edits(e: Ex) -> Iterator[Ex]:
    for child in e.args:
        if child.kind == e.kind:
            yield child
    if e.kind != "b" and (e.args or e.fmt not in ("1.0", "1")):
        yield Ex("1" if e.kind == "i" else "1.0", kind=e.kind)
    for k, child in enumerate(e.args):
        for smaller in _expr_edits(child):
            yield replace(e, args=(*e.args[:k], smaller, *e.args[k + 1:]))


def _headers(loop: Loop) -> Iterator[str]:
    m = re.search(r"\b([NMKL])\b", loop.header)
    if m and loop.header != f"range({m.group(1)})":
        yield f"range({m.group(1)})"
    if "grid" not in loop.header and loop.header not in ("range(1)", "range(2)"):
        yield "range(2)"
        yield "range(1)"


def _block_edits(block: tuple) -> Iterator[tuple]:
    """Every block one edit away from ``block``: a node dropped, or one node replaced by
    what ``_node_edits`` offers (a tuple of nodes: an inlined branch is several)."""
    for k in range(len(block)):
        yield (*block[:k], *block[k + 1:])
    for k, node in enumerate(block):
        for nodes in _node_edits(node):
            yield (*block[:k], *nodes, *block[k + 1:])


def _node_edits(node: Any) -> Iterator[tuple]:
    if isinstance(node, If):
        yield from _if_edits(node)
    elif isinstance(node, Loop):
        if node.header == "range(1)":  # the loop runs once, with its variable 0
            yield substitute(node.body, node.var, "0")
        for h in _headers(node):
            yield (replace(node, header=h),)
        for b in _block_edits(node.body):
            yield (replace(node, body=b),)
    elif isinstance(node, Assign):
        if node.op != "=":
            yield (replace(node, op="="),)
        for v in _expr_edits(node.value):
            yield (replace(node, value=v),)


def _if_edits(node: If) -> Iterator[tuple]:
    yield node.then
    if node.orelse:
        yield node.orelse
        yield (replace(node, orelse=()),)
    for t in _block_edits(node.then):
        yield (replace(node, then=t),)
    for o in _block_edits(node.orelse):
        yield (replace(node, orelse=o),)


def substitute(nodes: tuple, var: str, value: str) -> tuple:
    """``nodes`` with the loop variable ``var`` replaced by ``value`` everywhere."""
    word = re.compile(rf"\b{re.escape(var)}\b")

    def sub(text: str) -> str:
        return word.sub(value, text)

    def expr(e: Ex) -> Ex:
        return replace(e, fmt=sub(e.fmt), args=tuple(expr(a) for a in e.args))

    out = []
    for n in nodes:
        if isinstance(n, Assign):
            out.append(replace(n, target=sub(n.target), value=expr(n.value)))
        elif isinstance(n, Loop):
            out.append(replace(n, header=sub(n.header), body=substitute(n.body, var, value)))
        else:
            out.append(replace(n, cond=sub(n.cond), then=substitute(n.then, var, value),
                               orelse=substitute(n.orelse, var, value)))
    return tuple(out)


def candidates(op: Op) -> Iterator[Op]:
    for body in _block_edits(op.body):
        yield tidy(op.replace(body=body))
    if op.assume:
        yield tidy(op.replace(assume=""))
        parts = op.assume.split(" and ")
        if len(parts) > 1:
            for k in range(len(parts)):
                yield tidy(op.replace(assume=" and ".join(parts[:k] + parts[k + 1:])))


def tidy(op: Op) -> Op:
    """Drop arrays the body no longer mentions (keeping one output) and unused syms."""
    text = render(op.replace(arrays=()))
    keep = tuple(a for a in op.arrays if re.search(rf"\b{a.name}\b", text))
    if not any(a.kind in ("out", "inout") for a in keep):
        keep = op.arrays
    op = op.replace(arrays=keep)
    from .generator import used_syms

    return op.replace(syms=tuple(used_syms(op)))


# ------------------------------------------------------------------------------------------
# The search


def signature(message: str) -> str:
    """An error message without its place, sizes and numbers: ``call to
    isl_schedule_node_child failed: index out of bounds in /project/isl/...``."""
    text = re.sub(r"\{[^}]*\}", "", message)
    text = re.sub(r"^(compile|variant [^:]*|dispatcher [^:]*): ", "", text)
    return re.sub(r"\d+", "#", text)[:100]


def same_failure(base: dict[str, Any], res: dict[str, Any]) -> bool:
    """Same status; for errors, the same exception type and message (numbers aside), so that
    shrinking one bug does not wander off into another."""
    if res["status"] != base["status"]:
        return False
    if base["status"] == "error":
        return res.get("kind") == base.get("kind") and \
            signature(res.get("message", "")) == signature(base.get("message", ""))
    return True


def loop_vars(nodes: tuple) -> set[str]:
    """The loop variables of an operator body (``pd.grid`` loops name two)."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, Loop):
            out |= {v.strip() for v in n.var.split(",")} | loop_vars(n.body)
        elif isinstance(n, If):
            out |= loop_vars(n.then) | loop_vars(n.orelse)
    return out


def fit_unit(unit: dict[str, Any], op: Op) -> dict[str, Any]:
    """``unit`` for a smaller ``op``: the recipe without the loops ``op`` lost, the region
    without bounds on the syms it lost (none left: the recipe covers the whole domain)."""
    if unit.get("schedule") is None:
        return unit
    steps = restrict(unit["schedule"], loop_vars(op.body))
    region = unit.get("region")
    if region:
        parts = [c for c in region.split(" and ")
                 if set(re.findall(r"[A-Za-z_]\w*", c)) - {"mod"} <= set(op.syms)]
        region = " and ".join(parts) or None
    return {**unit, "schedule": steps, "region": region}


def unit_edits(unit: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Smaller recipes: without the region, without one step, a tile without one loop."""
    steps = unit.get("schedule")
    if steps is None:
        return
    if unit.get("region"):
        yield {**unit, "region": None}
    for k, (name, args) in enumerate(steps):
        yield {**unit, "schedule": steps[:k] + steps[k + 1:]}
        if name == "tile" and len(args) > 1:
            for j in range(len(args)):
                tile = [name, args[:j] + args[j + 1:]]
                yield {**unit, "schedule": [*steps[:k], tile, *steps[k + 1:]]}


def _unit_of(res: dict[str, Any]) -> dict[str, Any]:
    return {"target": res.get("target", "c"), "schedule": res.get("schedule"),
            "region": res.get("region")}


def reproduces(task: dict[str, Any], res: dict[str, Any], pool: Any) -> bool:
    """Whether the failing unit of ``res`` fails the same way alone, in a fresh worker: a
    failure that needs the kernels run before it in the same process (stale device memory,
    a heap corrupted earlier) cannot be shrunk, only reported."""
    alone = {**task, "id": f"{task['id']}-alone", "units": [_unit_of(res)], "fresh": True}
    return same_failure(res, pool.map([alone])[0])


def shrink_failure(task: dict[str, Any], res: dict[str, Any], pool: Any, *, log=print,
                   max_rounds: int = 400) -> dict[str, Any]:
    """The smallest operator (and recipe) found that fails like ``res``, a failing unit's
    outcome (its target, recipe and region are kept): a dict with ``op`` (the tree),
    ``source``, ``unit``, ``result`` and ``points``."""
    op = generate(task["id"], literal_steps=task.get("literal_steps", False))
    op = op.replace(name=f"fz{task['id']}")
    best = {"op": op, "source": task["source"], "unit": _unit_of(res), "result": res,
            "max_tile": task["max_tile"], "points": failing_points(res.get("message", ""))}
    tried: set[str] = {_key(task["source"], best["unit"])}
    for _round in range(max_rounds):
        improved = False
        batch: list[tuple[Op, dict[str, Any]]] = []
        for cand in _candidate_pairs(best):
            key = _key(render(cand[0]), cand[1])
            if key in tried:
                continue
            tried.add(key)
            batch.append(cand)
            if len(batch) < len(pool.workers):
                continue
            found = _try(batch, task, best, pool)
            batch = []
            if found:
                best, improved = found, True
                break
        else:
            if batch:
                found = _try(batch, task, best, pool)
                if found:
                    best, improved = found, True
        if not improved:
            break
    log(f"shrunk {task['name']}: {len(task['source'].splitlines())} -> "
        f"{len(best['source'].splitlines())} lines, recipe {best['unit'].get('schedule')}")
    return best


def _candidate_pairs(best: dict[str, Any]) -> Iterator[tuple[Op, dict[str, Any]]]:
    for cand in candidates(best["op"]):
        yield cand, fit_unit(best["unit"], cand)
    for unit in unit_edits(best["unit"]):
        yield best["op"], unit


def _key(source: str, unit: dict[str, Any]) -> str:
    return source + json.dumps(unit, sort_keys=True)


def _try(batch: list[tuple[Op, dict[str, Any]]], task: dict, best: dict, pool: Any
         ) -> dict | None:
    tasks = []
    for k, (cand, unit) in enumerate(batch):
        tasks.append({**task, "id": f"{task['id']}-{k}-{id(cand)}", "name": cand.name,
                      "source": render(cand), "points": best["points"], "limit": 2,
                      "units": [unit], "fresh": best["result"]["status"] == "crash"})
    results = pool.map(tasks)
    for (cand, unit), t, r in zip(batch, tasks, results, strict=True):
        if same_failure(best["result"], r):
            points = failing_points(r.get("message", "")) or best["points"]
            return {"op": cand, "source": t["source"], "unit": unit, "result": r,
                    "points": points, "max_tile": task["max_tile"]}
    return None


def save_regression(small: dict[str, Any], original: dict[str, Any], directory: Path,
                    seed: int | None = None, max_tile: int | None = None) -> Path:
    """Write the shrunk operator as ``directory/<name>.py``: the operator module plus
    ``MAX_TILE``, ``POINTS``, ``STATUS`` and, when the failure was not on C under the
    automatic schedule, ``TARGET``, ``SCHEDULE`` (``Schedule.to_json()``) and ``REGION``;
    tests/test_fuzz.py runs every such file."""
    directory.mkdir(parents=True, exist_ok=True)
    op: Op = small["op"]
    res = small["result"]
    unit = small.get("unit") or {}
    first = (res.get("message") or "").splitlines()[0][:300] if res.get("message") else ""
    found = f"python -m tests.fuzz --seed {seed}" if seed is not None else "the fuzzer"
    doc = (f"Fuzz regression {op.name}: {res['status']}.\n\n{first}\n\nFound by `{found}`, "
           "shrunk by tests/fuzz/shrink.py.\n")
    text = render(op.replace(header_comment=doc)).replace(
        '"""\n\nimport', '"""\n\n# ruff: noqa: B007, F841  (generated code: unused loop '
        'variables and scalars)\nimport', 1)
    tile = max_tile if max_tile is not None else small.get("max_tile", 8)
    text += (f"\n\nMAX_TILE = {tile}\nPOINTS = {small['points']!r}\n"
             f"STATUS = {res['status']!r}\n")
    if unit.get("target", "c") != "c":
        text += f"TARGET = {unit['target']!r}\n"
    if unit.get("schedule") is not None:
        text += f"SCHEDULE = {json.dumps(unit['schedule'])}\n"
    if unit.get("region"):
        text += f"REGION = {unit['region']!r}\n"
    path = directory / f"{op.name}.py"
    path.write_text(text)
    return path
