"""Loop recipes (SPEC section 3): directives that name the operator's own loops.

``pd.Schedule().tile(i=64, j=256).parallel("i").vectorize("j")`` (``schedule.recipe``)
replays to the same tree every time. Replaying works on the operator's loop tree (fuse,
distribute and interchange are edits of that tree), turns it into an isl schedule tree with one
band per loop, then tiles and marks loops. The result must respect every dependence, or
ScheduleError names the statements and the dependence. A loop name stands for every loop with
that variable (sibling loops may share one).
"""

from __future__ import annotations

from typing import Any

import islpy as isl

from ..errors import ScheduleError
from ..scop.deps import Deps
from ..scop.ir import Guard, Loop, Node, Scop, StmtRef
from .legality import describe_violation, member_carries, violated
from .recipe import COMMON_DIRECTIVES, Schedule
from .transforms import tile_band
from .tree import VECTOR, LoopMark, is_band, split_and_mark, statement_names

# --------------------------------------------------------------------------------------------
# Loop-tree edits


def _loop_vars(nodes: tuple[Node, ...]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, Loop):
            out.add(n.var)
            out |= _loop_vars(n.body)
        elif isinstance(n, Guard):
            out |= _loop_vars(n.then) | _loop_vars(n.orelse)
    return out


def _flatten_guards(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
    """Guards only group statements here (their conditions are in the domains)."""
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Guard):
            out.extend(_flatten_guards(n.then + n.orelse))
        elif isinstance(n, Loop):
            out.append(Loop(n.var, n.lo, n.hi, n.step, _flatten_guards(n.body)))
        else:
            out.append(n)
    return tuple(out)


def _edit(nodes: tuple[Node, ...], fn: Any) -> tuple[Node, ...]:
    """Apply ``fn(list_of_siblings) -> list`` at every level, bottom-up."""
    level = []
    for n in nodes:
        if isinstance(n, Loop):
            n = Loop(n.var, n.lo, n.hi, n.step, _edit(n.body, fn))
        level.append(n)
    return tuple(fn(level))


def _fuse(nodes: tuple[Node, ...], var: str) -> tuple[Node, ...]:
    def fuse_level(level: list[Node]) -> list[Node]:
        out: list[Node] = []
        for n in level:
            prev = out[-1] if out else None
            if isinstance(n, Loop) and n.var == var and isinstance(prev, Loop) and \
                    prev.var == var and prev.step == n.step:
                out[-1] = Loop(var, prev.lo, prev.hi, prev.step, prev.body + n.body)
            else:
                out.append(n)
        return out

    return _edit(nodes, fuse_level)


def _distribute(nodes: tuple[Node, ...], var: str) -> tuple[Node, ...]:
    def split(level: list[Node]) -> list[Node]:
        out: list[Node] = []
        for n in level:
            if isinstance(n, Loop) and n.var == var and len(n.body) > 1:
                out.extend(Loop(var, n.lo, n.hi, n.step, (child,)) for child in n.body)
            else:
                out.append(n)
        return out

    return _edit(nodes, split)


def _chain(loop: Loop) -> list[Loop]:
    """The perfect nest starting at ``loop``: each loop's body is exactly one loop."""
    out = [loop]
    while len(out[-1].body) == 1 and isinstance(out[-1].body[0], Loop):
        out.append(out[-1].body[0])
    return out


def _interchange(nodes: tuple[Node, ...], order: tuple[str, ...]) -> tuple[Node, ...]:
    found = [False]

    def swap(level: list[Node]) -> list[Node]:
        out: list[Node] = []
        for n in level:
            if isinstance(n, Loop) and n.var in order:
                chain = _chain(n)
                names = [lp.var for lp in chain]
                if set(order) <= set(names):
                    k = min(names.index(v) for v in order)
                    span = chain[k: k + len(order)]
                    if sorted(lp.var for lp in span) == sorted(order):
                        by_var = {lp.var: lp for lp in span}
                        inner = span[-1].body
                        for v in reversed(order):
                            lp = by_var[v]
                            inner = (Loop(v, lp.lo, lp.hi, lp.step, inner),)
                        n = _rebuild(chain[:k], inner[0])
                        found[0] = True
            out.append(n)
        return out

    result = _edit(nodes, swap)
    if not found[0]:
        raise ScheduleError(f"interchange({', '.join(order)}): these loops are not a perfect "
                            "nest (each loop's body exactly the next loop)")
    return result


def _rebuild(outer: list[Loop], inner: Node) -> Node:
    node = inner
    for lp in reversed(outer):
        node = Loop(lp.var, lp.lo, lp.hi, lp.step, (node,))
    return node


