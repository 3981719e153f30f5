"""Sweep specifications: which sizes a benchmark visits.

A sweep is ``NAMES=VALUES``. ``NAMES`` is one sym (``N``) or several tied together
(``N=M=K``: they take the same value at every point). ``VALUES`` is one of

- ``a:b:step``   linear, ``a, a+step, ...`` up to ``b`` inclusive (``a:b:lin5``: 5 points
  evenly spaced from ``a`` to ``b``);
- ``a:b:logN``   ``N`` points spaced geometrically from ``a`` to ``b``, rounded, deduplicated;
- ``a:b``        short for ``a:b:log16`` (a sweep over a size range is almost always wanted on a
  log scale; write ``a:b:1`` for every integer);
- ``1,7,33``     an explicit list;
- ``tiles:16,32,64``  around tile sizes: ``T-1, T, T+1`` for each ``T`` (values below 0 dropped).

Several sweeps make the cartesian product (the first one is the x axis of the plots);
``--fix K=512`` pins other syms.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import PolydynError


class SweepError(PolydynError):
    """A malformed ``--sweep`` or ``--fix`` specification."""


@dataclass(frozen=True)
class Sweep:
    """``names`` (tied syms, same value) take each of ``values`` in turn; ``log`` says whether
    the values are best plotted on a log axis."""

    names: tuple[str, ...]
    values: tuple[int, ...]
    log: bool = False

    @property
    def label(self) -> str:
        return "=".join(self.names)


def _int(text: str, spec: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise SweepError(f"sweep {spec!r}: {text.strip()!r} is not an integer") from None


def linear(lo: int, hi: int, step: int) -> list[int]:
    if step <= 0:
        raise SweepError(f"linear sweep {lo}:{hi}:{step}: the step must be positive")
    return list(range(lo, hi + 1, step))


def evenly(lo: int, hi: int, count: int) -> list[int]:
    """``count`` points evenly spaced from ``lo`` to ``hi`` (both included), rounded."""
    if count <= 1:
        return [lo]
    return sorted({round(lo + (hi - lo) * k / (count - 1)) for k in range(count)})


def geometric(lo: int, hi: int, count: int) -> list[int]:
    """``count`` points spaced geometrically from ``lo`` to ``hi`` (both included), rounded;
    rounding can merge neighbours at the low end, so fewer may come back."""
    if lo <= 0:
        raise SweepError(f"log sweep {lo}:{hi}: the lower end must be at least 1")
    if count <= 1 or lo == hi:
        return [lo]
    ratio = math.log(hi / lo) / (count - 1)
    return sorted({round(lo * math.exp(ratio * k)) for k in range(count)} | {hi})


def around_tiles(tiles: Sequence[int]) -> list[int]:
    """``T-1, T, T+1`` for each tile size ``T``: both sides of every tile boundary."""
    return sorted({v for t in tiles for v in (t - 1, t, t + 1) if v >= 0})


def parse_values(text: str, spec: str = "") -> tuple[list[int], bool]:
    """The values of one sweep and whether they are log-spaced."""
    spec = spec or text
    text = text.strip()
    if text.startswith("tiles:"):
        tiles = [_int(t, spec) for t in text[len("tiles:"):].split(",") if t.strip()]
        if not tiles:
            raise SweepError(f"sweep {spec!r}: write tiles:16,32,64")
        return around_tiles(tiles), False
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise SweepError(f"sweep {spec!r}: write a:b, a:b:step, a:b:logN or a:b:linN")
        lo, hi = _int(parts[0], spec), _int(parts[1], spec)
        if hi < lo:
            raise SweepError(f"sweep {spec!r}: the upper end {hi} is below the lower end {lo}")
        how = parts[2].strip() if len(parts) == 3 else "log16"
        if how.startswith("log"):
            return geometric(lo, hi, _int(how[3:] or "16", spec)), True
        if how.startswith("lin"):
            return evenly(lo, hi, _int(how[3:] or "16", spec)), False
        return linear(lo, hi, _int(how, spec)), False
    values = [_int(v, spec) for v in text.split(",") if v.strip()]
    if not values:
        raise SweepError(f"sweep {spec!r}: no values")
    return values, False


def parse_sweep(spec: str) -> Sweep:
    """``"N=1:4096:log16"``, ``"N=M=K=256,512"``, ``"K=tiles:32,64"`` -> Sweep."""
    *names, values_text = spec.split("=")
    names = [n.strip() for n in names]
    if not names or not all(n.isidentifier() for n in names):
        raise SweepError(f"sweep {spec!r}: write NAME=VALUES, e.g. N=1:4096:log16 "
                         "or N=M=K=256,512")
    values, log = parse_values(values_text, spec)
    if any(v < 0 for v in values):
        raise SweepError(f"sweep {spec!r}: sizes must be >= 0")
    return Sweep(tuple(names), tuple(values), log)


def parse_fix(items: Sequence[str]) -> dict[str, int]:
    """``["K=512", "M=64"]`` (or ``"K=512,M=64"`` in one item) -> ``{"K": 512, "M": 64}``."""
    fixed: dict[str, int] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip().isidentifier():
                raise SweepError(f"--fix {part!r}: write NAME=INTEGER, e.g. K=512")
            fixed[name.strip()] = _int(value, part)
    return fixed


def expand(sweeps: Sequence[Sweep], fixed: Mapping[str, int]) -> list[dict[str, int]]:
    """Every point of the cartesian product of the sweeps, with the fixed syms added."""
    names = [n for s in sweeps for n in s.names]
    twice = sorted({n for n in names if names.count(n) > 1} | (set(names) & set(fixed)))
    if twice:
        raise SweepError(f"{', '.join(twice)} given more than once (in --sweep or --fix)")
    points = []
    for combo in itertools.product(*(s.values for s in sweeps)):
        point = dict(fixed)
        for sweep, value in zip(sweeps, combo, strict=True):
            point.update(dict.fromkeys(sweep.names, value))
        points.append(point)
    return points


def complete(points: Sequence[Mapping[str, int]], syms: Sequence[str],
             index_syms: Sequence[str] = ()) -> list[dict[str, int]]:
    """Check every point gives every sym a value; the error lists what is missing."""
    out = []
    for p in points:
        missing = [s for s in syms if s not in p]
        unknown = [s for s in p if s not in syms]
        if unknown:
            raise SweepError(f"{', '.join(unknown)}: not a sym of this operator "
                             f"(its syms: {', '.join(syms)})")
        if missing:
            hint = " (index syms such as T are sizes too)" if set(missing) & set(index_syms) \
                else ""
            raise SweepError(f"no value for {', '.join(missing)}{hint}: add --sweep or --fix, "
                             f"e.g. --fix {missing[0]}=64")
        out.append({s: int(p[s]) for s in syms})
    return out
