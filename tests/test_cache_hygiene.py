"""Cache hygiene (issue 33, part 5): the platform's cache directory (XDG_CACHE_HOME), a size
limit with least-recently-used pruning (automatic past POLYDYN_CACHE_MAX_BYTES, and
``polydyn cache prune``), hits recording their use, and ``polydyn cache info``."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from polydyn.runtime import cache

ROOT = Path(__file__).resolve().parents[1]


def _publish(root: Path, size: int, used: float | None = None) -> Path:
    def build(tmp: Path) -> list[str]:
        (tmp / "payload.bin").write_bytes(b"x" * size)
        return ["payload.bin"]

    entry = cache.get_or_build(root, cache.content_key([uuid.uuid4().hex]), build)
    if used is not None:
        os.utime(entry, (used, used))
    return entry


def test_xdg_cache_home_is_the_default_location(monkeypatch, tmp_path):
    from polydyn.options import Options

    monkeypatch.delenv("POLYDYN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Options().cache_dir == tmp_path / "xdg" / "polydyn"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: absolute only
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Options().cache_dir == tmp_path / ".cache" / "polydyn"
    monkeypatch.setenv("POLYDYN_CACHE_DIR", str(tmp_path / "mine"))
    assert Options().cache_dir == tmp_path / "mine"


def test_prune_removes_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYDYN_CACHE_MAX_BYTES", raising=False)
    old, middle, new = (_publish(tmp_path, 1000, used=t) for t in (1e9, 1e9 + 10, 1e9 + 20))
    building = tmp_path / old.parent.name / ".build-unfinished"
    building.mkdir()  # an entry under construction is never pruned
    # a hit records a use: the oldest becomes the newest
    assert cache.find(tmp_path, old.name) == old
    assert cache.last_use(old) > cache.last_use(new)
    meta = cache.entry_bytes(old) - 1000
    removed, freed = cache.prune(tmp_path, 2 * (1000 + meta))
    assert (removed, freed) == (1, 1000 + meta)
    assert not middle.exists() and old.exists() and new.exists() and building.exists()
    assert cache.prune(tmp_path, 10 ** 9) == (0, 0)


def test_publication_past_the_limit_prunes_but_keeps_the_new_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("POLYDYN_CACHE_MAX_BYTES", "3K")
    first = _publish(tmp_path, 1200, used=1e9)
    second = _publish(tmp_path, 1200, used=1e9 + 1)
    assert first.exists() and second.exists()  # 2400 bytes and metadata: under 3 KiB
    third = _publish(tmp_path, 1200)
    assert third.exists() and not first.exists()
    assert cache.total_bytes(tmp_path) <= 3 * 1024
    monkeypatch.setenv("POLYDYN_CACHE_MAX_BYTES", "1")
    alone = _publish(tmp_path, 5000)  # bigger than the limit: still published and kept
    assert cache.entries(tmp_path) == [alone]


@pytest.mark.parametrize("text,value", [("", 2 << 30), ("123", 123), ("2G", 2 << 30),
                                        ("5mb", 5 << 20), ("7K", 7 << 10)])
def test_max_bytes_spellings(monkeypatch, text, value):
    monkeypatch.setenv("POLYDYN_CACHE_MAX_BYTES", text)
    assert cache.max_bytes() == value


def _cli(cache_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "POLYDYN_CACHE_DIR": str(cache_dir), **env}
    return subprocess.run([sys.executable, "-m", "polydyn", "cache", *args], cwd=ROOT,
                          env=full, capture_output=True, text=True, timeout=120)


def test_cli_info_and_prune(tmp_path):
    a = _publish(tmp_path, 4000, used=1e9)
    b = _publish(tmp_path, 4000)
    info = _cli(tmp_path, "info")
    assert info.returncode == 0, info.stderr
    assert f"cache: {tmp_path}" in info.stdout and "entries: 2" in info.stdout
    assert f"bytes: {cache.total_bytes(tmp_path)}" in info.stdout
    assert "limit: " in info.stdout and a.name[:16] in info.stdout
    lines = info.stdout.splitlines()
    assert lines.index(next(x for x in lines if b.name[:16] in x)) < \
        lines.index(next(x for x in lines if a.name[:16] in x))  # most recent first
    pruned = _cli(tmp_path, "prune", "--max-bytes", "5000")
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 1 least recently used" in pruned.stdout
    assert not a.exists() and b.exists()
    assert _cli(tmp_path, "prune").returncode == 0 and b.exists()  # under the 2 GiB default
    bad = _cli(tmp_path, "prune", "--max-bytes", "lots")
    assert bad.returncode == 2 and bad.stderr.startswith("polydyn: error:"), bad.stderr
    bad = _cli(tmp_path, "info", POLYDYN_CACHE_MAX_BYTES="huge")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "POLYDYN_CACHE_MAX_BYTES" in bad.stderr and "Traceback" not in bad.stderr
