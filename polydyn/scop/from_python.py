"""Python AST -> Scop: a whitelisting visitor over an operator's signature and statements (the
expressions are in ``py_exprs.py``); every refusal is a located FrontendError."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import islpy as isl

from ..errors import FrontendError
from . import dsl, names
from .affine import Aff
from .context import build_context
from .domains import Pending, conds_text, loop_constraints, make_domain
from .exprs import Expr, Load, Scalar
from .ir import Array, Guard, Loop, Node, Scop, Statement, StmtRef, rename_statements
from .py_exprs import Ctx, PyExprs, ScalarInfo
from .typing import retype_statements

_AUG_OPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}


class PythonFrontend(PyExprs):
    def __init__(self, fn: Callable[..., Any], assume: str):
        self.fn = fn
        self.assume = assume
        try:
            lines, self.first_line = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as exc:
            raise FrontendError(
                f"cannot read the source of operator {fn.__name__!r} ({exc}); define it in a "
                "file or module so polydyn can parse its body") from None
        self.lines = lines
        raw = "".join(lines)
        dedented = textwrap.dedent(raw)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.module = ast.parse(dedented)
        self.ns: dict[str, Any] = dict(vars(builtins))
        self.ns.update(fn.__globals__)
        closure = inspect.getclosurevars(fn)
        self.ns.update(closure.nonlocals)
        self.syms: dict[str, None] = {}
        self.arrays: dict[str, Array] = {}
        self.args: list[str] = []
        self.index_syms: list[str] = []
        self.loop_vars: set[str] = set()
        self.loop_names: set[str] = set()  # every loop variable, for renaming
        self.scalars: dict[str, ScalarInfo] = {}  # live Python name -> info
        self.scalar_names: set[str] = set()
        self.pending: list[Pending] = []
        self.isl_assume = assume  # with renamed syms respelled
        self.stmt_prefix = "S"


    # --- entry ------------------------------------------------------------------------------
    def build(self) -> Scop:
        fdef = self.module.body[0]
        if not isinstance(fdef, ast.FunctionDef):
            self.error(fdef, "an operator must be a plain function (def)")
        self._check_name(fdef, fdef.name)
        self._signature(fdef)
        body = list(fdef.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        tree = self._block(body, Ctx())
        return self._finish(tree, fdef)

    # --- signature ---------------------------------------------------------------------------
    def _signature(self, fdef: ast.FunctionDef) -> None:
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            self.error(fdef, "operator arguments must be plain annotated parameters "
                             "(no *args, **kwargs, keyword-only arguments or defaults)")
        annotations = self._annotations(fdef)
        shape_syms: list[str] = []
        input_syms: set[str] = set()  # carried by an input's shape: never pd.index
        for arg in a.args:
            name = arg.arg
            self._check_name(arg, name)
            ann = annotations.get(name)
            if ann is None:
                self.error(arg, f"argument `{name}` needs an annotation such as f32[N, M], "
                                "out(f32[N]), inout(...), a dtype (a scalar) or pd.index")
            if ann is dsl.index:
                self.index_syms.append(name)
                self.args.append(name)
                continue
            if isinstance(ann, dsl.DType):
                self.arrays[name] = Array(name, ann.name, (), "value")
                self.args.append(name)
                continue
            kind = "in"
            if isinstance(ann, dsl.ArgKind):
                if ann.kind == "temp":
                    self.error(arg, f"`{name}`: temporaries are declared in the body "
                                    f"(`{name} = temp(...)`), not as arguments")
                if not isinstance(ann.type, dsl.TensorType):
                    self.error(arg, f"argument `{name}`: {ann.kind}() takes a tensor type "
                                    f"such as f32[N, M], got {ann.type!r}")
                kind, ann = ann.kind, ann.type
            if not isinstance(ann, dsl.TensorType):
                self.error(arg, f"argument `{name}`: unsupported annotation {ann!r}; expected "
                                "f32[N, M], out(...), inout(...), a dtype or pd.index")
            self._check_shape(arg, name, ann)
            for dim in ann.shape:
                shape_syms += [v for v in sorted(dim.vars()) if v not in shape_syms]
                input_syms |= set(dim.vars()) if kind == "in" else set()
            self.arrays[name] = Array(name, ann.dtype, ann.shape, kind)
            self.args.append(name)
        for s in shape_syms:
            self.syms[s] = None
        for s in [*shape_syms, *self.index_syms]:
            if s == self.fn.__name__:
                self.error(fdef, f"sym `{s}` clashes with the operator name; rename it")
        for s in self.index_syms:
            if s in input_syms:
                self.error(fdef, f"`{s}` is annotated pd.index but an input's shape carries "
                                 "it; remove the pd.index argument")
            self.syms[s] = None

    def _annotations(self, fdef: ast.FunctionDef) -> dict[str, Any]:
        try:
            return inspect.get_annotations(self.fn, eval_str=True)
        except Exception as exc:  # a string annotation that does not evaluate
            self.error(fdef, f"cannot evaluate the argument annotations: {exc}")

    def _check_shape(self, node: ast.AST, name: str, t: dsl.TensorType) -> None:
        for dim in t.shape:
            reason = dim.bad_reason()
            if reason:
                self.error(node, f"non-affine shape of `{name}`: {reason}; dimensions must be "
                                 "affine (or quasi-affine with // and % by constants) in syms")

    def _check_name(self, node: ast.AST, name: str) -> None:
        if node is self.module.body[0] and not names.is_safe_function_name(name):
            self.error(node, f"operator name `{name}` is reserved in generated code (it names "
                             "the C function); rename it")
        if node is not self.module.body[0] and name == self.fn.__name__:
            self.error(node, f"`{name}` is also the operator's name (the generated C "
                             "function); rename one of them")

    # --- statements --------------------------------------------------------------------------
    def _block(self, stmts: list[ast.stmt], ctx: Ctx) -> tuple[Node, ...]:
        nodes: list[Node] = []
        for st in stmts:
            nodes.extend(self._stmt(st, ctx))
        return tuple(nodes)

    def _stmt(self, st: ast.stmt, ctx: Ctx) -> list[Node]:
        if isinstance(st, ast.For):
            return [self._for(st, ctx)]
        if isinstance(st, ast.If):
            return [self._if(st, ctx)]
        if isinstance(st, ast.Assign):
            return self._assign(st, ctx)
        if isinstance(st, ast.AugAssign):
            return self._augassign(st, ctx)
        if isinstance(st, ast.AnnAssign):
            self.error(st, "annotated assignments are not supported in operator bodies; "
                           "write `x = ...`")
        if isinstance(st, ast.Pass):
            return []
        if isinstance(st, ast.While):
            self.error(st, "`while` loops are not static control; use `for v in range(...)` "
                           "with affine bounds")
        what = type(st).__name__.lower()
        self.error(st, f"`{what}` statements are not supported in operators: use `for` over "
                       "range(), affine `if`, and assignments to arrays or local scalars")

    def _for(self, st: ast.For, ctx: Ctx) -> Node:
        if st.orelse:
            self.error(st, "`for ... else` is not supported")
        it = st.iter
        if not isinstance(it, ast.Call):
            self.error(it, "loops must iterate over range(...) or pd.grid(...)")
        fn = self._resolve(it.func)
        if it.keywords:
            self.error(it, "range() and pd.grid() take positional arguments only")
        if fn is dsl.grid:
            targets = st.target.elts if isinstance(st.target, ast.Tuple) else [st.target]
            if len(targets) != len(it.args):
                self.error(st.target, f"pd.grid of {len(it.args)} extents needs "
                                      f"{len(it.args)} loop variables")
            ranges = [(t, Aff.const(0), self._aff(e, ctx), 1) for t, e in zip(targets, it.args)]
        elif fn is range:
            if not isinstance(st.target, ast.Name):
                self.error(st.target, "a range() loop takes one loop variable")
            if not 1 <= len(it.args) <= 3:
                self.error(it, "range() takes 1 to 3 arguments")
            args = it.args
            lo = self._aff(args[0], ctx) if len(args) > 1 else Aff.const(0)
            hi = self._aff(args[1] if len(args) > 1 else args[0], ctx)
            step = self._int_const(args[2]) if len(args) == 3 else 1
            if step == 0:
                self.error(args[2], "range() step must not be zero")
            ranges = [(st.target, lo, hi, step)]
        else:
            self.error(it.func, f"loops must iterate over range(...) or pd.grid(...), not "
                                f"`{self.src(it.func)}`")
        return self._nest(ranges, st.body, ctx)

    def _nest(self, ranges: list[tuple[ast.expr, Aff, Aff, int]], body: list[ast.stmt],
              ctx: Ctx) -> Node:
        target, lo, hi, step = ranges[0]
        if not isinstance(target, ast.Name):
            self.error(target, "loop variables must be plain names")
        var = target.id
        self._check_name(target, var)
        if var in self.loop_vars or var in self.syms or var in self.arrays \
                or var in self.scalars or var in self.scalar_names:
            self.error(target, f"loop variable `{var}` shadows another name (a loop variable, "
                               "sym, array or local scalar); rename it")
        if isinstance(self.ns.get(var), dsl.Sym):
            self.error(target, f"loop variable `{var}` shadows the sym `{var}`")
        loop = Loop(var, lo, hi, step, ())
        self.loop_vars.add(var)
        self.loop_names.add(var)
        inner = Ctx(ctx.loops + (loop,), ctx.conds, set(ctx.assigned))
        if len(ranges) > 1:
            nodes: tuple[Node, ...] = (self._nest(ranges[1:], body, inner),)
        else:
            nodes = self._block(body, inner)
        self.loop_vars.discard(var)
        depth = len(ctx.loops)
        for py, info in list(self.scalars.items()):
            if info.depth > depth:
                del self.scalars[py]
        return Loop(var, lo, hi, step, nodes)

    def _if(self, st: ast.If, ctx: Ctx) -> Node:
        cond = self._cond(st.test, ctx)
        then_ctx = Ctx(ctx.loops, ctx.conds + ((cond, True),), set(ctx.assigned))
        else_ctx = Ctx(ctx.loops, ctx.conds + ((cond, False),), set(ctx.assigned))
        then = self._block(st.body, then_ctx)
        orelse = self._block(st.orelse, else_ctx)
        ctx.assigned |= then_ctx.assigned & else_ctx.assigned
        return Guard(cond, then, orelse)

    def _assign(self, st: ast.Assign, ctx: Ctx) -> list[Node]:
        if len(st.targets) != 1:
            self.error(st, "chained assignment `a = b = ...` is not supported")
        target = st.targets[0]
        if isinstance(target, ast.Name) and isinstance(st.value, ast.Call) \
                and self._resolve_quiet(st.value.func) is dsl.temp:
            return self._temp(st, target.id, ctx)
        value = self._value(st.value, ctx)
        if isinstance(target, ast.Subscript):
            return [self._emit(self._store(target, ctx), "=", value, st, ctx)]
        if isinstance(target, ast.Name):
            ref = self._scalar_target(target, ctx, define=True)
            node = self._emit(ref, "=", value, st, ctx)
            ctx.assigned.add(ref.name)
            return [node]
        self.error(target, "assign to an array element `X[i, j]` or to a local scalar name")

    def _augassign(self, st: ast.AugAssign, ctx: Ctx) -> list[Node]:
        op = _AUG_OPS.get(type(st.op))
        if op is None:
            self.error(st, f"compound assignment `{type(st.op).__name__}=` is not supported; "
                           "use += -= *= /=")
        value = self._value(st.value, ctx)
        if isinstance(st.target, ast.Subscript):
            return [self._emit(self._store(st.target, ctx), op, value, st, ctx)]
        if isinstance(st.target, ast.Name):
            ref = self._scalar_target(st.target, ctx, define=False)
            return [self._emit(ref, op, value, st, ctx)]
        self.error(st.target, "assign to an array element or a local scalar name")

    def _temp(self, st: ast.Assign, name: str, ctx: Ctx) -> list[Node]:
        if ctx.loops or ctx.conds:
            self.error(st, "temporaries must be declared at the top level of the body")
        self._check_name(st, name)
        if name in self.arrays or name in self.syms:
            self.error(st, f"`{name}` is already an argument or sym")
        try:
            decl = eval(compile(ast.Expression(st.value), self.file, "eval"), self.ns)
        except Exception as exc:
            self.error(st.value, f"cannot evaluate the temporary's type: {exc}")
        if not isinstance(decl.type, dsl.TensorType):
            self.error(st.value, f"temp() takes a tensor type such as f32[N], got {decl.type!r}")
        self._check_shape(st, name, decl.type)
        for dim in decl.type.shape:
            for v in dim.vars():
                if v not in self.syms:
                    self.syms[v] = None
        self.arrays[name] = Array(name, decl.type.dtype, decl.type.shape, "temp")
        return []

    def _store(self, target: ast.Subscript, ctx: Ctx) -> Load:
        load = self._load(target, ctx)
        kind = self.arrays[load.array].kind
        if kind == "in":
            self.error(target, f"cannot write to input `{load.array}`; declare it "
                               f"inout(...) or out(...)")
        return load

    def _scalar_target(self, target: ast.Name, ctx: Ctx, define: bool) -> Scalar:
        py = target.id
        is_array = py in self.arrays and self.arrays[py].kind != "local"
        if is_array or py in self.syms or py in self.loop_vars or \
                isinstance(self.ns.get(py), dsl.Sym):
            self.error(target, f"cannot assign to `{py}`: it is an array, sym or loop variable")
        info = self.scalars.get(py)
        if info is None:
            if not define:
                self.error(target, f"local scalar `{py}` is read before it is assigned in "
                                   "this iteration")
            self._check_name(target, py)
            name, n = py, 0
            while name in self.scalar_names or name in self.arrays or name in self.syms:
                n += 1
                name = f"{py}_{n}"
            self.scalar_names.add(name)
            info = ScalarInfo(name, len(ctx.loops), tuple(lp.var for lp in ctx.loops))
            self.scalars[py] = info
            self.arrays[name] = Array(name, "?", (), "local", info.scope)
        elif not define and info.name not in ctx.assigned:
            self.error(target, f"local scalar `{py}` is read before it is assigned in "
                               "this iteration")
        return Scalar("?", info.name)

    def _emit(self, target: Load | Scalar, op: str, value: Expr, st: ast.stmt,
              ctx: Ctx) -> Node:
        name = f"{self.stmt_prefix}{len(self.pending)}"
        self.pending.append(Pending(name, ctx.loops, ctx.conds, target, op, value,
                                     self.loc(st)))
        return StmtRef(name)

    # --- isl objects -------------------------------------------------------------------------
    def _finish(self, tree: tuple[Node, ...], fdef: ast.FunctionDef) -> Scop:
        tree = self._rename(tree)
        syms = tuple(self.syms)
        params = "[" + ", ".join(syms) + "]"
        loc = self.loc(fdef.decorator_list[0]) if fdef.decorator_list else self.loc(fdef)
        dims = {d.to_isl() for a in self.arrays.values() if a.is_tensor for d in a.shape
                if d.vars()}
        user = {g: u for u, g in self.renamed.items()}
        context = build_context(params, syms, dims, self.assume, self.isl_assume, loc,
                                [user.get(s, s) for s in syms])
        names = set(self.arrays) | set(syms)
        while any(n.startswith(self.stmt_prefix) and n[len(self.stmt_prefix):].isdigit()
                  for n in names):
            self.stmt_prefix += "_"
        stmts = []
        rename = {}
        for i, p in enumerate(self.pending):
            name = f"{self.stmt_prefix}{i}"
            rename[p.name] = name
            iters = tuple(lp.var for lp in p.loops)
            constraints = [loop_constraints(lp) for lp in p.loops] + conds_text(list(p.conds))
            try:
                domain = make_domain(params, name, iters, constraints, context)
            except isl.Error as exc:
                raise FrontendError(f"cannot build the iteration domain: {exc}", p.loc) from None
            stmts.append(Statement(name, iters, p.target, p.op, p.value, domain, p.loc))
        tree = rename_statements(tree, rename)
        arrays, stmts = retype_statements(self.arrays, stmts)
        arg_set = set(self.args)
        ordered = [arrays[n] for n in self.args if n in arrays]
        ordered += [a for n, a in arrays.items() if n not in arg_set]
        scop = Scop(self.fn.__name__, syms, context, tuple(ordered),
                    tuple(a for a in self.args if a in arrays), tuple(self.index_syms),
                    tuple(stmts), tree, self.file, self.assume,
                    tuple((g, u) for u, g in self.renamed.items()))
        from .checks import check_scop

        check_scop(scop)
        return scop

    def _rename(self, tree: tuple[Node, ...]) -> tuple[Node, ...]:
        """Respell the names generated code cannot hold (``I``, ``int``, ``kernel``...)."""
        self.renamed = rn = names.renaming([*self.syms, *self.arrays, *self.loop_names])
        if not rn:
            return tree
        self.syms = {rn.get(s, s): None for s in self.syms}
        self.index_syms = [rn.get(s, s) for s in self.index_syms]
        self.args = [rn.get(a, a) for a in self.args]
        self.arrays = {rn.get(k, k): names.rename_array(a, rn) for k, a in self.arrays.items()}
        self.pending = [replace(p, loops=tuple(names.rename_loop(lp, rn, ()) for lp in p.loops),
                                conds=tuple((names.rename_cond(c, rn), b) for c, b in p.conds),
                                target=names.rename_expr(p.target, rn),
                                value=names.rename_expr(p.value, rn)) for p in self.pending]
        self.isl_assume = names.rename_assume(self.assume, rn)
        return names.rename_tree(tree, rn)


def scop_from_function(fn: Callable[..., Any], assume: str) -> Scop:
    return PythonFrontend(fn, assume).build()

