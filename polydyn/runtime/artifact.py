"""Compiled C kernels in the cache, keyed before scheduling.

The key is everything that decides the generated code and its build: the operator's Scop (its
full dataclass form: statements, domains, arrays, dtypes, assumptions, names), the variants
asked for (regions and recipes), the options that change code, the target machine the
schedule plans for, the C compiler's identity and polydyn's own source. A hit rebuilds the
Kernel from the entry (sources, variants with their regions and recipes, notes) and the
library's cache entry, with no isl scheduling, AST build or C emission.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import islpy as isl

from ..parametric.variants import Variant
from ..schedule.recipe import Schedule
from ..scop.ir import Scop
from . import cache

FORMAT = 1  # the entry's layout; a change makes older entries misses
KERNEL_META = "kernel.json"


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """A digest of polydyn's own modules: a changed compiler never reuses an old entry."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def variants_key(variants: list[tuple[Any, Any]] | None) -> str:
    """The variants a compile asks for, as text (regions as given, recipes as JSON)."""
    if not variants:
        return ""
    out = []
    for item in variants:
        if not (isinstance(item, tuple | list) and len(item) == 2):
            return repr(item)  # refused later by the pipeline; keyed all the same
        region, recipe = item
        recipe_text = json.dumps(recipe.to_json()) if isinstance(recipe, Schedule) \
            else repr(recipe)
        out.append(f"{region}\t{recipe_text}")
    return "\n".join(out)


def kernel_key(scop: Scop, variants: list[tuple[Any, Any]] | None, settings: list[str]
               ) -> str:
    """The cache key of a compile: ``settings`` are the options, target and compiler
    identity as text (the pipeline's)."""
    return cache.content_key(["kernel", str(FORMAT), source_fingerprint(), scop_text(scop),
                              variants_key(variants), *settings])


def scop_text(scop: Scop) -> str:
    """The Scop as key text, its isl sets without redundant constraints. isl drops such
    constraints from a set in place (``remove_redundancies``, ``lexmin``: the set is the
    same, its text is not), so a compile changed the text of the operator's own context and
    the next compile of it in the process missed the cache."""
    def canonical(s: isl.Set) -> isl.Set:
        return isl.Set(str(s)).remove_redundancies()  # a copy: the operator's set untouched

    return repr(scop.replace(context=canonical(scop.context), statements=tuple(
        st.replace(domain=canonical(st.domain)) for st in scop.statements)))


def save(root: Path, key: str, sources: dict[str, str], variants: list[Variant],
         notes: tuple[str, ...], library: Path, module: str | None) -> None:
    """Publish the entry of a compile (the library stays in its own entry)."""
    # the library's place in the cache, relative to its root (a moved cache keeps working)
    meta = {"format": FORMAT, "library": str(library.relative_to(root)), "module": module,
            "notes": list(notes), "sources": sorted(sources),
            "variants": [{"name": v.name, "region": str(v.region), "summary": v.summary,
                          "recipe": v.recipe.to_json()} for v in variants]}

    def build(tmp: Path) -> list[str]:
        for name, text in sources.items():
            (tmp / name).write_text(text)
        (tmp / KERNEL_META).write_text(json.dumps(meta, indent=1))
        return [*sorted(sources), KERNEL_META]

    cache.get_or_build(root, key, build, {"kernel": next(iter(sources)).split(".")[0]})


def load(root: Path, key: str, scop: Scop) -> dict[str, Any] | None:
    """What a hit holds: ``sources`` (by file name), ``variants``, ``notes``, ``library``,
    ``module``; None on a miss (no entry, a damaged one, or a library gone from the cache)."""
    entry = cache.find(root, key)
    if entry is None:
        return None
    try:
        meta = json.loads((entry / KERNEL_META).read_text())
        library = root / meta["library"]
        if meta.get("format") != FORMAT or not cache.is_valid(library.parent):
            return None
        cache.touch(library.parent)  # a use of the library entry too
        sources = {name: (entry / name).read_text() for name in meta["sources"]}
        space = scop.context.get_space()
        variants = [Variant(v["name"], isl.Set(v["region"]).align_params(space), None,
                            Schedule.from_json(v["recipe"]), v["summary"])
                    for v in meta["variants"]]
    except (OSError, ValueError, KeyError, TypeError, isl.Error):
        return None
    return {"sources": sources, "variants": variants, "notes": tuple(meta["notes"]),
            "library": library, "module": meta["module"]}
