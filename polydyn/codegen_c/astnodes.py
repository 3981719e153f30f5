"""What the C emitter and its parts share: the state around the node printed, the thresholds
for threads, and the statement instances under a node with their printed iterators."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..astgen import expr_ids
from ..lowering.tree import Instance, Node, instances

# Statement instances (or copied elements) under a parallel loop below which threads cost
# more than they save (an OpenMP fork/join is about a microsecond here; each statement's
# instances count). The figures behind these thresholds: bench/HISTORY.md, points 5b and 7.
PARALLEL_MIN_WORK = 8192
# The same for a loop around register tiles (a micro-kernel does 32 multiply-adds a cycle:
# 2^22 of them take about 65 us on one thread).
TILED_PARALLEL_MIN_WORK = 1 << 22
# The same for a loop around register tiles whose iterations share no data (every access
# moves with its iterator: batched matmul's batch loop): no thread reads another's tiles.
SEPARATE_PARALLEL_MIN_WORK = 1 << 15
# The same for the region a pack opens (every thread copies the tile, no fork per tile:
# RegisterTiles.pack).
PACKED_PARALLEL_MIN_WORK = 1 << 20


@dataclass
class LoopState:
    """What the C emitter knows about the loops around the node it prints."""

    in_parallel: bool = False
    used_locals: set[str] = field(default_factory=set)
    # inside a team region (see CEmitter.team_loop): the C flag that is true when the
    # outer loop shares out its iterations, false when the parallel loops here do
    team: str | None = None
    # inside the parallel region a pack opened (RegisterTiles.pack): the first loop on each
    # path shares out its iterations among the region's threads, without a fork of its own
    region: bool = False


@dataclass(frozen=True)
class UserCall:
    """A statement instance in the AST: the statement's name and, per statement iterator,
    its value as printed and the identifiers (loop iterators, syms) that value uses, read
    from isl's expression; ``instance``, the tree's node (its iterator map)."""

    name: str
    args: tuple[str, ...]
    uses: tuple[frozenset[str], ...]
    instance: Instance | None = field(default=None, compare=False, repr=False)

    def values(self, iters: tuple[str, ...] | list[str]) -> dict[str, str]:
        return dict(zip(iters, self.args, strict=True))

    def moving(self, iters: tuple[str, ...] | list[str], loop: str) -> set[str]:
        """The statement iterators whose values move with the AST iterator ``loop``: from
        isl's iterator map where the instance has one that is affine in ``loop``
        (``Instance.steps``), else the iterators whose expression names ``loop``."""
        steps = self.instance.steps(loop) if self.instance is not None else None
        if steps is not None:
            return {v for v, step in zip(iters, steps, strict=True) if step}
        return {v for v, u in zip(iters, self.uses, strict=True) if loop in u}


def ast_users(n: Node, em: Any) -> list[UserCall]:
    """Every statement instance under ``n``, in AST order."""
    return [UserCall(c.name, tuple(em.ast_expr(e) for e in c.args),
                     tuple(expr_ids(e) for e in c.args), c) for c in instances(n)]


def strip_parens(text: str) -> str:
    """``(a < b)`` -> ``a < b`` when the outer parentheses enclose the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(text) - 1:
            return text
    return text[1:-1]
