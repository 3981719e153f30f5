"""Malformed operator sources for the frontend fuzz (tests/test_fuzz.py): mutations of the
bundled kernels (tokens, lines, subscripts, the ``assume`` string) and random sources from a
small grammar that mixes the DSL with constructs outside it.

Everything here is text in, text out; the hypothesis strategies only choose among these
edits, so a failing example prints as a readable source.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

KERNELS = sorted(p for p in (Path(__file__).resolve().parents[2] / "kernels").glob("*.py")
                 if p.name != "__init__.py")

TOKENS = (
    "i", "j", "k", "N", "M", "A", "B", "X", "Y", "range", "pd.grid", "pd", "f32", "out",
    "inout", "temp", "pd.index", "0", "1", "2", "-1", "3", "100", "0.5", "1e30", "+", "-",
    "*", "/", "//", "%", "**", "<", "<=", "==", "!=", "and", "or", "not", "if", "else",
    "for", "in", ":", ",", "(", ")", "[", "]", ".", "None", "True", "len", "print", "abs",
    "min", "max", "pd.exp", "pd.inf", "lambda", "yield", '"s"', "...", "@", "=", "+=",
)

# Pools for a replacement of the same kind (a name by a name, an operator by an operator),
# which keeps most mutants valid Python so that they reach polydyn.
SAME_KIND = {
    "name": ("i", "j", "k", "N", "M", "K", "A", "B", "X", "Y", "range", "pd", "f32", "f64",
             "i32", "out", "inout", "temp", "None", "True", "len", "min", "max", "abs", "np",
             "float", "int", "print", "grid", "exp", "inf", "index", "sym", "operator"),
    "number": ("0", "1", "2", "-1", "3", "7", "100", "0.5", "1e30", "0.0", "10**9", "2**63"),
    "arith": ("+", "-", "*", "/", "//", "%", "**", "@", "<<", "&"),
    "compare": ("<", "<=", "==", "!=", ">", ">=", " is ", " in "),
    "augmented": ("=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@="),
}
_ARITH = set(SAME_KIND["arith"])
_COMPARE = set(SAME_KIND["compare"]) | {">", ">="}
_AUG = set(SAME_KIND["augmented"])

SUBSCRIPTS = (
    "{a}, {b}", "{b}, {a}", "{a} + 1, {b}", "{a} - 1, {b}", "{a}", "{a}, {b}, 0",
    "{a} * {b}, {b}", "{a} // 0, {b}", "{a} % 0, {b}", "-{a}, {b}", "N, {b}", "N + 5, {b}",
    "{a}:{b}", "...", "{a}, {b} // 2", "{a} * 2, {b} % 3", "{a}[0], {b}", "1.5, {b}",
    "None, {b}", "{a} if {b} else 0, {b}", "(lambda: 0)(), {b}", "{a}, {b}, {a}, {b}",
)

ASSUMES = (
    "N >=", "N >= 1 and Q >= 2", "N mod 0 = 0", "{ : }", "N >= 1 or", "N = 1/2", "",
    "N >= 10 and N <= 5", "N >= 1 and M >= N + 1 and M <= N", "exists (e: N = 2e)",
    "N >= 1; M >= 1", "1 = 0", "N >= 1 and", "n >= 1", "N >= -5", "N > 2^40",
    "N >= 1 and M >= 1 and H >= KH", "True", "N % 2 = 0", "N >= M and M >= N",
)


def tokens(source: str) -> list[tuple[int, int, str]]:
    """(start offset, end offset, text) of every significant token."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NAME, tokenize.NUMBER, tokenize.OP, tokenize.STRING):
                (r0, c0), (r1, c1) = tok.start, tok.end
                out.append((starts[r0 - 1] + c0, starts[r1 - 1] + c1, tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def operator_span(source: str) -> tuple[int, int]:
    """The character range of the first ``@pd.operator`` function (mutations aim there)."""
    start = source.find("@pd.operator")
    if start < 0:
        return 0, len(source)
    end = source.find("\ndef ", source.find("\ndef ", start) + 1)
    return start, end if end > 0 else len(source)


def replace_token(source: str, which: int, new: str) -> str:
    toks = _in_operator(source)
    if not toks:
        return source
    a, b, _ = toks[which % len(toks)]
    return source[:a] + new + source[b:]


def replace_same_kind(source: str, which: int, pick: int) -> str:
    toks = _in_operator(source)
    if not toks:
        return source
    _, _, text = toks[which % len(toks)]
    if text in _ARITH:
        pool = SAME_KIND["arith"]
    elif text in _COMPARE:
        pool = SAME_KIND["compare"]
    elif text in _AUG:
        pool = SAME_KIND["augmented"]
    elif text[:1].isdigit():
        pool = SAME_KIND["number"]
    elif text.isidentifier():
        pool = SAME_KIND["name"]
    else:
        return source
    return replace_token(source, which, pool[pick % len(pool)])


def delete_token(source: str, which: int) -> str:
    return replace_token(source, which, "")


def insert_token(source: str, which: int, new: str) -> str:
    toks = _in_operator(source)
    if not toks:
        return source
    a, _, _ = toks[which % len(toks)]
    return source[:a] + new + " " + source[a:]


def _in_operator(source: str) -> list[tuple[int, int, str]]:
    lo, hi = operator_span(source)
    return [t for t in tokens(source) if lo <= t[0] < hi]


def _operator_lines(source: str) -> tuple[list[str], int, int]:
    lines = source.splitlines(keepends=True)
    lo, hi = operator_span(source)
    first = source.count("\n", 0, lo)
    last = source.count("\n", 0, hi)
    return lines, first, max(first + 1, last)


def delete_line(source: str, which: int) -> str:
    lines, lo, hi = _operator_lines(source)
    k = lo + which % (hi - lo)
    return "".join(lines[:k] + lines[k + 1:])


def duplicate_line(source: str, which: int) -> str:
    lines, lo, hi = _operator_lines(source)
    k = lo + which % (hi - lo)
    return "".join(lines[:k + 1] + lines[k:])


def swap_lines(source: str, which: int) -> str:
    lines, lo, hi = _operator_lines(source)
    k = lo + which % max(1, hi - lo - 1)
    if k + 1 >= len(lines):
        return source
    lines[k], lines[k + 1] = lines[k + 1], lines[k]
    return "".join(lines)


def reindent_line(source: str, which: int, delta: int) -> str:
    lines, lo, hi = _operator_lines(source)
    k = lo + which % (hi - lo)
    line = lines[k]
    if delta > 0:
        lines[k] = " " * delta + line
    else:
        lines[k] = line[min(-delta, len(line) - len(line.lstrip(" "))):]
    return "".join(lines)


_SUBSCRIPT = re.compile(r"\b([A-Z][A-Za-z]*)\[([^\[\]]*)\]")


def mutate_subscript(source: str, which: int, form: int) -> str:
    """Rewrite the subscripts of one ``X[...]`` in the operator body."""
    lo, hi = operator_span(source)
    body_start = source.find("):", lo)  # skip the signature's tensor types
    body_start = lo if body_start < 0 else body_start
    found = [m for m in _SUBSCRIPT.finditer(source) if body_start <= m.start() < hi]
    if not found:
        return source
    m = found[which % len(found)]
    idx = [s.strip() for s in m.group(2).split(",")]
    a = idx[0] if idx else "i"
    b = idx[1] if len(idx) > 1 else "j"
    new = SUBSCRIPTS[form % len(SUBSCRIPTS)].format(a=a, b=b)
    return source[:m.start(2)] + new + source[m.end(2):]


def mutate_assume(source: str, form: int) -> str:
    m = re.search(r'assume="([^"]*)"', source)
    new = ASSUMES[form % len(ASSUMES)]
    if m is None:
        return source.replace("@pd.operator\n", f'@pd.operator(assume="{new}")\n', 1)
    return source[:m.start(1)] + new + source[m.end(1):]


_EDITS = {
    "replace": lambda src, x, y, tok: replace_token(src, x, tok),
    "replace_same": lambda src, x, y, tok: replace_same_kind(src, x, y),
    "delete": lambda src, x, y, tok: delete_token(src, x),
    "insert": lambda src, x, y, tok: insert_token(src, x, tok),
    "delete_line": lambda src, x, y, tok: delete_line(src, x),
    "duplicate_line": lambda src, x, y, tok: duplicate_line(src, x),
    "swap_lines": lambda src, x, y, tok: swap_lines(src, x),
    "indent": lambda src, x, y, tok: reindent_line(src, x, 4 if y % 2 else -4),
    "subscript": lambda src, x, y, tok: mutate_subscript(src, x, y),
    "assume": lambda src, x, y, tok: mutate_assume(src, y),
}


def apply(source: str, edit: tuple) -> str:
    """One edit, as drawn by the hypothesis strategy: (kind, two integers, a token)."""
    kind, x, y, tok = edit
    return _EDITS[kind](source, x, y, tok)


EDIT_KINDS = ("replace", "replace_same", "replace_same", "replace_same", "delete", "insert",
              "delete_line", "duplicate_line", "swap_lines", "indent", "subscript",
              "subscript", "assume")


# ------------------------------------------------------------------------------------------
# Random sources from a grammar: mostly the DSL (so that many sources get past the first
# check), with one construct from outside it now and then.

PARAMS = ("A: f32[N, M]", "B: out(f32[N, M])", "C: inout(f32[M])")
PARAMS_ODD = (
    "T: pd.index", "alpha: f32", "D: f32[N * M]", "D: f32", "D", "D: int", "D: out(3)",
    "D: f32[N // 0]", "D: f32[-1]", "D: temp(f32[N])", "D: out(f32[N][M])", "*args",
    "D: f32[N] = None", "D: out(f32[N, 2 * M])", "D: f32[(N - 1) // 2 + 1]", "D: f32[N - 3]",
    "N: pd.index", "D: out(f32[N], f32[M])", "D: 'f32[N]'", "D: f32[1.5]", "D: f32[Q]",
    "D: pd.f32[N]", "D: out(i64[M, N])", "A: f32[N]", "D: f32[N % M]", "D: f32[max(N, M)]",
)
HEADERS = (  # inside ``for i in range(N): for j in range(M):``
    "for k in range(M):", "for k in range(i, N, 2):", "if i < j:", "if (i + j) % 2 == 0:",
    "if 0 <= i < N - 1:", "for k in range(j + 1):", "for k in range(min(N, M)):", "else:",
)
HEADERS_ODD = (
    "for i in range(0, N, 0):", "for i in pd.grid(N):", "while i < N:", "if A[i, j] > 0:",
    "for i in range(N - 1, -1, -1):", "for i in range(A[0, 0]):", "for i in range(N * M):",
    "for i in [1, 2]:", "if N:", "if i % 0 == 0:", "with open('x') as f:", "try:",
    "for i in range(1, N, i):", "for (i) in range(N):", "for i in reversed(range(N)):",
    "for i in range(N) if N else []:", "for i in range(N):  # twice", "for N in range(M):",
    "if i < N or A[0, 0]:", "for i in range(N // 0):", "for i in range(2 ** 70):",
    "for i in range(N, N + 2 ** 40):", "async for i in range(N):", "elif i < N:",
)
STATEMENTS = (
    "B[i, j] = {e}", "B[i, j] += {e}", "C[j] -= {e}", "C[j] = {e}", "B[i, j] *= {e}",
    "s = {e}; B[i, j] = s", "s = {e}; s += {e}; C[j] = s * 2.0", "pass",
)
STATEMENTS_ODD = (
    "s += {e}", "return B", "break", "T = temp(f32[N])", "T = temp(f32[Q])", "del A",
    "B[i:j] = 0", "print(i)", "x: float = 1.0", "import os", "global N", "B[i, j] @= A[i, j]",
    "B[i, j] //= 2", "B[i, j], C[j] = 1, 2", "B[i, j] = C[j] = 1", "A[i, j] = 1.0", "N = 3",
    "i = 0", "B[i, j] = yield", "s = s", "B[N, M] = 1", "assert i < N", "raise ValueError",
    "continue", "B.x = 1", "B[i, j] = *A", "nonlocal s", "B[i] = 1.0", "B[i, j, 0] = 1.0",
    "B[j, i] = 1.0", "C[j + 1] = 1.0", "B[i, j] = {e} if i else {e}", "B[A[i, j], j] = 1.0",
    "T = temp(f32[N]); T[i] = 1.0", "B[i, j] = lambda: 0", "C[i * j] = 1.0", "B[-1, j] = 0.0",
)
EXPRS = (
    "A[i, j]", "C[j]", "B[i, j]", "1.0", "i", "N", "pd.exp(A[i, j])", "max(A[i, j], 0.0)",
    "A[i, j] ** 2", "pd.f32(A[i, j])", "pd.inf", "-pd.inf", "A[i, j] if i > 0 else 0.0",
    "A[i, j] // 2", "abs(i - N)", "pd.i32(A[i, j])", "A[i, j] if A[i, j] > 0 else C[j]",
    "min(A[i, j], C[j], 1.0)", "pd.sqrt(abs(C[j]))", "pd.tanh(A[i, j]) * 2.0",
)
EXPRS_ODD = (
    "A[i * j, j]", "A[A[i, j], j]", "len(A)", "A.shape[0]", "np.sum(A)", "pd.exp(A[i, j], 2)",
    "min(1)", "None", "'s'", "[1]", "(1, 2)", "x", "A[i, j] and B[i, j]", "not A[i, j]",
    "A[i, j] < B[i, j] < 1", "A[i, j] % 0", "1 / 0", "i // 0", "A[N, M]", "A[-1, j]",
    "A[i + 10, j]", "alpha * A[i, j]", "T", "pd.sqrt(-1.0)", "float(i)", "A[i, j] @ C[j]",
    "f32[N]", "pd", "lambda: 0", "(x := 1)", "A[i, j] is None", "A[i, j] in C", "{1: 2}",
    "[k for k in range(N)]", "~i", "i << 1", "sum(A)", "C[j] if A[i, j] > 0 else C[j + 1000]",
    "pd.grid(N)", "range(N)", "A[i]", "A[i, j, k]", "A[i, j][0]", "s", "2 ** 100", "1e400",
    "pd.exp", "max()", "pd.f32()", "A[i:j, j]", "C[j] ** C[j]", "pd.erf(A[i, j])",
)


def random_source(choices: list[int], name: str) -> str:
    """An operator built from ``choices`` (integers drawn by hypothesis): mostly the DSL,
    with an odd parameter, header, statement or expression one time in eight."""
    it = iter(choices)

    def pick(usual: tuple, odd: tuple) -> str:
        n = next(it, 0)
        pool = odd if n % 8 == 0 else usual
        return pool[(n // 8) % len(pool)]

    params = list(PARAMS)
    if next(it, 0) % 4 == 0:
        params.append(PARAMS_ODD[next(it, 0) % len(PARAMS_ODD)])
    lines: list[str] = []

    def block(depth: int, budget: int) -> None:
        for _ in range(1 + next(it, 0) % 3):
            r = next(it, 0) % 10
            if r < 4 and depth < 4 and budget > 0:
                lines.append("    " * depth + pick(HEADERS, HEADERS_ODD))
                block(depth + 1, budget - 1)
            else:
                text = pick(STATEMENTS, STATEMENTS_ODD)
                while "{e}" in text:
                    text = text.replace("{e}", pick(EXPRS, EXPRS_ODD), 1)
                lines.append("    " * depth + text)

    for _ in range(1 + next(it, 0) % 2):
        lines.append("    for i in range(N):")
        lines.append("        for j in range(M):")
        block(3, 2)
    assume = ("N >= 1", "", "N >= 1 and M >= 1", "N >= M", "Q >= 1", "N >=")[next(it, 0) % 6]
    deco = f'@pd.operator(assume="{assume}")' if assume else "@pd.operator"
    head = ("import numpy as np\n\nimport polydyn as pd\n"
            "from polydyn import f32, f64, i32, i64, inout, out, temp\n\n"
            'N, M = pd.sym("N M")\n\n\n')
    return head + f"{deco}\ndef {name}({', '.join(params)}):\n" + "\n".join(lines) + "\n"