# --------------------------------------------------------------------------------------------
# Loop tree -> isl schedule tree


def _stmts_under(nodes: tuple[Node, ...]) -> list[str]:
    out: list[str] = []
    for n in nodes:
        if isinstance(n, Loop):
            out += _stmts_under(n.body)
        elif isinstance(n, StmtRef):
            out.append(n.name)
    return out


def _to_schedule(scop: Scop, nodes: tuple[Node, ...], region: isl.Set) -> isl.Schedule:
    nodes = tuple(n for n in nodes if not isinstance(n, Loop) or _stmts_under(n.body))
    if not nodes:  # no statement at all (loops with empty bodies)
        return isl.Schedule.from_domain(scop.domain().intersect_params(region))
    parts = []
    for n in nodes:
        if isinstance(n, StmtRef):
            dom = scop.statement(n.name).domain.intersect_params(region)
            parts.append(isl.Schedule.from_domain(isl.UnionSet.from_set(dom)))
            continue
        inner = _to_schedule(scop, n.body, region)
        value = n.var if n.step > 0 else f"-{n.var}"
        pieces = []
        for name in _stmts_under(n.body):
            st = scop.statement(name)
            pieces.append(f"{name}[{', '.join(st.iters)}] -> [({value})]")
        mupa = isl.MultiUnionPwAff(f"{scop.param_space_text()} -> [{{ {'; '.join(pieces)} }}]")
        parts.append(inner.insert_partial_schedule(mupa))
    out = parts[0]
    for p in parts[1:]:
        out = out.sequence(p)
    return out


def _band_var(node: isl.ScheduleNode, scop: Scop, k: int = 0) -> str | None:
    """The loop variable of band member ``k`` (every statement's value is that iterator)."""
    from .bands import member_dependence

    sets = {frozenset(m[k]) for m in member_dependence(node, scop).values()}
    if len(sets) == 1:
        (only,) = sets
        if len(only) == 1:
            return next(iter(only))
    return None


def _bands_named(schedule: isl.Schedule, scop: Scop, var: str) -> list[tuple[int, ...]]:
    """Paths of the single-member bands of loop ``var``."""
    paths: list[tuple[int, ...]] = []

    def walk(node: isl.ScheduleNode, path: tuple[int, ...]) -> None:
        if is_band(node) and node.band_n_member() == 1 and _band_var(node, scop) == var:
            paths.append(path)
        for k in range(node.n_children()):
            walk(node.child(k), (*path, k))

    walk(schedule.get_root(), ())
    return paths


def _node(schedule: isl.Schedule, path: tuple[int, ...]) -> isl.ScheduleNode:
    node = schedule.get_root()
    for k in path:
        node = node.child(k)
    return node


def _tile(schedule: isl.Schedule, scop: Scop, sizes: tuple[tuple[str, int], ...]
          ) -> isl.Schedule:
    """Merge the named loops (the first encloses the others) into one band over every
    statement in the first, and tile it. A statement outside a named inner loop takes the
    value 0 there (matmul's ``C[i, j] = 0`` beside the ``k`` loop), as isl's own scheduler
    does; the legality check afterwards vouches for the order."""
    names = [v for v, _ in sizes]
    paths = _bands_named(schedule, scop, names[0])
    if not paths:
        raise ScheduleError(f"tile: no loop named {names[0]!r}")
    for path in reversed(paths):  # inner occurrences first keeps outer paths valid
        top = _node(schedule, path)
        stmts = statement_names(top.get_domain())
        for v in names[1:]:
            if not any(v in scop.statement(n).iters for n in stmts):
                raise ScheduleError(f"tile({', '.join(names)}): loop {v!r} is not inside "
                                    f"loop {names[0]!r}; name enclosing loops, outer first")
        members = []
        for v in names:
            pieces = [f"{n}[{', '.join(scop.statement(n).iters)}] -> "
                      f"[({v if v in scop.statement(n).iters else 0})]" for n in sorted(stmts)]
            members.append(f"{{ {'; '.join(pieces)} }}")
        mupa = isl.MultiUnionPwAff(f"{scop.param_space_text()} -> [{', '.join(members)}]")
        # an earlier tile below (its full tiles isolated: options anchored on the loops
        # around) would stop isl from deleting the bands above it: it keeps its tiles,
        # generated without the separation
        schedule = top.map_descendant_bottom_up(_without_build_options).get_schedule()
        inner = [p for v in names[1:] for p in _bands_named(schedule, scop, v)
                 if p[:len(path)] == path]
        for p in sorted(inner, key=len, reverse=True):
            schedule = _node(schedule, p).delete().get_schedule()
        node = _node(schedule, path).delete().insert_partial_schedule(mupa)
        node = tile_band(node.band_set_permutable(1), [s for _, s in sizes], isolate=True)
        schedule = node.get_schedule()
    return schedule


