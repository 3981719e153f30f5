"""The operator tree of the fuzzer (arrays, loops, ifs, assignments, expression trees) and
its rendering to a Python module that defines the operator with ``@pd.operator``.

generator.py builds these trees at random; shrink.py edits them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# The frontend refuses ``range(hi, lo, -1)`` (a negative literal step is not recognised as an
# integer constant, see README.md), so reverse loops name their step through a module
# constant unless ``literal_steps`` is set.
BACK_NAMES = {-1: "BACK", -2: "BACK2", -3: "BACK3"}


# ------------------------------------------------------------------------------------------
# The tree


@dataclass(frozen=True)
class Ex:
    """An expression: ``fmt`` with ``{}`` holes filled by ``args``; ``kind`` is "f" (float),
    "i" (integer) or "b" (a condition)."""

    fmt: str
    args: tuple[Ex, ...] = ()
    kind: str = "f"

    def render(self) -> str:
        return self.fmt.format(*(a.render() for a in self.args)) if self.args else self.fmt

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)


@dataclass(frozen=True)
class Assign:
    target: str  # ``X[i, j + 1]`` or a scalar name
    op: str  # "=", "+=", "-=", "*="
    value: Ex


@dataclass(frozen=True)
class Loop:
    var: str  # "i" or "i, j" for pd.grid
    header: str  # "range(1, N + 1)", "pd.grid(N, M)"
    body: tuple


@dataclass(frozen=True)
class If:
    cond: str
    then: tuple
    orelse: tuple = ()


@dataclass(frozen=True)
class Dim:
    """An extent ``(sym + pad) // div`` (``pad`` may be negative: ``N - 2``), or the
    constant ``pad`` when ``sym`` is None."""

    sym: str | None
    pad: int
    div: int = 1

    def render(self) -> str:
        if self.sym is None:
            return str(self.pad)
        text = plus(self.sym, self.pad)
        if self.div == 1:
            return text
        return f"{text} // {self.div}" if self.pad == 0 else f"({text}) // {self.div}"


def plus(base: str, d: int) -> str:
    """``base + d`` as text: ``N``, ``N + 2``, ``N - 1``."""
    if d == 0:
        return base
    return f"{base} + {d}" if d > 0 else f"{base} - {-d}"


@dataclass(frozen=True)
class Arr:
    name: str
    kind: str  # "in", "out", "inout", "temp", "value"
    dtype: str  # "f32", "f64", "i32", "i64"
    dims: tuple[Dim, ...] = ()

    @property
    def is_int(self) -> bool:
        return self.dtype.startswith("i")

    def type_text(self) -> str:
        if self.kind == "value":
            return self.dtype
        t = f"{self.dtype}[{', '.join(d.render() for d in self.dims)}]"
        return {"in": t, "out": f"out({t})", "inout": f"inout({t})", "temp": f"temp({t})"}[
            self.kind]


@dataclass(frozen=True)
class Op:
    name: str
    syms: tuple[str, ...]
    arrays: tuple[Arr, ...]
    body: tuple
    assume: str = ""
    literal_steps: bool = False
    header_comment: str = ""

    def replace(self, **kw) -> Op:
        return replace(self, **kw)


# ------------------------------------------------------------------------------------------
# Rendering


def _render_block(nodes: tuple, indent: int, out: list[str], steps: set[int],
                  literal: bool) -> None:
    """Append the lines of ``nodes`` to ``out``; ``steps`` collects the reverse steps used
    (their module constants are declared), ``literal`` writes them as numbers instead."""
    pad = "    " * indent
    if not nodes:
        out.append(f"{pad}pass")
    for n in nodes:
        if isinstance(n, Assign):
            out.append(f"{pad}{n.target} {n.op} {n.value.render()}")
        elif isinstance(n, Loop):
            out.append(f"{pad}for {n.var} in {_header(n.header, steps, literal)}:")
            _render_block(n.body, indent + 1, out, steps, literal)
        elif isinstance(n, If):
            _render_if(n, indent, out, steps, literal)
        else:
            raise TypeError(f"unknown node {n!r}")


def _header(header: str, steps: set[int], literal: bool) -> str:
    for step, name in BACK_NAMES.items():
        token = f", {name})"
        if header.endswith(token):
            steps.add(step)
            if literal:
                return header[: -len(token)] + f", {step})"
    return header


def _render_if(n: If, indent: int, out: list[str], steps: set[int], literal: bool) -> None:
    pad = "    " * indent
    out.append(f"{pad}if {n.cond}:")
    _render_block(n.then, indent + 1, out, steps, literal)
    orelse = n.orelse
    while len(orelse) == 1 and isinstance(orelse[0], If):
        out.append(f"{pad}elif {orelse[0].cond}:")
        _render_block(orelse[0].then, indent + 1, out, steps, literal)
        orelse = orelse[0].orelse
    if orelse:
        out.append(f"{pad}else:")
        _render_block(orelse, indent + 1, out, steps, literal)


def used_syms(op: Op) -> list[str]:
    """The syms the operator's text mentions, in declaration order."""
    body: list[str] = []
    _render_block(op.body, 0, body, set(), True)
    text = "\n".join(body) + " ".join(a.type_text() for a in op.arrays) + " " + op.assume
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return [s for s in op.syms if s in words]


def render(op: Op) -> str:
    """The operator as a self-contained Python module."""
    body: list[str] = []
    steps: set[int] = set()
    temps = [a for a in op.arrays if a.kind == "temp"]
    for a in temps:
        body.append(f"    {a.name} = {a.type_text()}")
    _render_block(op.body, 1, body, steps, op.literal_steps)
    syms = used_syms(op)
    shape_syms = {d.sym for a in op.arrays if a.kind not in ("temp", "value") for d in a.dims}
    params = [f"{a.name}: {a.type_text()}" for a in op.arrays if a.kind != "temp"]
    params += [f"{s}: pd.index" for s in syms if s not in shape_syms]
    lines = []
    if op.header_comment:
        lines.append(f'"""{op.header_comment}"""')
        lines.append("")
    lines.append("import polydyn as pd")
    lines.append("from polydyn import f32, f64, i32, i64, inout, out, temp  # noqa: F401")
    lines.append("")
    if syms:
        lhs = ", ".join(syms)  # pd.sym("N") is one sym, pd.sym("N M") a tuple
        lines.append(f'{lhs} = pd.sym("{" ".join(syms)}")')
    if not op.literal_steps:
        for step in sorted(steps, reverse=True):
            lines.append(f"{BACK_NAMES[step]} = {step}")
    lines.append("")
    lines.append("")
    deco = f'@pd.operator(assume="{op.assume}")' if op.assume else "@pd.operator"
    lines.append(deco)
    lines.append(f"def {op.name}({', '.join(params)}):")
    lines.extend(body)
    return "\n".join(lines) + "\n"


