"""Random directive sequences: ``pd.Schedule`` recipes (SPEC section 3) for a defined operator.

A recipe is drawn from the operator's own loop tree (``scop.tree``: loops, guards and
statement references), so that its directives name loops that exist and mostly apply. Whether
a recipe is *legal* is for polydyn to decide: a refusal (``ScheduleError``) is an answer, not a
failure, as long as it names the statements and the dependence or the loop at fault. Since the
point is to exercise legal sequences, a draw that polydyn's replay refuses is drawn again a few
times (``draw_recipes``).

The tree is modelled the way polydyn/schedule/directives.py replays a recipe: guards only group
statements (they are flattened), ``fuse``, ``distribute`` and ``interchange`` rewrite the loop
tree in recipe order, and the loop directives (``tile``, ``parallel``, ``vectorize``,
``unroll``) then act on the rewritten tree whatever their place in the recipe. So the tree
edits are drawn first, on the evolving model, and the loop directives on its final form; the
recipe lists them all in a random order.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from typing import Any

TILE_SIZES = (1, 2, 3, 4, 5, 8)
TREE_EDITS = ("fuse", "distribute", "interchange")
LOOP_DIRECTIVES = ("tile", "parallel", "vectorize", "unroll")
DIRECTIVE_KINDS = TREE_EDITS + LOOP_DIRECTIVES
# how often each directive is drawn, among those that have a loop to name
WEIGHTS = {"tile": 3, "interchange": 2, "fuse": 1, "distribute": 1, "parallel": 2,
           "vectorize": 2, "unroll": 1}


@dataclass(frozen=True)
class Nest:
    """A loop of the model: its variable, its step (fuse joins equal steps only) and its body
    (loops and statement names)."""

    var: str
    step: int
    body: tuple[Nest | str, ...]


def loop_tree(scop: Any) -> tuple[Nest | str, ...]:
    """The operator's loop tree with guards flattened, as directives.py sees it."""
    from polydyn.scop.ir import Guard, Loop

    def convert(nodes: tuple) -> list[Nest | str]:
        out: list[Nest | str] = []
        for n in nodes:
            if isinstance(n, Guard):
                out += convert(n.then + n.orelse)
            elif isinstance(n, Loop):
                out.append(Nest(n.var, n.step, tuple(convert(n.body))))
            else:
                out.append(n.name)
        return out

    return tuple(convert(scop.tree))


def all_loops(tree: tuple[Nest | str, ...]) -> list[Nest]:
    """Every loop of ``tree``, outer loops first."""
    out: list[Nest] = []
    for n in tree:
        if isinstance(n, Nest):
            out.append(n)
            out += all_loops(n.body)
    return out


def chain(loop: Nest) -> list[Nest]:
    """The perfect nest from ``loop`` down: each loop's body is exactly the next loop."""
    out = [loop]
    while len(out[-1].body) == 1 and isinstance(out[-1].body[0], Nest):
        out.append(out[-1].body[0])
    return out


def _edit(tree: tuple[Nest | str, ...], fn: Any) -> tuple[Nest | str, ...]:
    """``fn(siblings) -> siblings`` at every level, inner levels first (as directives.py)."""
    level = [Nest(n.var, n.step, _edit(n.body, fn)) if isinstance(n, Nest) else n for n in tree]
    return tuple(fn(level))


def fuse(tree: tuple[Nest | str, ...], var: str) -> tuple[Nest | str, ...]:
    def join(level: list) -> list:
        out: list = []
        for n in level:
            prev = out[-1] if out else None
            if isinstance(n, Nest) and isinstance(prev, Nest) and n.var == prev.var == var \
                    and n.step == prev.step:
                out[-1] = Nest(var, n.step, prev.body + n.body)
            else:
                out.append(n)
        return out

    return _edit(tree, join)


def distribute(tree: tuple[Nest | str, ...], var: str) -> tuple[Nest | str, ...]:
    def split(level: list) -> list:
        out: list = []
        for n in level:
            if isinstance(n, Nest) and n.var == var and len(n.body) > 1:
                out += [Nest(var, n.step, (child,)) for child in n.body]
            else:
                out.append(n)
        return out

    return _edit(tree, split)