def _without_build_options(node: isl.ScheduleNode) -> isl.ScheduleNode:
    if node.get_type() != isl.schedule_node_type.band:
        return node
    return node.band_set_ast_build_options(isl.UnionSet.empty(
        node.band_get_ast_build_options().get_space()))


def apply_recipe(scop: Scop, deps: Deps, region: isl.Set, recipe: Schedule) -> isl.Schedule:
    """The schedule tree of ``recipe`` for the sizes in ``region``, checked and marked."""
    tree = _flatten_guards(scop.tree)
    known = _loop_vars(tree)
    loop_steps = []
    # double_buffer is the pipeline's, label the variant's name
    steps = [(name, args) for name, args in recipe.steps if name not in COMMON_DIRECTIVES]
    for name, args in steps:
        loops = [a[0] if isinstance(a, tuple) else a for a in args]
        if name == "unroll":
            loops = loops[:1]
        unknown = [v for v in loops if isinstance(v, str) and v not in known]
        if unknown:
            raise ScheduleError(f"{name}: unknown loop {unknown[0]!r}; the loops of "
                                f"{scop.name} are {', '.join(sorted(known))}")
        if name in ("fuse", "distribute"):
            edited = (_fuse if name == "fuse" else _distribute)(tree, args[0])
            if edited == tree:
                what = "no two adjacent loops" if name == "fuse" else "no loop with several " \
                    "statements or loops in its body"
                raise ScheduleError(f"{name}({args[0]!r}): {what} over {args[0]} in "
                                    f"{scop.name}; nothing to {name}")
            tree = edited
        elif name == "interchange":
            tree = _interchange(tree, tuple(args))
        else:
            loop_steps.append((name, args))
    schedule = _to_schedule(scop, tree, region)
    roles: dict[str, str] = {}
    parallel: set[str] = set()
    for name, args in loop_steps:
        if name == "tile":
            schedule = _tile(schedule, scop, args)
        elif name == "parallel":
            parallel |= set(args)
        elif name == "vectorize":
            roles[args[0]] = VECTOR
        elif name == "unroll":
            roles[args[0]] = f"unroll{int(args[1])}"
    bad = violated(schedule, deps)
    if not bad.is_empty():
        raise ScheduleError(f"schedule {recipe.describe()} for {scop.name} breaks dependences: "
                            f"{describe_violation(bad)}")
    return _mark(schedule, scop, deps, parallel, roles, recipe)


def _mark(schedule: isl.Schedule, scop: Scop, deps: Deps, parallel: set[str],
          roles: dict[str, str], recipe: Schedule) -> isl.Schedule:
    """Split bands into loops and mark them: parallel where the recipe asks (checked)."""
    wanted = set(parallel) | {v for v, r in roles.items() if r == VECTOR}
    refused: list[str] = []  # raised after isl returns: exceptions cannot cross its callback

    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if not is_band(node) or (node.has_parent() and
                                 node.parent().get_type() == isl.schedule_node_type.mark):
            return node
        names = []
        for k in range(node.band_n_member()):
            var = _band_var(node, scop, k)
            if var in wanted and not refused and member_carries(node, k, deps):
                refused.append(f"{'parallel' if var in parallel else 'vectorize'}({var!r}): "
                               f"loop {var} of {scop.name} carries a dependence, so its "
                               "iterations cannot run at once")
            names.append(LoopMark(var in parallel, roles.get(var, "")))
        return split_and_mark(node, names)

    marked = schedule.map_schedule_node_bottom_up(visit)
    if refused:
        raise ScheduleError(refused[0])
    return marked


def original_loops(scop: Scop, deps: Deps, region: isl.Set) -> isl.Schedule:
    """The operator's own loop nest as a schedule tree (one band per loop), each loop
    flagged coincident when it carries no dependence given the loops around it."""
    schedule = _to_schedule(scop, _flatten_guards(scop.tree), region)

    def flag(node: isl.ScheduleNode) -> isl.ScheduleNode:
        if not is_band(node):
            return node
        node = node.band_set_permutable(1)
        return node.band_member_set_coincident(0, int(not member_carries(node, 0, deps)))

    return schedule.map_schedule_node_bottom_up(flag)
