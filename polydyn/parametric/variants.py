"""Variants: (region, schedule) pairs, ordered most specific first; the first match runs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a loaded artifact's variants hold isl text: no isl at run time
    import islpy as isl

from ..schedule.recipe import Schedule


@dataclass(frozen=True)
class Variant:
    """One specialization: code for the sizes in ``region`` (an isl set over the syms).

    ``schedule`` is the marked isl schedule tree; ``recipe`` the Schedule that made it (the
    automatic policy's as a policy recipe: compiling ``(region, recipe)`` replays it);
    ``summary`` a one-line description (tiling, parallel and vector loops).
    """

    name: str
    region: isl.Set = field(compare=False)
    schedule: isl.Schedule = field(compare=False)
    recipe: Schedule = field(default_factory=Schedule)
    summary: str = ""
    source: str = ""

    def replace(self, **kw: Any) -> Variant:
        return replace(self, **kw)

    @property
    def region_text(self) -> str:
        return str(self.region)

    def __repr__(self) -> str:
        return f"<Variant {self.name}: {self.region} | {self.summary}>"