def interchange(tree: tuple[Nest | str, ...], order: tuple[str, ...]
                ) -> tuple[Nest | str, ...]:
    def swap(level: list) -> list:
        out: list = []
        for n in level:
            if isinstance(n, Nest) and n.var in order:
                nest = chain(n)
                names = [lp.var for lp in nest]
                if set(order) <= set(names):
                    k = min(names.index(v) for v in order)
                    span = nest[k: k + len(order)]
                    if sorted(lp.var for lp in span) == sorted(order):
                        by_var = {lp.var: lp for lp in span}
                        inner: tuple = span[-1].body
                        for v in reversed(order):
                            inner = (Nest(v, by_var[v].step, inner),)
                        for lp in reversed(nest[:k]):
                            inner = (Nest(lp.var, lp.step, inner),)
                        n = inner[0]
            out.append(n)
        return out

    return _edit(tree, swap)


# ------------------------------------------------------------------------------------------
# Drawing recipes


def _fusable(tree: tuple[Nest | str, ...]) -> list[str]:
    """Loop variables with two adjacent sibling loops of the same step somewhere."""
    out: set[str] = set()

    def walk(level: tuple) -> None:
        for a, b in itertools.pairwise(level):
            if isinstance(a, Nest) and isinstance(b, Nest) and a.var == b.var and \
                    a.step == b.step:
                out.add(a.var)
        for n in level:
            if isinstance(n, Nest):
                walk(n.body)

    walk(tree)
    return sorted(out)


def _candidates(kind: str, tree: tuple[Nest | str, ...]) -> list[Any]:
    """What ``kind`` could name in ``tree``: loop variables, or the nests to interchange."""
    loops = all_loops(tree)
    if kind == "fuse":
        return _fusable(tree)
    if kind == "distribute":
        return sorted({lp.var for lp in loops if len(lp.body) > 1})
    if kind == "interchange":
        return [lp for lp in loops if len(chain(lp)) >= 2]
    if kind == "vectorize":
        return sorted({lp.var for lp in loops if not any(isinstance(b, Nest) for b in lp.body)})
    return loops


def _draw_edit(kind: str, tree: tuple[Nest | str, ...], rng: random.Random
               ) -> tuple[Any, ...] | None:
    cands = _candidates(kind, tree)
    if not cands:
        return None
    if kind != "interchange":
        return (rng.choice(cands),)
    nest = [lp.var for lp in chain(rng.choice(cands))]
    width = min(len(nest), rng.choice((2, 2, 3)))
    start = rng.randrange(len(nest) - width + 1)
    span = nest[start: start + width]
    order = span[:]
    while order == span:
        rng.shuffle(order)
    return tuple(order)


def _draw_loop_step(kind: str, tree: tuple[Nest | str, ...], rng: random.Random,
                    tiled: set[str]) -> tuple[Any, ...] | None:
    cands = _candidates(kind, tree)
    if kind == "tile":
        # a perfect nest from some loop, all of it or only its outer loops; no loop tiled twice
        nests = [[lp.var for lp in chain(top)] for top in cands]
        nests = [n for n in nests if n[0] not in tiled]
        if not nests:
            return None
        nest = rng.choice(nests)
        depth = len(nest) if rng.random() < 0.6 else rng.randint(1, len(nest))
        names = [v for v in nest[:depth] if v not in tiled][:3]
        tiled.update(names)
        return tuple((v, rng.choice(TILE_SIZES)) for v in names)
    if not cands:
        return None
    if kind == "parallel":
        names = sorted({lp.var for lp in cands})
        return tuple(rng.sample(names, min(len(names), rng.choice((1, 1, 2)))))
    if kind == "unroll":
        return (rng.choice(cands).var, rng.randint(2, 4))
    return (rng.choice(cands),)


def draw_recipe(scop: Any, rng: random.Random) -> Any:
    """A random recipe of 1-4 directives naming loops of ``scop`` (empty, i.e. the original
    loop order, when the operator has no loop at all)."""
    import polydyn as pd

    tree = loop_tree(scop)
    if not all_loops(tree):
        return pd.Schedule()
    kinds = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=rng.randint(1, 4))
    args: dict[int, tuple[Any, ...]] = {}
    for k, kind in enumerate(kinds):  # the tree edits first: they change what loops exist
        if kind in TREE_EDITS:
            drawn = _draw_edit(kind, tree, rng)
            if drawn is not None:
                args[k] = drawn
                tree = _apply_edit(kind, tree, drawn)
    tiled: set[str] = set()
    for k, kind in enumerate(kinds):
        if kind in LOOP_DIRECTIVES:
            drawn = _draw_loop_step(kind, tree, rng, tiled)
            if drawn is not None:
                args[k] = drawn
    # a repeated step would test nothing new
    steps = tuple(dict.fromkeys((kinds[k], args[k]) for k in sorted(args)))
    if not steps:  # no directive found a loop to name: parallelize an outer one
        steps = (("parallel", (rng.choice(all_loops(tree)).var,)),)
    if rng.random() < GPU_SHARE:  # the OpenCL mapping's settings (the C target ignores them)
        steps += (("gpu", (False, rng.choice(GPU_REGTILES), rng.random() < 0.75)),)
    return pd.Schedule(steps)


