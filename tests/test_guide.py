"""docs/guide.md's examples run as written.

Conventions of the guide: each `## ` section is a test; its ```python blocks run in order in
one namespace (each block from a file of its own: the frontend reads operator source). A
block whose info string says ``raises=NAME`` must raise that class (a polydyn error or a
builtin); ``opencl`` blocks are skipped without an OpenCL platform, ``torch`` blocks without
PyTorch. ```sh blocks run in bash from a scratch directory holding the repository's
``kernels/``, with this Python's scripts first on PATH and this checkout first on PYTHONPATH.
A ```text block right after a block is its expected output (for ``raises``: the error's
message), matched line by line with ``...`` standing for any text.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import polydyn as pd
from polydyn.runtime.opencl import opencl_available

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.S | re.M)


@dataclass
class Block:
    lang: str
    flags: dict[str, str]
    code: str
    expect: str | None = None


def sections() -> dict[str, list[Block]]:
    """The guide's blocks by section title, each code block with its expected output."""
    found: dict[str, list[Block]] = {}
    for part in re.split(r"^## ", GUIDE.read_text(), flags=re.M)[1:]:
        title = part.splitlines()[0].strip()
        blocks: list[Block] = []
        for m in FENCE.finditer(part):
            lang, *words = m.group(1).split()
            if lang == "text":
                assert blocks and blocks[-1].expect is None, f"{title}: stray text block"
                blocks[-1].expect = m.group(2)
                continue
            flags = dict(w.partition("=")[::2] for w in words)
            blocks.append(Block(lang, flags, m.group(2)))
        found[title] = blocks
    return found


SECTIONS = sections()


def matches(expect: str, got: str) -> bool:
    """``got`` equals ``expect`` up to trailing spaces, ``...`` matching any text (newlines
    included)."""
    norm = [line.rstrip() for line in expect.strip("\n").splitlines()]
    pattern = "\n".join(".*?".join(re.escape(s) for s in line.split("...")) for line in norm)
    text = "\n".join(line.rstrip() for line in got.strip("\n").splitlines())
    return re.fullmatch(pattern, text, re.S) is not None


def run_python(block: Block, path: Path, ns: dict) -> str:
    path.write_text(block.code)
    code = compile(block.code, str(path), "exec")
    out = io.StringIO()
    want = block.flags.get("raises")
    if want is None:
        with contextlib.redirect_stdout(out):
            exec(code, ns)
        return out.getvalue()
    cls = getattr(pd, want, None) or getattr(builtins, want)
    with pytest.raises(cls) as info, contextlib.redirect_stdout(out):
        exec(code, ns)
    return str(info.value)


def run_sh(block: Block, cwd: Path) -> str:
    # this Python's scripts (polydyn) first on PATH, importing this checkout's polydyn
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PATH=path, PYTHONPATH=pythonpath)
    proc = subprocess.run(["bash", "-c", block.code], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert proc.returncode == 0, f"{block.code}\n{proc.stdout}"
    return proc.stdout


@pytest.mark.parametrize("title", [t for t, b in SECTIONS.items() if b])
def test_guide_section(title: str, tmp_path: Path) -> None:
    (tmp_path / "kernels").symlink_to(ROOT / "kernels")
    ns: dict = {"__name__": "__main__"}
    for n, block in enumerate(SECTIONS[title]):
        if "opencl" in block.flags and not opencl_available():
            pytest.skip("no OpenCL platform (install PoCL)")
        if "torch" in block.flags and importlib.util.find_spec("torch") is None:
            pytest.skip("no PyTorch (pip install polydyn[torch])")
        if block.lang == "python":
            got = run_python(block, tmp_path / f"block_{n}.py", ns)
        elif block.lang == "sh":
            got = run_sh(block, tmp_path)
        else:
            continue
        if block.expect is not None:
            assert matches(block.expect, got), \
                f"block {n} of {title!r}:\n{block.code}\nprinted:\n{got}\nexpected:\n{block.expect}"


def test_guide_conventions() -> None:
    """Every fence is a known kind, and the matcher does what the guide says."""
    kinds = {b.lang for blocks in SECTIONS.values() for b in blocks}
    assert kinds <= {"python", "sh"}, kinds
    assert matches("a ... c\nd", "a b\nb c  \nd")
    assert not matches("a\nb", "a\nc")
