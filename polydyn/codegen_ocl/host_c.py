"""The OpenCL host code as C: the compiled host path of a call.

The Python host code (``host.py``) is translated function by function: ``select`` becomes
``pd_select`` and each ``variant_<k>`` becomes ``pd_variant_<k>``, whose ``_launch`` calls set
the kernel's arguments and enqueue it through the OpenCL API. The entry ``pd_launch`` takes
one buffer of 8-byte argument slots that the runtime packs per call (``runtime/ocl_launch.py``):

    [queue, kernels, variant (-1: select), local limit, finish, error call, kernel, argument,
     compute units, syms..., arguments after the syms (buffers and values in kernel order)...,
     bytes to zero first in each of those buffers (0: none)...]

and returns 0, 1 when it declines (no variant covers the sizes, or an input shares a buffer
with an array the call writes; nothing was enqueued) or the OpenCL error code of the failed
call (recorded in the error slots). The few OpenCL entry points it calls are declared here and
taken from the ICD loader pyopencl uses (``pd_init``), so the library needs no OpenCL headers
and links against nothing.

The translation accepts the host code's grammar only (``if``, ``for`` over ``range``, tuple
assignments, ``_launch`` calls, integer expressions with constant positive divisors); anything
else raises ``Untranslatable`` and the operator keeps the Python host path. Python's ``//``
and ``%`` round toward minus infinity: they print as ``pd_floord``/``pd_mod``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..scop.exprs import NUMPY_NAME
from ..scop.ir import Scop

INT64_MAX = (1 << 63) - 1


class Untranslatable(Exception):  # noqa: N818 - a refusal, caught by the caller
    """The host code uses a construct the C printer does not handle."""


# --------------------------------------------------------------------------------------------
# Expressions

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
           ast.GtE: ">="}


def _const(e: ast.expr) -> int | None:
    """The value of a constant integer expression (folded), else None."""
    if isinstance(e, ast.Constant) and type(e.value) in (int, bool):
        return int(e.value)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _const(e.operand)
        return None if v is None else -v
    if isinstance(e, ast.BinOp) and type(e.op) in (*_BINOPS, ast.FloorDiv, ast.Mod):
        a, b = _const(e.left), _const(e.right)
        if a is None or b is None or (isinstance(e.op, ast.FloorDiv | ast.Mod) and b <= 0):
            return None
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b,
                ast.FloorDiv: a // b if b else 0, ast.Mod: a % b if b else 0}[type(e.op)]
    return None


class _Exprs:
    """Python integer and boolean expressions of the host code as C (int64_t)."""

    def __init__(self, names: dict[str, str]):
        self.names = names  # Python name -> C name

    def __call__(self, e: ast.expr) -> str:
        value = _const(e)
        if value is not None:
            if abs(value) > INT64_MAX:
                raise Untranslatable(f"constant {value} beyond 64 bits")
            return str(value) if value >= 0 else f"({value})"
        method = getattr(self, f"_{type(e).__name__}", None)
        if method is None:
            raise Untranslatable(f"expression {ast.unparse(e)}")
        return method(e)

    def _Name(self, e: ast.Name) -> str:  # noqa: N802
        if e.id not in self.names:
            raise Untranslatable(f"unknown name {e.id}")
        return self.names[e.id]

    def _BinOp(self, e: ast.BinOp) -> str:  # noqa: N802
        a, b = self(e.left), self(e.right)
        if isinstance(e.op, ast.FloorDiv | ast.Mod):
            divisor = _const(e.right)
            if divisor is None or divisor <= 0:  # isl's divisions are by positive constants
                raise Untranslatable(f"division by {ast.unparse(e.right)}")
            return f"pd_{'floord' if isinstance(e.op, ast.FloorDiv) else 'mod'}({a}, {b})"
        if type(e.op) not in _BINOPS:
            raise Untranslatable(f"operator in {ast.unparse(e)}")
        return f"({a} {_BINOPS[type(e.op)]} {b})"

    def _UnaryOp(self, e: ast.UnaryOp) -> str:  # noqa: N802
        ops = {ast.USub: "-", ast.Not: "!", ast.UAdd: "+"}
        if type(e.op) not in ops:
            raise Untranslatable(f"operator in {ast.unparse(e)}")
        return f"({ops[type(e.op)]}{self(e.operand)})"

    def _BoolOp(self, e: ast.BoolOp) -> str:  # noqa: N802
        op = " && " if isinstance(e.op, ast.And) else " || "
        return f"({op.join(self(v) for v in e.values)})"

    def _Compare(self, e: ast.Compare) -> str:  # noqa: N802
        parts, left = [], e.left
        for op, right in zip(e.ops, e.comparators, strict=True):
            if type(op) not in _CMPOPS:
                raise Untranslatable(f"comparison in {ast.unparse(e)}")
            parts.append(f"({self(left)} {_CMPOPS[type(op)]} {self(right)})")
            left = right
        return parts[0] if len(parts) == 1 else f"({' && '.join(parts)})"

    def _IfExp(self, e: ast.IfExp) -> str:  # noqa: N802
        return f"({self(e.test)} ? {self(e.body)} : {self(e.orelse)})"

    def _Call(self, e: ast.Call) -> str:  # noqa: N802
        if not (isinstance(e.func, ast.Name) and e.func.id in ("min", "max") and
                len(e.args) >= 2 and not e.keywords):
            raise Untranslatable(f"call {ast.unparse(e)}")
        out = self(e.args[0])
        for arg in e.args[1:]:
            out = f"pd_{e.func.id}({out}, {self(arg)})"
        return out

    def _Subscript(self, e: ast.Subscript) -> str:  # noqa: N802
        index = _const(e.slice)
        if not isinstance(e.value, ast.Name) or index is None or index < 0:
            raise Untranslatable(f"subscript {ast.unparse(e)}")
        return f"{self(e.value)}[{index}]"


# --------------------------------------------------------------------------------------------
# Statements


class _Function:
    """One function of the host code as C: names become ``pd_v_<name>``, tuples assigned to
    a name become arrays declared at the top."""

    def __init__(self, syms: Sequence[str], extra: dict[str, str]):
        self.names = {s: f"pd_v_{s}" for s in syms} | extra
        self.expr = _Exprs(self.names)
        self.arrays: dict[str, int] = {}  # C name -> length, of the tuple-valued names
        self.scalars: set[str] = set()  # C names of the other assigned names
        self.lengths: dict[str, int] = {}  # tuple-valued names: length of the last assignment
        self.loops = 0

    def declarations(self) -> list[str]:
        return [f"  int64_t {v}[{n}];" for v, n in self.arrays.items()] + \
               [f"  int64_t {v};" for v in sorted(self.scalars)]

    def block(self, body: list[ast.stmt], depth: int) -> list[str]:
        out: list[str] = []
        for stmt in body:
            out += self.statement(stmt, depth)
        return out

    def statement(self, s: ast.stmt, depth: int) -> list[str]:
        pad = "  " * depth
        if isinstance(s, ast.Pass):
            return []
        if isinstance(s, ast.Return) and s.value is not None:
            return [f"{pad}return {self.expr(s.value)};"]
        if isinstance(s, ast.If):
            out = [f"{pad}if ({self.expr(s.test)}) {{", *self.block(s.body, depth + 1)]
            if s.orelse:
                out += [f"{pad}}} else {{", *self.block(s.orelse, depth + 1)]
            return [*out, f"{pad}}}"]
        if isinstance(s, ast.For):
            return self._for(s, depth)
        if isinstance(s, ast.Assign):
            return self._assign(s, pad)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            return self._launch(s.value, pad)
        raise Untranslatable(f"statement {ast.unparse(s)}")

    def _for(self, s: ast.For, depth: int) -> list[str]:
        it = s.iter
        if not (isinstance(s.target, ast.Name) and isinstance(it, ast.Call) and
                isinstance(it.func, ast.Name) and it.func.id == "range" and
                1 <= len(it.args) <= 3 and not s.orelse):
            raise Untranslatable(f"loop {ast.unparse(s.iter)}")
        step = _const(it.args[2]) if len(it.args) == 3 else 1
        if not step:
            raise Untranslatable(f"loop step {ast.unparse(it.args[2])}")
        lo, hi = (it.args[0], it.args[1]) if len(it.args) > 1 else (ast.Constant(0), it.args[0])
        var = self.names.setdefault(s.target.id, f"pd_v_{s.target.id}")
        end = f"pd_end{self.loops}"
        self.loops += 1
        pad = "  " * depth
        return [f"{pad}for (int64_t {var} = {self.expr(lo)}, {end} = {self.expr(hi)}; "
                f"{var} {'<' if step > 0 else '>'} {end}; {var} += {step}) {{",
                *self.block(s.body, depth + 1), f"{pad}}}"]

    def _assign(self, s: ast.Assign, pad: str) -> list[str]:
        if len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name):
            raise Untranslatable(f"assignment {ast.unparse(s)}")
        name = s.targets[0].id
        var = self.names.setdefault(name, f"pd_v_{name}")
        if isinstance(s.value, ast.Tuple):
            n = len(s.value.elts)
            self.lengths[name] = n
            self.arrays[var] = max(n, self.arrays.get(var, 1))
            return [f"{pad}{var}[{k}] = {self.expr(v)};" for k, v in enumerate(s.value.elts)]
        if name in self.lengths:
            raise Untranslatable(f"{name} holds a tuple and a number")
        self.scalars.add(var)
        return [f"{pad}{var} = {self.expr(s.value)};"]

    def _tuple(self, e: ast.expr, what: str, pad: str, out: list[str]) -> tuple[str, int]:
        """A tuple argument of ``_launch`` as (C array, length); literals go in a local array."""
        if isinstance(e, ast.Name) and e.id in self.lengths:
            return self.names[e.id], self.lengths[e.id]
        if not isinstance(e, ast.Tuple):
            raise Untranslatable(f"launch argument {ast.unparse(e)}")
        if not e.elts:
            return "NULL", 0
        out.append(f"{pad}  const int64_t pd_{what}[] = "
                   f"{{{', '.join(self.expr(v) for v in e.elts)}}};")
        return f"pd_{what}", len(e.elts)

    def _launch(self, call: ast.Call, pad: str) -> list[str]:
        if not (isinstance(call.func, ast.Name) and call.func.id == "_launch" and
                4 <= len(call.args) <= 5 and not call.keywords):
            raise Untranslatable(f"call {ast.unparse(call)}")
        kid = _const(call.args[0])
        if kid is None:
            raise Untranslatable(f"kernel {ast.unparse(call.args[0])}")
        out = [f"{pad}{{"]
        parts = [self._tuple(e, what, pad, out) for e, what in
                 zip(call.args[1:], ("hosts", "offsets", "groups", "local"), strict=False)]
        if len(parts) == 3:
            parts.append(("NULL", 0))
        args = ", ".join(f"{p}, {n}" for p, n in parts)
        out += [f"{pad}  int pd_rc = pd_enqueue(pd_c, {kid}, {args});",
                f"{pad}  if (pd_rc) return pd_rc;", f"{pad}}}"]
        return out


def _function_c(fn: ast.FunctionDef, syms: Sequence[str]) -> tuple[str, list[str]]:
    """(name, C lines) of ``select`` or ``variant_<k>``."""
    params = [a.arg for a in fn.args.args]
    is_select = fn.name == "select"
    if params != ([] if is_select else ["_launch"]) + list(syms):
        raise Untranslatable(f"parameters of {fn.name}")
    extra = {} if is_select else {"_LOCAL_LIMIT": "pd_c->slot[PD_LOCAL_LIMIT]",
                                  "_UNITS": "pd_c->slot[PD_UNITS]"}
    f = _Function(syms, extra)
    body = f.block(fn.body, 1)
    head = [f"  const int64_t pd_v_{s} = pd_s[{k}];" for k, s in enumerate(syms)]
    head += f.declarations()
    if is_select:
        tail = [] if fn.body and isinstance(fn.body[-1], ast.Return) else ["  return -1;"]
        return "pd_select", ["static int64_t pd_select(const int64_t *pd_s) {", *head, *body,
                             *tail, "}"]
    name = f"pd_{fn.name}"
    return name, [f"static int {name}(const pd_call *pd_c, const int64_t *pd_s) {{", *head,
                  *body, "  return 0;", "}"]


# --------------------------------------------------------------------------------------------
# The module


def tail_bytes(scop: Scop, n_spilled: int) -> list[int]:
    """The kernel arguments after the syms, host values and offsets, that are the same for
    every launch of a call: 0 for a buffer, else the size of a value (``kernel_info``)."""
    import numpy as np

    sizes = [np.dtype(NUMPY_NAME[a.dtype]).itemsize if a.kind == "value" else 0
             for a in scop.arg_arrays]
    return sizes + [0] * (len([a for a in scop.arrays if a.kind == "temp"]) + n_spilled)


def host_c_source(scop: Scop, host_py: str, local_sizes: Sequence[tuple[int, ...]],
                  n_spilled: int) -> str:
    """The C host library of an operator (raises Untranslatable where the Python host code
    must serve every call: local scalars kept in global memory, a construct not handled)."""
    if n_spilled:
        raise Untranslatable("local scalars kept in global memory (sized per call)")
    syms = list(scop.syms)
    module = ast.parse(host_py)
    functions: list[str] = []
    variants: list[str] = []
    for fn in module.body:
        if not isinstance(fn, ast.FunctionDef):
            raise Untranslatable(f"top-level {ast.unparse(fn)}")
        if fn.name == "spill_sizes":
            continue
        if fn.name != "select" and fn.name != f"variant_{len(variants)}":
            raise Untranslatable(f"function {fn.name}")
        name, lines = _function_c(fn, syms)
        if name != "pd_select":
            variants.append(name)
        functions.append("\n".join(lines))
    if "pd_select" not in "".join(functions) or not variants:
        raise Untranslatable("no select or no variant")
    tail = tail_bytes(scop, n_spilled)
    written = [int(a.kind in ("out", "inout")) for a in scop.arg_arrays] + \
              [1] * (len(tail) - len(scop.arg_arrays))
    if any(len(ls) > 3 for ls in local_sizes):
        raise Untranslatable("a launch of more than 3 dimensions")
    tables = [
        f"/* the OpenCL host code of {scop.name} in C (polydyn, codegen_ocl/host_c.py) */",
        PRELUDE,
        f"#define PD_NSYMS {len(syms)}",
        f"#define PD_NTAIL {len(tail)}",
        f"#define PD_NVARIANTS {len(variants)}",
        "/* per argument after the syms: bytes of a value, 0 for a buffer; whether the call",
        "   writes it (a written buffer may not be another argument's too) */",
        f"static const unsigned char pd_tail_bytes[] = {_list(tail)};",
        f"static const unsigned char pd_tail_written[] = {_list(written)};",
        "/* each kernel's work-group size, dimension 0 first */",
        "static const size_t pd_local_size[][3] = {"
        f"{', '.join('{' + ', '.join(map(str, ls)) + '}' for ls in local_sizes) or '{1}'}}};",
        ENQUEUE,
    ]
    entry = ENTRY.replace("PD_VARIANT_TABLE", ", ".join(variants))
    return "\n".join([*tables, *functions, entry]) + "\n"


def _list(values: Sequence[int]) -> str:
    return "{" + ", ".join(str(v) for v in values) + "}" if values else "{0}"


PRELUDE = r"""#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

