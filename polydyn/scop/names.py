"""Names in generated code: every legal Python name of an operator compiles.

A user's name stands as it is in the Scop (and so in isl text, C and OpenCL C) when it is safe
there; otherwise it is spelled ``pdu_<name>`` (non-ASCII characters escaped). A name is unsafe
when isl, C, OpenCL C, a header the generated code includes (math.h, complex.h, stdint.h,
stdlib.h, string.h, omp.h, Python.h, numpy) or the generated Python (the reference runner, the
OpenCL host code) gives it a meaning, or when it has a reserved form:
a leading underscore, our prefixes ``pd_``/``pdu``, capitals with an underscore (macros:
``INT_MAX``; capitals without one, such as ``BATCH``, are unsafe only when a header defines
them: ``NULL``, ``EOF``, tests/test_conformance.py checks the list against the C
preprocessor), a ``_t`` suffix (type names), a library prefix (``Py``,
``omp_``, ``get_``, ``atomic_``...) or an OpenCL vector type (``float4``). Since safe names
never start with ``pdu``, the spelling is one-to-one. The Scop keeps generated -> user names
so that calls, messages and sizes use the user's names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import fields, replace

from .affine import Aff, Cond
from .exprs import Expr, Index, Load, Scalar
from .ir import Array, Guard, Loop, Node

ISL_WORDS = frozenset({
    "and", "or", "not", "xor", "implies", "mod", "floor", "ceil", "min", "max", "exists",
    "infty", "true", "false", "rat", "nan", "infinity",
})

C_KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "asm", "typeof", "alignas", "alignof",
    "bool", "true", "false", "nullptr", "static_assert", "thread_local", "constexpr",
    "typeof_unqual", "noreturn",
})

# Macros and functions of the C headers the generated code includes, and the C functions
# it calls (a parameter of that name would hide them).
C_LIBRARY = frozenset({
    "I", "complex", "imaginary", "errno", "assert", "offsetof", "stdin", "stdout", "stderr",
    "math_errhandling", "isnan", "isinf", "isfinite", "isnormal", "signbit", "fpclassify",
    "isgreater", "isgreaterequal", "isless", "islessequal", "islessgreater", "isunordered",
    "abs", "labs", "llabs", "div", "ldiv", "fabs", "fabsf", "exp", "expf", "exp2", "exp2f",
    "expm1", "log", "logf", "log2", "log10", "log1p", "sqrt", "sqrtf", "cbrt", "pow", "powf",
    "sin", "sinf", "cos", "cosf", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "tanhf", "asinh", "acosh", "atanh", "erf", "erff", "erfc", "tgamma", "lgamma",
    "floor", "floorf", "ceil", "ceilf", "round", "trunc", "rint", "lrint", "nearbyint",
    "fmod", "fmodf", "remainder", "fmin", "fmax", "fminf", "fmaxf", "fma", "fmaf", "fdim",
    "hypot", "ldexp", "frexp", "modf", "copysign", "nan", "nanf", "malloc", "calloc",
    "realloc", "free", "aligned_alloc", "posix_memalign", "memset", "memcpy", "memmove",
    "memcmp", "strlen", "printf", "fprintf", "abort", "exit", "atexit", "qsort", "main",
    "alloca", "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
    "uint16_t", "uint32_t", "uint64_t", "intptr_t", "uintptr_t", "wchar_t", "max_align_t",
    "linux", "unix", "i386",  # predefined by GCC in its GNU modes
    "kill_dependency", "le16toh", "le32toh", "le64toh", "be16toh", "be32toh", "be64toh",
    "htole16", "htole32", "htole64", "htobe16", "htobe32", "htobe64",
    # macros in capitals without an underscore (those with one are all refused by form)
    "CMPLX", "CMPLXF", "CMPLXL", "INFINITY", "NAN", "NULL", "EOF", "BUFSIZ", "MAXFLOAT",
    "NFDBITS", "WCONTINUED", "WEXITED", "WEXITSTATUS", "WIFCONTINUED", "WIFEXITED",
    "WIFSIGNALED", "WIFSTOPPED", "WNOHANG", "WNOWAIT", "WSTOPPED", "WSTOPSIG", "WTERMSIG",
    "WUNTRACED", "EDOM", "ERANGE", "EILSEQ",
    "variant",  # the dispatcher's own local
    # free names of the generated Python (the reference runner, the OpenCL host code)
    "np", "math", "range", "len", "print",
})

OPENCL = frozenset({
    "kernel", "global", "local", "constant", "private", "read_only", "write_only",
    "read_write", "uniform", "pipe", "half", "uchar", "ushort", "uint", "ulong", "quad",
    "sampler_t", "event_t", "image1d_t", "image2d_t", "image3d_t", "barrier", "mem_fence",
    "read_mem_fence", "write_mem_fence", "prefetch", "wait_group_events", "printf", "clamp",
    "mad", "mix", "step", "smoothstep", "sign", "degrees", "radians", "dot", "cross",
    "length", "distance", "normalize", "select", "any", "all", "bitselect", "shuffle",
    "shuffle2", "rotate", "popcount", "clz", "ctz", "hadd", "rhadd", "upsample", "mul24",
    "mad24", "mad_hi", "mul_hi", "mad_sat", "abs_diff", "add_sat", "sub_sat", "fract",
    "logb", "ilogb", "rsqrt", "rootn", "pown", "powr", "sincos", "sinpi", "cospi", "tanpi",
    "asinpi", "acospi", "atanpi", "atan2pi", "exp10", "maxmag", "minmag", "nextafter",
    "remquo", "fast_length", "fast_distance", "fast_normalize", "isordered",
})

# The C frontend still refuses these (its names are C names already).
RESERVED_C_INPUT = {
    "and", "or", "not", "mod", "floor", "ceil", "min", "max", "exists", "infty", "true",
    "false", "int", "long", "float", "double", "char", "short", "void", "for", "if", "else",
    "while", "do", "return", "const", "restrict", "static", "unsigned", "signed", "switch",
    "case", "break", "continue", "goto", "sizeof", "struct", "union", "enum", "auto",
    "register", "volatile", "extern", "inline", "default", "typedef",
    # C library functions the generated code calls or declares
    "exp", "expf", "log", "logf", "sqrt", "sqrtf", "tanh", "tanhf", "erf", "erff", "sin",
    "sinf", "cos", "cosf", "fabs", "fabsf", "floorf", "ceilf", "pow", "powf",
    "fmod", "fmodf", "malloc", "calloc", "free", "memset", "memcpy", "posix_memalign", "abs",
    "labs", "printf", "INFINITY", "NAN", "I", "errno", "complex", "imaginary",
}

_FORMS = re.compile(
    r"_|pd_|pdu|Py|PY|_?NPY|npy_|omp_|cl_|CL_|get_|atomic_|atom_|native_|half_|convert_|as_"
    r"|vload|vstore|read_image|write_image|async_|work_group_|sub_group_|M_[A-Z0-9]")
_VECTOR = re.compile(r"(char|uchar|short|ushort|int|uint|long|ulong|float|double|half|bool)"
                     r"(2|3|4|8|16)")


def is_safe(name: str) -> bool:
    """Whether ``name`` can stand as it is in isl text, C and OpenCL C."""
    if not name.isascii() or not name.isidentifier():
        return False
    if name in C_KEYWORDS or name in C_LIBRARY or name in OPENCL or name.lower() in ISL_WORDS:
        return False
    if _FORMS.match(name) or _VECTOR.fullmatch(name) or name.endswith("_t"):
        return False
    # capitals with an underscore are a macro's form (INT_MAX, FLT_EPSILON, M_PI)
    return not ("_" in name and re.fullmatch(r"[A-Z][A-Z0-9_]*", name))


def generated_name(name: str) -> str:
    """The spelling of a user's name in generated code: itself when safe, else ``pdu_...``."""
    if is_safe(name):
        return name
    if name.isascii():
        return f"pdu_{name}"
    escaped = "".join(ch if ch.isascii() and ch != "_" else
                      ("_0" if ch == "_" else f"_{ord(ch):x}x") for ch in name)
    return f"pdux{escaped}"


