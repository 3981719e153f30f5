"""What the C emitter and its parts share: the state around the node printed and the statement
instances under a node with their printed iterators."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..lowering.tree import Instance, Node, expr_ids, instances


@dataclass(frozen=True)
class LoopState:
    """What the C emitter knows about the loops around the node it prints."""

    in_parallel: bool = False
    # inside a team region (see CEmitter.team_loop): the C flag that is true when the
    # outer loop shares out its iterations, false when the parallel loops here do
    team: str | None = None
    # inside the parallel region a pack opened (PackedTiles.pack): the first loop on each
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
        """The statement iterators whose values move with the AST iterator ``loop``
        (``Instance.moving``)."""
        if self.instance is not None:
            return self.instance.moving(iters, loop)
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