/* the OpenCL entry points used, with their OpenCL 1.2 prototypes (handles as void *) */
static int32_t (*pd_clSetKernelArg)(void *, uint32_t, size_t, const void *);
static int32_t (*pd_clEnqueueNDRangeKernel)(void *, void *, uint32_t, const size_t *,
                                            const size_t *, const size_t *, uint32_t,
                                            const void *, void *);
static int32_t (*pd_clEnqueueFillBuffer)(void *, void *, const void *, size_t, size_t, size_t,
                                         uint32_t, const void *, void *);
static int32_t (*pd_clFinish)(void *);

/* Take the entry points from the ICD loader at `loader`: 0, or 1 when it cannot be opened,
   2 when an entry point is missing. */
int pd_init(const char *loader) {
  void *lib = dlopen(loader, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 1;
  *(void **)&pd_clSetKernelArg = dlsym(lib, "clSetKernelArg");
  *(void **)&pd_clEnqueueNDRangeKernel = dlsym(lib, "clEnqueueNDRangeKernel");
  *(void **)&pd_clEnqueueFillBuffer = dlsym(lib, "clEnqueueFillBuffer");
  *(void **)&pd_clFinish = dlsym(lib, "clFinish");
  return pd_clSetKernelArg && pd_clEnqueueNDRangeKernel && pd_clEnqueueFillBuffer &&
         pd_clFinish ? 0 : 2;
}

/* Python's // and % (rounding toward minus infinity); b > 0 */
static inline int64_t pd_floord(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t pd_mod(int64_t a, int64_t b) { return a - b * pd_floord(a, b); }
static inline int64_t pd_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t pd_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* the slots of a call (module docstring of codegen_ocl/host_c.py) */
enum { PD_QUEUE, PD_KERNELS, PD_VARIANT, PD_LOCAL_LIMIT, PD_FINISH, PD_ERR_CALL,
       PD_ERR_KERNEL, PD_ERR_ARG, PD_UNITS, PD_HEAD };
/* the failing call, in PD_ERR_CALL */
enum { PD_SET_ARG = 1, PD_ENQUEUE = 2, PD_FILL = 3, PD_FINISH_CALL = 4 };
typedef struct { int64_t *slot; void *queue; void *const *kernels; } pd_call;

static int pd_fail(const pd_call *c, int call, int kernel, int arg, int32_t rc) {
  c->slot[PD_ERR_CALL] = call;
  c->slot[PD_ERR_KERNEL] = kernel;
  c->slot[PD_ERR_ARG] = arg;
  return rc;
}
"""

ENQUEUE = r"""
/* One launch (the Python host code's _launch): nothing when a dimension has no group; the
   kernel's arguments are the syms, the host loop values, the offsets, the call's buffers
   and values, then the __local buffers sized here. */
static int pd_enqueue(const pd_call *c, int kid, const int64_t *hosts, int n_hosts,
                      const int64_t *offsets, int n_offsets, const int64_t *groups,
                      int dims, const int64_t *local_bytes, int n_local) {
  for (int d = 0; d < dims; d++)
    if (groups[d] <= 0) return 0;
  void *kernel = c->kernels[kid];
  const int64_t *tail = c->slot + PD_HEAD + PD_NSYMS;
  uint32_t arg = 0;
  int32_t rc = 0;
  for (int j = 0; j < PD_NSYMS && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, c->slot + PD_HEAD + j);
  for (int j = 0; j < n_hosts && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, hosts + j);
  for (int j = 0; j < n_offsets && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, 8, offsets + j);
  for (int j = 0; j < PD_NTAIL && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, pd_tail_bytes[j] ? pd_tail_bytes[j] : sizeof(void *),
                           tail + j);
  for (int j = 0; j < n_local && !rc; j++, arg++)
    rc = pd_clSetKernelArg(kernel, arg, (size_t)local_bytes[j], NULL);
  if (rc) return pd_fail(c, PD_SET_ARG, kid, (int)arg - 1, rc);
  size_t global[3], local[3];
  for (int d = 0; d < dims; d++) {
    local[d] = pd_local_size[kid][d];
    global[d] = (size_t)groups[dims - 1 - d] * local[d];
  }
  rc = pd_clEnqueueNDRangeKernel(c->queue, kernel, (uint32_t)dims, NULL, global, local, 0,
                                 NULL, NULL);
  return rc ? pd_fail(c, PD_ENQUEUE, kid, -1, rc) : 0;
}
"""

ENTRY = r"""
static int (*const pd_variants[])(const pd_call *, const int64_t *) = {PD_VARIANT_TABLE};

/* Whether a buffer the call writes is also another argument (the Python path copies). */
static int pd_aliased(const int64_t *tail) {
  for (int i = 0; i < PD_NTAIL; i++) {
    if (pd_tail_bytes[i] || !pd_tail_written[i] || !tail[i]) continue;
    for (int j = 0; j < PD_NTAIL; j++)
      if (j != i && !pd_tail_bytes[j] && tail[j] == tail[i]) return 1;
  }
  return 0;
}

/* The call: 0, 1 (declined, nothing enqueued) or the failed OpenCL call's error code. */
int pd_launch(int64_t *slot) {
  pd_call c = {slot, (void *)slot[PD_QUEUE], (void *const *)slot[PD_KERNELS]};
  const int64_t *syms = slot + PD_HEAD;
  const int64_t *tail = syms + PD_NSYMS;
  int64_t variant = slot[PD_VARIANT] >= 0 ? slot[PD_VARIANT] : pd_select(syms);
  if (variant < 0 || variant >= PD_NVARIANTS || pd_aliased(tail)) return 1;
  static const unsigned char zero = 0;
  for (int j = 0; j < PD_NTAIL; j++) {  /* buffers to zero first: their bytes follow */
    size_t bytes = (size_t)tail[PD_NTAIL + j];
    if (!bytes || pd_tail_bytes[j]) continue;
    int32_t rc = pd_clEnqueueFillBuffer(c.queue, (void *)tail[j], &zero, 1, 0, bytes, 0, NULL,
                                        NULL);
    if (rc) return pd_fail(&c, PD_FILL, -1, j, rc);
  }
  int rc = pd_variants[variant](&c, syms);
  if (rc) return rc;
  if (slot[PD_FINISH]) {
    rc = pd_clFinish(c.queue);
    if (rc) return pd_fail(&c, PD_FINISH_CALL, -1, -1, rc);
  }
  return 0;
}
"""
