"""The isl context of an operator: every size and tensor dimension >= 0, and ``assume=``."""

from __future__ import annotations

import re
from collections.abc import Iterable

import islpy as isl

from ..errors import FrontendError, SourceLoc
from .names import ISL_WORDS


def build_context(params: str, syms: tuple[str, ...], dims: Iterable[str], assume: str,
                  isl_assume: str, loc: SourceLoc, user_syms: Iterable[str] = ()) -> isl.Set:
    """``[N, M] -> { : N >= 0 and ... and <assume> }``; ``isl_assume`` is ``assume`` with
    renamed syms respelled; ``loc`` is the decorator's place, for errors."""
    base = " and ".join([f"{s} >= 0" for s in syms] + sorted(f"{d} >= 0" for d in dims)) \
        or "1 = 1"
    context = isl.Set(f"{params} -> {{ : {base} }}")
    if any(ch in assume for ch in "{};:") or "->" in assume:
        raise FrontendError(f"cannot parse assume={assume!r}: write only constraints over the "
                            "syms, such as \"N >= 1 and M mod 4 = 0\" (no braces, "
                            "':' or '->')", loc)
    if assume.strip():
        try:
            extra = isl.Set(f"{params} -> {{ : {isl_assume} }}")
        except isl.Error:
            known = tuple(user_syms) or syms
            unknown = _unknown_names(assume, known)
            hint = (f"; unknown name(s) {', '.join(unknown)} (syms of this operator: "
                    f"{', '.join(known) or 'none'})") if unknown else ""
            raise FrontendError(f"cannot parse assume={assume!r} as isl constraints "
                                f"over the syms{hint}", loc) from None
        context = context.intersect(extra)
    if context.is_empty():
        raise FrontendError(f"assume={assume!r} admits no sizes at all", loc)
    return context.coalesce()


def _unknown_names(text: str, syms: tuple[str, ...]) -> list[str]:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return sorted(w for w in words if w not in syms and w not in ISL_WORDS)