# the share of recipes that state the OpenCL mapping (``Schedule.gpu``), and its register
# tiles drawn from these
GPU_SHARE = 0.3
GPU_REGTILES = ("", "off", "2x2", "4x1", "1x4", "3x5")


def _apply_edit(kind: str, tree: tuple[Nest | str, ...], args: tuple[Any, ...]
                ) -> tuple[Nest | str, ...]:
    if kind == "interchange":
        return interchange(tree, args)
    return (fuse if kind == "fuse" else distribute)(tree, args[0])


def draw_region(syms: tuple[str, ...], rng: random.Random) -> str:
    """A region for a recipe beside the automatic schedule: one or two bounds on syms (isl
    constraint text), small enough that the fuzzer's sizes (up to 9-12) reach both sides."""
    parts = []
    for s in rng.sample(syms, min(len(syms), rng.choice((1, 1, 2)))):
        r = rng.random()
        if r < 0.6:
            parts.append(f"{s} >= {rng.randint(2, 6)}")
        elif r < 0.85:
            parts.append(f"{s} <= {rng.randint(3, 7)}")
        else:
            parts.append(f"{s} mod 2 = {rng.randint(0, 1)}")
    return " and ".join(parts)


def draw_recipes(scop: Any, seed: int, count: int, tries: int = 4) -> list[Any]:
    """``count`` recipes for ``scop``, the same ones for the same seed. The issue asks for
    *legal* sequences, and most random ones are not (the generated operators are full of
    dependences): each recipe is the first of up to ``tries`` draws that polydyn's own replay
    (``apply_recipe``, no code generation) accepts, or the last draw, which the compile will
    then refuse. A draw the replay fails on otherwise is kept too (a bug to report), unless
    that is an open bug already listed in known.py, which would take the place of recipes
    that can find the next one (it is kept only when every draw hits a known bug)."""
    if not count:
        return []
    from polydyn.errors import ScheduleError
    from polydyn.schedule.directives import apply_recipe
    from polydyn.scop.deps import compute_deps

    from .known import known_failure

    deps = compute_deps(scop)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        chosen = None  # failing that: the last refused draw, else a known-bug one
        for _try in range(tries):
            recipe = draw_recipe(scop, rng)
            try:
                apply_recipe(scop, deps, scop.context, recipe)
            except ScheduleError:
                chosen = recipe
                continue
            except Exception as exc:  # not a refusal: the compile will report it
                failure = {"status": "error", "message": f"compile: {type(exc).__name__}: {exc}"}
                if known_failure(failure):
                    chosen = chosen or recipe
                    continue
            chosen = recipe
            break
        out.append(chosen)
    return out


# ------------------------------------------------------------------------------------------
# Recipes as data (``Schedule.to_json()``): the loops they name, shrinking, refusals


def named_loops(steps: list[Any]) -> set[str]:
    """The loop variables a recipe (in its JSON form) names."""
    out: set[str] = set()
    for name, args in steps:
        if name == "tile":
            out |= {a[0] for a in args}
        elif name == "unroll":
            out.add(args[0])
        elif name not in NAMING_NO_LOOP:
            out |= set(args)
    return out


# directives whose arguments name no loop (the automatic policy; the OpenCL mapping)
NAMING_NO_LOOP = ("auto", "gpu")


def restrict(steps: list[Any], loops: set[str]) -> list[Any]:
    """The recipe without what names a loop not in ``loops`` (the shrinker removed it): a step
    loses the missing loops it names, and goes when nothing is left to name (an interchange
    needs two loops)."""
    out = []
    for name, args in steps:
        if name == "tile":
            args = [a for a in args if a[0] in loops]
        elif name == "unroll":
            args = args if args[0] in loops else []
        elif name not in NAMING_NO_LOOP:
            args = [a for a in args if a in loops]
        if (name == "interchange" and len(args) >= 2) or (name != "interchange" and args) or \
                name in NAMING_NO_LOOP:
            out.append([name, args])
    return out


def informative(message: str, steps: list[Any]) -> bool:
    """Whether a ScheduleError says what is at fault: the statements and the dependence a
    directive would break, or a loop the recipe names."""
    if re.search(r"\bS\d+\b", message) and "dependence" in message:
        return True
    return any(re.search(rf"\b{re.escape(v)}\b", message) for v in named_loops(steps))