def fresh_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with the smallest number after it that is not in ``taken``;
    added to ``taken``."""
    base, n = name, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    taken.add(name)
    return name


def renaming(names: Iterable[str]) -> dict[str, str]:
    """user -> generated, for the names that change."""
    return {n: generated_name(n) for n in names if not is_safe(n)}


# --- renaming the frontend's IR (before any isl object is built) -----------------------------
def rename_aff(aff: Aff, names: Mapping[str, str]) -> Aff:
    return aff.subst({v: Aff.var(names[v]) for v in aff.vars() if v in names})


def rename_cond(cond: Cond, names: Mapping[str, str]) -> Cond:
    args = tuple(rename_cond(a, names) if isinstance(a, Cond) else rename_aff(a, names)
                 for a in cond.args)
    return Cond(cond.op, args)


def rename_expr(e: Expr, names: Mapping[str, str]) -> Expr:
    if isinstance(e, Index):
        return replace(e, aff=rename_aff(e.aff, names))
    if isinstance(e, Load):
        return replace(e, array=names.get(e.array, e.array),
                       index=tuple(rename_aff(i, names) for i in e.index))
    if isinstance(e, Scalar):
        return replace(e, name=names.get(e.name, e.name))
    changes = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if isinstance(value, Expr):
            changes[f.name] = rename_expr(value, names)
        elif isinstance(value, tuple) and value and isinstance(value[0], Expr):
            changes[f.name] = tuple(rename_expr(x, names) for x in value)
    return replace(e, **changes)


def rename_loop(loop: Loop, names: Mapping[str, str], body: tuple[Node, ...]) -> Loop:
    return Loop(names.get(loop.var, loop.var), rename_aff(loop.lo, names),
                rename_aff(loop.hi, names), loop.step, body)


def rename_tree(nodes: tuple[Node, ...], names: Mapping[str, str]) -> tuple[Node, ...]:
    out: list[Node] = []
    for n in nodes:
        if isinstance(n, Loop):
            out.append(rename_loop(n, names, rename_tree(n.body, names)))
        elif isinstance(n, Guard):
            out.append(Guard(rename_cond(n.cond, names), rename_tree(n.then, names),
                             rename_tree(n.orelse, names)))
        else:
            out.append(n)
    return tuple(out)


def rename_array(a: Array, names: Mapping[str, str]) -> Array:
    return replace(a, name=names.get(a.name, a.name),
                   shape=tuple(rename_aff(d, names) for d in a.shape),
                   scope=tuple(names.get(v, v) for v in a.scope))


def rename_assume(text: str, names: Mapping[str, str]) -> str:
    """``assume=`` text with the renamed syms respelled (isl's own words stay)."""
    return re.sub(r"[A-Za-z_]\w*", lambda m: m.group(0) if m.group(0) in ISL_WORDS
                  else names.get(m.group(0), m.group(0)), text)


def user_text(text: str, user_names: Iterable[tuple[str, str]]) -> str:
    """A message with generated names (``pdu_I``) written as the user wrote them (``I``)."""
    users = dict(user_names)
    if not users:
        return text
    return re.sub(r"\bpdu\w*", lambda m: users.get(m.group(0), m.group(0)), text)


def is_safe_function_name(name: str) -> bool:
    """The operator's name is the C function's (and the library's): C's, the headers' and
    OpenCL's own words are refused, and the forms C reserves."""
    words = C_KEYWORDS | C_LIBRARY | OPENCL
    return name.isascii() and name not in words and not re.match(r"__|_[A-Z]|pd_|pdu", name)
