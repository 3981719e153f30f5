"""C source -> Scop (SPEC section 5): preprocess with the system C preprocessor, parse with
pycparser, pick the function, translate its ``#pragma scop`` region (or its whole body).

The mapping: ``int``/``long`` parameters are syms (context: every sym >= 0); C99 array
parameters (``float A[N][K]``) give shapes and dtypes, arrays the region writes are ``inout``
(updated in place, as the C function would) and the others ``in``; ``float``/``double``
parameters are runtime ``value`` scalars; int parameters no shape carries are index syms
(keywords at call time). The statements go through the same steps as the Python frontend:
pending statements, domains (``access.make_domain``), ``retype_statements``, ``check_scop``.

C's truncating ``/`` and ``%`` equal floor division only for non-negative dividends: in bounds
and subscripts they are accepted where isl proves the dividend >= 0 (and refused elsewhere); in
values they are computed exactly (toward zero). Values follow C's typing (``0.5`` is a double,
``float * int`` is a float), made explicit with casts. Sizes at which the C code would access an
array out of bounds (``y[0]`` with ``n = 0``) are left out of the context (``in_bounds_sizes``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import islpy as isl
from pycparser import c_ast, c_parser

from ..errors import FrontendError, SourceLoc
from .c_exprs import Ctx
from .c_stmts import CBody
from .checks import _unguarded_loads, array_bounds, check_scop
from .domains import conds_text, loop_constraints, make_domain
from .exprs import Load
from .ir import Array, Scop, Statement, rename_statements
from .operator import Operator
from .typing import retype_statements

_BASE_TYPES = {
    ("float",): "f32", ("double",): "f64", ("int",): "i32", ("long",): "i64",
    ("long", "int"): "i64", ("long", "long"): "i64", ("long", "long", "int"): "i64",
    ("short",): None, ("char",): None, ("_Bool",): None, ("long", "double"): None,
}
# Typedef names the stripped system headers would have declared (their text is dropped).
_PRELUDE = """\
typedef int int32_t; typedef long int64_t; typedef short int16_t; typedef signed char int8_t;
typedef unsigned int uint32_t; typedef unsigned long uint64_t; typedef unsigned short uint16_t;
typedef unsigned char uint8_t; typedef unsigned long size_t; typedef long ssize_t;
typedef long ptrdiff_t; typedef long intptr_t; typedef unsigned long uintptr_t;
typedef struct _IO_FILE FILE; typedef float float_t; typedef double double_t;
typedef long time_t; typedef long clock_t; typedef int wchar_t;
"""
_PRELUDE_FILE = "<polydyn prelude>"
_CPP_FLAGS = ["-E", "-x", "c", "-std=gnu11", "-D__restrict=restrict", "-D__restrict__=restrict",
              "-D__inline=inline", "-D__inline__=inline", "-D__extension__=",
              "-D__attribute__(x)=", "-D__asm__(x)="]
_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d+)*)\s*$')


class COperator(Operator):
    """A C function compiled as an operator: ``.name``, ``.scop``, ``.reference(...)``."""

    def __init__(self, scop: Scop, source_file: str):
        self.fn = None
        self.name = scop.name
        self.assume = ""
        self.scop = scop
        self.source_file = source_file
        self.__doc__ = f"C function {scop.name} from {source_file}"

    def __repr__(self) -> str:
        return (f"<polydyn C operator {self.name}({', '.join(self.scop.args)}) from "
                f"{self.source_file}>")


def operator_from_c(path_or_source: str | Path, function: str | None = None) -> COperator:
    """Parse C (a path, or source text) and build the operator for one of its functions."""
    file, text, path = _read(path_or_source)
    cpp_text = _preprocess(file, text, path)
    sources = {file: text.splitlines()}
    try:
        ast = c_parser.CParser().parse(cpp_text, file)
    except c_parser.ParseError as exc:
        raise FrontendError(f"C syntax error: {_strip_coord(str(exc))}",
                            _coord_loc(str(exc), file, sources)) from None
    fdef = _pick_function(ast, function, file)
    frontend = CFrontend(file, sources, _typedefs(ast))
    return COperator(frontend.build(fdef), file)


# --- reading and preprocessing -------------------------------------------------------------------
def _read(path_or_source: str | Path) -> tuple[str, str, Path | None]:
    """``(display name, text, path)``: a Path, a string naming a file, or C source text."""
    if isinstance(path_or_source, Path) or ("\n" not in path_or_source and (
            path_or_source.endswith((".c", ".h")) or Path(path_or_source).is_file())):
        path = Path(path_or_source)
        try:
            return str(path), path.read_text(), path
        except OSError as exc:
            raise FrontendError(f"cannot read C file {str(path)!r}: {exc.strerror}") from None
    return "<string>", str(path_or_source), None


def _preprocess(file: str, text: str, path: Path | None) -> str:
    """Run the C preprocessor; keep the user's code, drop system headers' text (prelude
    typedefs stand in for their type names)."""
    cpp = next((c for c in ("gcc", "cc", "clang") if shutil.which(c)), None)
    cmd = [cpp, *_CPP_FLAGS] if cpp else ["cpp", *_CPP_FLAGS[1:]]
    if shutil.which(cmd[0]) is None:
        raise FrontendError("no C preprocessor found (gcc, cc, clang or cpp)")
    src = str(path) if path is not None else "-"
    try:
        done = subprocess.run([*cmd, src], input=None if path else text, capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FrontendError(f"the C preprocessor failed to run: {exc}") from None
    main = str(path) if path is not None else "<stdin>"
    if done.returncode != 0:
        lines = text.splitlines()
        message = done.stderr.strip().replace(main, file)
        first = re.search(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$", message, re.M)
        if first and first.group(1) == file:
            line, col = int(first.group(2)), int(first.group(3)) - 1
            text_line = lines[line - 1] if 0 < line <= len(lines) else ""
            loc = SourceLoc(file, line, col, text_line)
            raise FrontendError(f"C preprocessor: {first.group(4)}", loc)
        raise FrontendError(f"the C preprocessor failed:\n{message}")
    return f'# 1 "{_PRELUDE_FILE}"\n{_PRELUDE}' + _strip_system(done.stdout, main, file)


def _strip_system(cpp_out: str, main: str, file: str) -> str:
    out: list[str] = []
    system: set[str] = set()
    keep = True
    for line in cpp_out.splitlines():
        m = _MARKER.match(line)
        if m:
            name = m.group(2)
            flags = m.group(3).split()
            if "3" in flags and name != main:
                system.add(name)
            keep = name == main or (name not in system and not name.startswith("<"))
            if name == main:
                name = file
            if keep:
                out.append(f'# {m.group(1)} "{name}"')
            continue
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"


def _coord_loc(message: str, file: str, sources: dict[str, list[str]]) -> SourceLoc | None:
    m = re.match(r"(.*?):(\d+)(?::(\d+))?:", message)
    if not m:
        return None
    lines = sources.get(m.group(1), [])
    line = int(m.group(2))
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return SourceLoc(m.group(1), line, max(0, int(m.group(3) or 1) - 1), text)


def _strip_coord(message: str) -> str:
    return re.sub(r"^.*?:\d+(:\d+)?:\s*", "", message)


def _pick_function(ast: c_ast.FileAST, function: str | None, file: str) -> c_ast.FuncDef:
    fdefs = [e for e in ast.ext if isinstance(e, c_ast.FuncDef)]
    if function is None:  # helpers from included headers are not candidates
        fdefs = [f for f in fdefs if f.coord is None or f.coord.file == file]
    names = [f.decl.name for f in fdefs]
    if function is not None:
        for f in fdefs:
            if f.decl.name == function:
                return f
        listed = ", ".join(names) or "none"
        raise FrontendError(f"{file}: no function named {function!r}; it defines: {listed}")
    if len(fdefs) == 1:
        return fdefs[0]
    if not fdefs:
        raise FrontendError(f"{file}: defines no function")
    raise FrontendError(f"{file} defines several functions ({', '.join(names)}); choose one "
                        "with function=... (--op on the command line)")


def _typedefs(ast: c_ast.FileAST) -> dict[str, c_ast.Node]:
    return {e.name: e.type for e in ast.ext if isinstance(e, c_ast.Typedef)}


# --- the function --------------------------------------------------------------------------------
class CFrontend(CBody):
    def __init__(self, file: str, sources: dict[str, list[str]],
                 typedefs: dict[str, c_ast.Node]):
        super().__init__(file, sources)
        self.typedefs = typedefs
        self.args: list[str] = []
        self.index_syms: list[str] = []

    def base_type(self, names: list[str], where: c_ast.Node, allow_unsigned: bool) -> str:
        seen: set[str] = set()
        while len(names) == 1 and names[0] in self.typedefs and names[0] not in seen:
            seen.add(names[0])
            t = self.typedefs[names[0]]
            if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, c_ast.IdentifierType):
                break
            names = [n for n in t.type.names if n != "signed"]
        unsigned = "unsigned" in names
        key = tuple(n for n in names if n != "unsigned") or ("int",)
        dtype = _BASE_TYPES.get(key)
        if unsigned and allow_unsigned and key in (("int",), ("long",), ("long", "int"),
                                                   ("long", "long"), ("long", "long", "int")):
            return "i64"
        if dtype is None or unsigned:
            self.error(where, f"type `{' '.join(names)}` is not supported: use float, double, "
                              "int or long (int64_t)")
        return dtype

    # --- entry ----------------------------------------------------------------------------------
    def build(self, fdef: c_ast.FuncDef) -> Scop:
        self.name = fdef.decl.name
        ret = fdef.decl.type.type
        if not (isinstance(ret, c_ast.TypeDecl) and isinstance(ret.type, c_ast.IdentifierType)
                and ret.type.names == ["void"]):
            self.error(fdef.decl, f"`{self.name}` must return void: polydyn kernels update "
                                  "their array arguments in place")
        self.signature(fdef.decl.type)
        if not any(a.is_tensor for a in self.arrays.values()):
            self.error(fdef.decl, f"`{self.name}` has no array parameter: a kernel updates "
                                  "arrays passed as C99 array parameters (float A[N][M])")
        region = self.region(fdef.body)
        tree = self.block(region, Ctx())
        return self.finish(tree)

    def signature(self, ftype: c_ast.FuncDecl) -> None:
        params = list(ftype.args.params) if ftype.args is not None else []
        if len(params) == 1 and isinstance(params[0], c_ast.Typename):
            params = []  # f(void)
        shape_syms: list[str] = []
        for p in params:
            if not isinstance(p, c_ast.Decl) or p.name is None:
                self.error(p, "every parameter needs a name")
            self.check_new_name(p, p.name)
            if isinstance(p.type, c_ast.ArrayDecl):
                dtype, shape = self.array_type(p, Ctx())
                self.arrays[p.name] = Array(p.name, dtype, shape, "in")
                if "const" in p.quals:
                    self.readonly.add(p.name)
                for dim in shape:
                    shape_syms += [v for v in sorted(dim.vars()) if v not in shape_syms]
            elif isinstance(p.type, c_ast.PtrDecl):
                self.error(p, f"pointer parameter `{p.name}`: declare arrays with their sizes, "
                              f"C99 style (float {p.name}[N][M])")
            elif isinstance(p.type, c_ast.TypeDecl):
                ctype = self.type_of(p.type, p, allow_unsigned=True)
                if ctype in ("f32", "f64"):
                    self.arrays[p.name] = Array(p.name, ctype, (), "value")
                else:
                    self.syms[p.name] = ctype
                    self._refresh_params()
                    continue
            else:
                self.error(p, f"unsupported parameter `{self.src(p)}`")
            self.args.append(p.name)
        ints = list(self.syms)
        self.index_syms = [s for s in ints if s not in shape_syms]
        self.syms = {s: self.syms[s] for s in shape_syms + self.index_syms}
        self._refresh_params()

    def _refresh_params(self) -> None:
        self.params = "[" + ", ".join(self.syms) + "]"
        base = " and ".join(f"{s} >= 0" for s in self.syms) or "1 = 1"
        self.context = isl.Set(f"{self.params} -> {{ : {base} }}")

    def region(self, body: c_ast.Compound) -> list[c_ast.Node]:
        """The ``#pragma scop`` ... ``#pragma endscop`` items, else the whole body.

        Code outside the region would be lost, so only declarations may stand before it (they
        join the region: their initializers are pure) and nothing but ``return;`` after it.
        """
        items = list(body.block_items or [])
        marks = [k for k, it in enumerate(items) if isinstance(it, c_ast.Pragma)
                 and it.string.strip() in ("scop", "endscop")]
        if not marks:
            if items and isinstance(items[-1], c_ast.Return) and items[-1].expr is None:
                items = items[:-1]
            return items
        kinds = [items[k].string.strip() for k in marks]
        if kinds != ["scop", "endscop"]:
            self.error(items[marks[0]], "expected one `#pragma scop` followed by one "
                                        "`#pragma endscop` at the top level of the body")
        start, end = marks
        before = [it for it in items[:start] if not isinstance(it, c_ast.EmptyStatement
                                                              | c_ast.Pragma)]
        for it in before:
            if not isinstance(it, c_ast.Decl):
                self._lost(it)
        for k, it in enumerate(items[end + 1:], start=end + 1):
            last_return = isinstance(it, c_ast.Return) and it.expr is None \
                and k == len(items) - 1
            if not (last_return or isinstance(it, c_ast.EmptyStatement | c_ast.Pragma)):
                self._lost(it)
        return before + items[start + 1:end]

    def _lost(self, item: c_ast.Node) -> NoReturn:
        self.error(item, f"`{self.src(item)}` stands outside the `#pragma scop` region: polydyn "
                         "compiles only the region, so this code would be lost; move it inside "
                         "(or remove it)")

    # --- isl objects ------------------------------------------------------------------------------
    def finish(self, tree: tuple[Any, ...]) -> Scop:
        syms = tuple(self.syms)
        names = set(self.arrays) | set(syms) | self.counter_names
        prefix = "S"
        while any(n.startswith(prefix) and n[len(prefix):].isdigit() for n in names):
            prefix += "_"
        stmts, rename = [], {}
        for k, p in enumerate(self.pending):
            name = f"{prefix}{k}"
            rename[p.name] = name
            iters = tuple(lp.var for lp in p.loops)
            constraints = [loop_constraints(lp) for lp in p.loops] + conds_text(list(p.conds))
            try:
                domain = make_domain(self.params, name, iters, constraints, self.context)
            except isl.Error as exc:
                raise FrontendError(f"cannot build the iteration domain: {exc}", p.loc) from None
            stmts.append(Statement(name, iters, p.target, p.op, p.value, domain, p.loc))
        tree = rename_statements(tree, rename)
        arrays = dict(self.arrays)
        for n in self.written:
            if arrays[n].kind == "in":
                arrays[n] = Array(n, arrays[n].dtype, arrays[n].shape, "inout")
        arrays, stmts = retype_statements(arrays, stmts)
        arg_set = set(self.args)
        ordered = [arrays[n] for n in self.args] + [a for n, a in arrays.items()
                                                    if n not in arg_set]
        scop = Scop(self.name, syms, self.context.coalesce(), tuple(ordered), tuple(self.args),
                    tuple(self.index_syms), tuple(stmts), tree, self.file, "")
        scop = in_bounds_sizes(scop)
        check_scop(scop)
        return scop


LARGE = 64  # sizes from which every access of a correct kernel is in bounds


def in_bounds_sizes(scop: Scop) -> Scop:
    """Drop from the context the sizes where the C code accesses an array out of bounds.

    C leaves such an access undefined, so those sizes are not valid calls: ``y[0] = ...`` in
    a kernel over ``double y[n]`` implies ``n >= 1``. Only small sizes are dropped this way
    (boundary cases); an access out of bounds for large sizes is a bug that ``check_scop``
    reports. The sizes kept become the Scop's ``assume`` text, which errors quote.
    """
    params = scop.param_space_text()
    # bad: [syms] -> { : some statement instance accesses outside its array }
    bad = isl.Set.empty(scop.context.get_space())
    for stmt in scop.statements:
        refs = [stmt.target] if isinstance(stmt.target, Load) else []
        for ref in refs + _unguarded_loads(stmt.value):
            idx = ", ".join(i.to_isl() for i in ref.index)
            access = isl.Map(f"{params} -> {{ {stmt.name}[{', '.join(stmt.iters)}] -> "
                             f"{ref.array}[{idx}] }}").intersect_domain(stmt.domain)
            outside = access.subtract_range(array_bounds(scop, ref.array))
            bad = bad.union(outside.domain().params())
    large = " and ".join(f"{s} >= {LARGE}" for s in scop.syms) or "1 = 1"
    if bad.is_empty() or not bad.intersect(isl.Set(f"{params} -> {{ : {large} }}")).is_empty():
        return scop
    context = scop.context.subtract(bad).coalesce()
    if context.is_empty():
        return scop
    stmts = tuple(s.replace(domain=s.domain.intersect_params(context).coalesce())
                  for s in scop.statements)
    text = re.sub(r"^.*?:\s*|\s*}\s*$", "", str(context))
    return scop.replace(context=context, statements=stmts,
                        assume=f"({text})" if " or " in text else text)
