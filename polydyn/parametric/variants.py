"""Variants: (region, schedule) pairs, ordered most specific first; the first match runs."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import islpy as isl


@dataclass(frozen=True)
class Variant:
    """One specialization: code for the sizes in ``region`` (an isl set over the syms).

    ``schedule`` is the marked isl schedule tree; ``recipe`` the directives that made it (data,
    JSON-serializable); ``summary`` a one-line description (tiling, parallel and vector loops).
    """

    name: str
    region: isl.Set = field(compare=False)
    schedule: isl.Schedule = field(compare=False)
    recipe: tuple[Any, ...] = ()
    summary: str = ""
    source: str = ""

    def replace(self, **kw: Any) -> Variant:
        return replace(self, **kw)

    @property
    def region_text(self) -> str:
        return str(self.region)

    def __repr__(self) -> str:
        return f"<Variant {self.name}: {self.region} | {self.summary}>"
