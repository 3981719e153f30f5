"""On-disk artifact cache: content-addressed entries, atomic publication, checksums.

An entry is a directory ``<root>/<key[:2]>/<key>/`` holding the artifact files and
``meta.json`` with the SHA-256 of each file. It is built in a private temporary directory
and published with one ``rename``: concurrent builders of the same key race harmlessly (the
loser discards its copy). A damaged entry (a checksum that does not match, a missing file) is
never loaded: it is moved aside and rebuilt.

Size: past ``max_bytes()`` (POLYDYN_CACHE_MAX_BYTES, default 2 GiB) the least recently used
entries are removed after a publication (``prune``; a process measures the cache after
publishing a 64th of the limit, not after each entry). An entry's modification time is its
last use: ``find`` and ``get_or_build`` touch it on every hit. Entries under construction
(``.build-*``) and the one just published are never pruned.

Builders of one key: ``building`` lets one process at a time build a key (an advisory lock
beside the entry); the others wait, then find the entry instead of building it again (the
processes of a data-parallel job, the workers of a test run, compiling the same kernel).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

META = "meta.json"
DEFAULT_MAX_BYTES = 2 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


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


def touch(entry: Path) -> None:
    """Record a use of ``entry`` (its modification time orders pruning)."""
    with contextlib.suppress(OSError):  # a read-only cache still serves hits
        os.utime(entry)


def find(root: Path, key: str) -> Path | None:
    """The directory of a valid entry for ``key`` (its use recorded), or None."""
    entry = entry_dir(root, key)
    if entry.exists() and is_valid(entry):
        touch(entry)
        return entry
    return None


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
            touch(entry)
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
    _after_publication(root, entry)
    return entry


# How long a process waits for another that builds the same key before building it too: a
# build that takes longer is more likely stuck than slow (the biggest bundled kernel builds in
# under a minute); a holder that dies releases its lock at once.
BUILD_WAIT_S = 600.0


@contextlib.contextmanager
def building(root: Path, key: str, on_wait: Callable[[], None] | None = None,
             wait_s: float = BUILD_WAIT_S) -> Iterator[None]:
    """Held while this process builds ``key``: another process (or thread) that enters it
    for the same key waits until the first leaves (``on_wait`` is called when it starts
    waiting), so that it looks the entry up again instead of building it a second time.
    Where no lock can be taken (a read-only cache, no ``fcntl``) or after ``wait_s``, the
    block runs unlocked: concurrent builders race harmlessly (``get_or_build``)."""
    path = entry_dir(root, key).with_name(f".lock-{key}")
    try:
        fd = _lock(path, on_wait, wait_s)
    except OSError:
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            _unlock(path, fd)


def _lock(path: Path, on_wait: Callable[[], None] | None, wait_s: float) -> int | None:
    """A descriptor of ``path`` holding its exclusive lock, or None (no ``fcntl``, or
    ``wait_s`` passed); OSError where the file system cannot lock. The lock file is removed
    by its holder on leaving; a process that locked a file removed meanwhile locks the new
    one."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    deadline = time.monotonic() + wait_s
    waited = False
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # held by another builder
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        return None
                    if not waited and on_wait is not None:
                        on_wait()
                    waited = True
                    time.sleep(0.05)
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:  # removed by the holder that just left: lock the new one
            pass
        except OSError:  # no locks here: nobody holds the file
            _unlock(path, fd)
            raise
        os.close(fd)


def _unlock(path: Path, fd: int) -> None:
    import fcntl

    with contextlib.suppress(OSError):
        path.unlink()  # before the lock is released: a waiter then sees a new file
    with contextlib.suppress(OSError):
        # released explicitly: a child forked meanwhile shares the descriptor, and closing
        # ours alone would leave the lock held while the child lives
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


# per cache root: (its bytes when this process last measured them, bytes this process has
# published since)
_sizes: dict[Path, tuple[int, int]] = {}
_sizes_lock = threading.Lock()


def _after_publication(root: Path, entry: Path) -> None:
    """Prune ``root`` past its limit. Measuring the cache reads every entry, so a process
    measures it at its first publication, then once it has published a 64th of the limit
    since or its own count passes the limit: what other processes add meanwhile is seen at
    the next measure."""
    limit = max_bytes()
    added = entry_bytes(entry)
    with _sizes_lock:
        measured, since = _sizes.get(root, (-1, 0))
        since += added
        if measured >= 0 and since <= limit // 64 and measured + since <= limit:
            _sizes[root] = (measured, since)
            return
        _sizes[root] = (measured, 0)  # measured below; a concurrent publication counts anew
    total = total_bytes(root)
    if total > limit:
        total -= prune(root, limit, keep=entry)[1]
    with _sizes_lock:
        _sizes[root] = (total, _sizes[root][1])


def max_bytes() -> int:
    """The size limit: POLYDYN_CACHE_MAX_BYTES (bytes, or with a K, M, G or T suffix)."""
    text = os.environ.get("POLYDYN_CACHE_MAX_BYTES", "").strip().upper().removesuffix("B")
    if not text:
        return DEFAULT_MAX_BYTES
    unit = text[-1] if text[-1] in _UNITS else ""
    number = text[:-1] if unit else text
    if not number.isdigit():
        from ..errors import UsageError

        raise UsageError(f"POLYDYN_CACHE_MAX_BYTES={os.environ['POLYDYN_CACHE_MAX_BYTES']!r}: "
                         "write a size in bytes, e.g. 2000000000 or 2G")
    return int(number) * _UNITS[unit]


def entries(root: Path) -> list[Path]:
    """The published entries (not those under construction or being removed)."""
    if not root.exists():
        return []
    return [p for p in root.glob("??/*") if p.is_dir() and not p.name.startswith(".")]


def entry_bytes(entry: Path) -> int:
    try:
        return sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
    except OSError:  # removed meanwhile
        return 0


def total_bytes(root: Path) -> int:
    return sum(entry_bytes(e) for e in entries(root))


def last_use(entry: Path) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0


def prune(root: Path, limit: int, keep: Path | None = None) -> tuple[int, int]:
    """Remove the least recently used entries until the cache holds at most ``limit`` bytes
    (never ``keep``); returns (entries removed, bytes freed)."""
    sized = [(last_use(e), entry_bytes(e), e) for e in entries(root)]
    total = sum(size for _, size, _ in sized)
    removed = freed = 0
    for _, size, entry in sorted(sized, key=lambda t: t[0]):
        if total <= limit:
            break
        if entry == keep:
            continue
        _discard(entry)
        total -= size
        removed += 1
        freed += size
    return removed, freed


def describe(entry: Path) -> str:
    """What an entry holds, in a few words (its kernel's or library's name)."""
    try:
        meta = json.loads((entry / META).read_text())
    except (OSError, ValueError):
        return "?"
    if "name" in meta:
        return f"library {meta['name']}"
    if "kernel" in meta:
        return f"kernel {meta['kernel']}"
    if "unit" in meta:
        return f"object {meta['unit']}"
    return ", ".join(sorted(meta.get("files", {}))) or "?"


def info(root: Path) -> dict:
    found = entries(root)
    return {"path": str(root), "entries": len(found),
            "bytes": sum(entry_bytes(e) for e in found), "max_bytes": max_bytes(),
            "list": sorted(((last_use(e), entry_bytes(e), e.name, describe(e)) for e in found),
                           reverse=True)}


def clear(root: Path) -> int:
    n = 0
    for p in entries(root):
        _discard(p)
        n += 1
    return n
