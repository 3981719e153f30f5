"""On-disk artifact cache: content-addressed entries, atomic publication, checksums.

An entry is a directory ``<root>/<key[:2]>/<key>/`` holding the artifact files and
``meta.json`` with the SHA-256 of each file. It is built in a private temporary directory
and published with one ``rename``: concurrent builders of the same key race harmlessly (the
loser discards its copy). A damaged entry (a checksum that does not match, a missing file) is
never loaded: it is moved aside and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

META = "meta.json"


def content_key(parts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def entry_dir(root: Path, key: str) -> Path:
    return root / key[:2] / key


def is_valid(entry: Path) -> bool:
    try:
        meta = json.loads((entry / META).read_text())
        files = meta["files"]
        return bool(files) and all(_digest(entry / f) == h for f, h in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def find(root: Path, key: str) -> Path | None:
    """The directory of a valid entry for ``key``, or None."""
    entry = entry_dir(root, key)
    return entry if entry.exists() and is_valid(entry) else None


def _discard(entry: Path) -> None:
    """Move a damaged entry out of the way (atomically), then delete it."""
    trash = entry.with_name(f".trash-{entry.name}-{os.getpid()}")
    try:
        os.rename(entry, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def get_or_build(root: Path, key: str, build: Callable[[Path], list[str]],
                 extra_meta: dict | None = None) -> Path:
    """The directory of a valid entry for ``key``; ``build(tmpdir)`` writes the files and
    returns their names when the entry is missing or damaged."""
    entry = entry_dir(root, key)
    if entry.exists():
        if is_valid(entry):
            return entry
        _discard(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".build-{key[:8]}-", dir=entry.parent))
    try:
        files = build(tmp)
        meta = {"key": key, "files": {f: _digest(tmp / f) for f in files}, **(extra_meta or {})}
        (tmp / META).write_text(json.dumps(meta, indent=1))
        try:
            os.rename(tmp, entry)
        except OSError:
            if not is_valid(entry):  # someone published a broken entry: replace it
                _discard(entry)
                os.rename(tmp, entry)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def info(root: Path) -> dict:
    entries = [p for p in root.glob("??/*") if p.is_dir()] if root.exists() else []
    size = sum(f.stat().st_size for e in entries for f in e.iterdir() if f.is_file())
    return {"path": str(root), "entries": len(entries), "bytes": size}


def clear(root: Path) -> int:
    n = 0
    if root.exists():
        for p in root.glob("??/*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
                n += 1
    return n
