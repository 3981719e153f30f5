"""C statements -> the Scop's loop tree and pending statements: `for` loops with affine bounds,
affine `if`s, assignments to array elements and local variables, declarations."""

from __future__ import annotations

import re
from typing import NoReturn

from pycparser import c_ast

from .affine import Aff
from .c_exprs import (
    INT_TYPES,
    CExprs,
    Ctx,
    Decl,
    NotAffineError,
    ScalarInfo,
    common_type,
    convert,
    truncating,
)
from .domains import Pending
from .exprs import Expr, Load, Scalar, binary
from .ir import Array, Guard, Loop, Node, StmtRef
from .names import RESERVED_C_INPUT as RESERVED

_COMPOUND = ("+=", "-=", "*=", "/=", "%=")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_UNSUPPORTED = {
    c_ast.While: "`while` loops are not static control; use a `for` loop with affine bounds",
    c_ast.DoWhile: "`do ... while` loops are not static control; use a `for` loop with affine "
                   "bounds",
    c_ast.Goto: "`goto` is not static control",
    c_ast.Label: "labels are not supported in a static control part",
    c_ast.Switch: "`switch` is not supported; use affine `if`/`else`",
    c_ast.Break: "`break` makes the trip count data dependent; use affine loop bounds",
    c_ast.Continue: "`continue` is not supported; use an affine `if`",
    c_ast.Return: "`return` inside the static control part is not supported",
}




class CBody(CExprs):
    def __init__(self, file: str, sources: dict[str, list[str]]):
        super().__init__(file, sources)
        self.pending: list[Pending] = []
        self.scalar_names: set[str] = set()
        self.counter_names: set[str] = set()
        self.written: set[str] = set()
        self.readonly: set[str] = set()  # const-qualified array parameters

    # --- blocks -------------------------------------------------------------------------------
    def block(self, items: list[c_ast.Node], ctx: Ctx) -> tuple[Node, ...]:
        self.scopes.append({})
        nodes: list[Node] = []
        for k, item in enumerate(items):
            nodes.extend(self.stmt(item, ctx, items[k + 1:]))
        self.scopes.pop()
        return tuple(nodes)

    def body(self, st: c_ast.Node | None, ctx: Ctx) -> tuple[Node, ...]:
        """A substatement (C99: each is a block of its own)."""
        if st is None:
            return ()
        if isinstance(st, c_ast.Compound):
            return self.block(list(st.block_items or []), ctx)
        return self.block([st], ctx)

    def stmt(self, st: c_ast.Node, ctx: Ctx, rest: list[c_ast.Node]) -> list[Node]:
        if isinstance(st, c_ast.Compound):
            return list(self.block(list(st.block_items or []), ctx))
        if isinstance(st, c_ast.For):
            return [self.for_loop(st, ctx)]
        if isinstance(st, c_ast.If):
            return [self.if_stmt(st, ctx)]
        if isinstance(st, c_ast.Assignment):
            return self.assignment(st, ctx)
        if isinstance(st, c_ast.UnaryOp) and st.op in ("++", "--", "p++", "p--"):
            op = "+=" if "+" in st.op else "-="
            return [self.assign(st, st.expr, op, c_ast.Constant("int", "1", st.coord), ctx)]
        if isinstance(st, c_ast.Decl):
            return self.decl(st, ctx, rest)
        if isinstance(st, c_ast.DeclList):
            return [n for d in st.decls for n in self.decl(d, ctx, rest)]
        if isinstance(st, c_ast.EmptyStatement | c_ast.Pragma):
            if isinstance(st, c_ast.Pragma) and st.string.strip() in ("scop", "endscop"):
                self.error(st, f"`#pragma {st.string.strip()}` must stand at the top level of "
                               "the function body, once")
            return []  # other pragmas (OpenMP) are polydyn's decision
        self.refuse(st)

    def refuse(self, st: c_ast.Node) -> NoReturn:
        for kind, message in _UNSUPPORTED.items():
            if isinstance(st, kind):
                self.error(st, message)
        if isinstance(st, c_ast.FuncCall):
            self.error(st, f"call `{self.src(st)}` as a statement: a static control part "
                           "contains loops, affine ifs and assignments only")
        self.error(st, f"`{self.src(st)}` is not supported in a static control part")

    # --- declarations -------------------------------------------------------------------------
    def check_new_name(self, node: c_ast.Node, name: str) -> None:
        if name in RESERVED or name.startswith("pd_"):
            self.error(node, f"`{name}` is a reserved name in generated code; rename it")
        if name in self.syms or (name in self.arrays and self.arrays[name].kind != "local") \
                or name in self.loop_vars or self.lookup(name) is not None:
            self.error(node, f"`{name}` shadows a parameter, loop counter or variable of the "
                             "same name; rename it")

    def decl(self, d: c_ast.Decl, ctx: Ctx, rest: list[c_ast.Node]) -> list[Node]:
        if d.storage or d.funcspec:
            self.error(d, f"`{' '.join(d.storage + d.funcspec)}` declarations are not "
                          "supported in a static control part")
        self.check_new_name(d, d.name)
        if isinstance(d.type, c_ast.ArrayDecl):
            self.temp_array(d, ctx)
            return []
        ctype = self.type_of(d.type, d)
        if d.init is None:
            self.scopes[-1][d.name] = Decl(d.name, ctype)
            return []
        if isinstance(d.init, c_ast.InitList):
            self.error(d.init, "initializer lists are not supported")
        if ctype in INT_TYPES and not _reassigned(d.name, rest):
            try:
                alias = self.aff_rec(d.init, ctx)
            except NotAffineError:
                alias = None
            if alias is not None:
                self.scopes[-1][d.name] = Decl(d.name, ctype, "alias", alias=alias)
                return []
        self.scopes[-1][d.name] = Decl(d.name, ctype)
        return [self.assign(d, c_ast.ID(d.name, d.coord), "=", d.init, ctx)]

    def temp_array(self, d: c_ast.Decl, ctx: Ctx) -> None:
        if ctx.loops or ctx.conds:
            self.error(d, f"local array `{d.name}` must be declared outside every loop and if")
        if d.init is not None:
            self.error(d, f"local array `{d.name}` cannot have an initializer")
        dtype, shape = self.array_type(d, ctx)
        self.arrays[d.name] = Array(d.name, dtype, shape, "temp")
        self.scopes[-1][d.name] = Decl(d.name, dtype, "array")

    def array_type(self, d: c_ast.Decl, ctx: Ctx) -> tuple[str, tuple[Aff, ...]]:
        """Element type and shape of ``T name[d0][d1]...``."""
        dims: list[c_ast.Node] = []
        t = d.type
        while isinstance(t, c_ast.ArrayDecl):
            if t.dim is None:
                self.error(d, f"`{d.name}`: give every dimension its size (C99 style: "
                              f"float {d.name}[N][M])")
            dims.append(t.dim)
            t = t.type
        if isinstance(t, c_ast.PtrDecl):
            self.error(d, f"`{d.name}`: arrays of pointers are not supported")
        dtype = self.type_of(t, d)
        shape = tuple(self.aff(x, ctx, "size", d.name) for x in dims)
        return dtype, shape

    # --- loops --------------------------------------------------------------------------------
    def for_loop(self, st: c_ast.For, ctx: Ctx) -> Node:
        var, ctype, lo, outer = self._loop_init(st, ctx)
        step = self._loop_step(st, var)
        hi = self._loop_bound(st, var, step, ctx)
        if var in self.scalar_names:
            self.error(st, f"loop counter `{var}` reuses the name of a local variable; rename "
                           "one of them")
        loop = Loop(var, lo, hi, step, ())
        self.loop_vars[var] = ctype
        self.counter_names.add(var)
        inner = Ctx((*ctx.loops, loop), ctx.conds, set(ctx.assigned))
        nodes = self.body(st.stmt, inner)
        del self.loop_vars[var]
        depth = len(ctx.loops)
        for scope in self.scopes:
            for decl in scope.values():
                if decl.info is not None and decl.info.depth > depth:
                    decl.info = None  # private to the loop's iterations: dead after it
        if outer is not None:
            outer.kind, outer.info, outer.counted = "scalar", None, True
        return Loop(var, lo, hi, step, nodes)

    def _loop_init(self, st: c_ast.For, ctx: Ctx) -> tuple[str, str, Aff, Decl | None]:
        init = st.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1 \
                and init.decls[0].init is not None:
            d = init.decls[0]
            self.check_new_name(d, d.name)
            ctype = self.type_of(d.type, d)
            var, start, outer = d.name, d.init, None
        elif isinstance(init, c_ast.Assignment) and init.op == "=" \
                and isinstance(init.lvalue, c_ast.ID):
            var, start = init.lvalue.name, init.rvalue
            outer = self.lookup(var)
            if var in self.loop_vars:
                self.error(init, f"loop counter `{var}` is already the counter of an enclosing "
                                 "loop")
            if outer is None or outer.kind != "scalar":
                what = "an int parameter (a size)" if var in self.syms else \
                    "not a variable declared in the function"
                self.error(init.lvalue, f"loop counter `{var}` is {what}; declare an int "
                                        "counter")
            ctype = outer.ctype
        else:
            self.error(st, "a loop must start as `for (int i = lo; ...)` or `for (i = lo; ...)` "
                           "with one counter")
        if ctype not in INT_TYPES:
            self.error(st, f"loop counter `{var}` must be an int or long")
        lo = self.aff(start, ctx, what="loop start")
        return var, ctype, lo, outer

    def _loop_step(self, st: c_ast.For, var: str) -> int:
        nxt = st.next
        step = None
        if isinstance(nxt, c_ast.UnaryOp) and _is_id(nxt.expr, var):
            step = {"p++": 1, "++": 1, "p--": -1, "--": -1}.get(nxt.op)
        elif isinstance(nxt, c_ast.Assignment) and _is_id(nxt.lvalue, var):
            if nxt.op in ("+=", "-="):
                step = self._const(nxt.rvalue) * (1 if nxt.op == "+=" else -1)
            elif nxt.op == "=" and isinstance(nxt.rvalue, c_ast.BinaryOp) \
                    and nxt.rvalue.op in ("+", "-"):
                r = nxt.rvalue
                if _is_id(r.left, var):
                    step = self._const(r.right) * (1 if r.op == "+" else -1)
                elif _is_id(r.right, var) and r.op == "+":
                    step = self._const(r.left)
        if not step:
            self.error(nxt or st, f"the loop increment must change `{var}` by a nonzero integer "
                                  f"constant ({var}++, {var}--, {var} += c, {var} -= c)")
        return step

    def _const(self, node: c_ast.Node) -> int | None:
        try:
            aff = self.aff_rec(node, Ctx())
        except NotAffineError:
            return None
        return aff.args[0] if aff.is_const() else None

    def _loop_bound(self, st: c_ast.For, var: str, step: int, ctx: Ctx) -> Aff:
        if st.cond is None:
            self.error(st, "a loop without a condition does not terminate statically")
        parts: list[c_ast.Node] = []
        todo = [st.cond]
        while todo:
            c = todo.pop(0)
            if isinstance(c, c_ast.BinaryOp) and c.op == "&&":
                todo[:0] = [c.left, c.right]
            else:
                parts.append(c)
        bounds = [self._one_bound(c, var, step, ctx) for c in parts]
        if len(bounds) == 1:
            return bounds[0]
        return Aff.min(*bounds) if step > 0 else Aff.max(*bounds)

    def _one_bound(self, c: c_ast.Node, var: str, step: int, ctx: Ctx) -> Aff:
        want = "`<` or `<=`" if step > 0 else "`>` or `>=`"
        if not (isinstance(c, c_ast.BinaryOp) and c.op in _FLIP) or \
                _is_id(c.left, var) == _is_id(c.right, var):
            self.error(c, f"the loop condition `{self.src(c)}` must compare `{var}` with an "
                          f"affine bound using {want}")
        op, other = (c.op, c.right) if _is_id(c.left, var) else (_FLIP[c.op], c.left)
        if (op in ("<", "<=")) != (step > 0):
            self.error(c, f"the loop condition `{self.src(c)}` does not match the direction of "
                          f"the increment: a loop counting {'up' if step > 0 else 'down'} needs "
                          f"{want}")
        bound = self.aff(other, ctx, what="loop bound")
        if op == "<=":
            return bound + 1
        if op == ">=":
            return bound - 1
        return bound

    # --- if -------------------------------------------------------------------------------------
    def if_stmt(self, st: c_ast.If, ctx: Ctx) -> Node:
        try:
            cond = self.cond(st.cond, ctx)
        except NotAffineError as exc:
            self.error(exc.node, f"`if ({self.src(st.cond)})`: conditions must be affine in "
                                 f"loop counters and int parameters, but `{self.src(exc.node)}` "
                                 "is not; to choose a value from array data write "
                                 "`x = c ? a : b`")
        then_ctx, else_ctx = ctx.with_cond(cond, True), ctx.with_cond(cond, False)
        then = self.body(st.iftrue, then_ctx)
        orelse = self.body(st.iffalse, else_ctx)
        ctx.assigned |= then_ctx.assigned & else_ctx.assigned
        return Guard(cond, then, orelse)

    # --- assignments ----------------------------------------------------------------------------
    def assignment(self, st: c_ast.Assignment, ctx: Ctx) -> list[Node]:
        """``x = e``, and chains ``x = y = e`` (``y = e`` first, then ``x = y``, as in C)."""
        nodes: list[Node] = []
        rvalue = st.rvalue
        if isinstance(rvalue, c_ast.Assignment):
            nodes += self.assignment(rvalue, ctx)
            rvalue = rvalue.lvalue
        nodes.append(self.assign(st, st.lvalue, st.op, rvalue, ctx))
        return nodes

    def assign(self, st: c_ast.Node, lvalue: c_ast.Node, op: str, rvalue: c_ast.Node,
               ctx: Ctx) -> Node:
        if op != "=" and op not in _COMPOUND:
            self.error(st, f"compound assignment `{op}` is not supported; use = += -= *= /= %=")
        value, vtype = self.value(rvalue, ctx)
        if isinstance(lvalue, c_ast.ArrayRef):
            target: Load | Scalar = self.load(lvalue, ctx)
            if target.array in self.readonly:
                self.error(lvalue, f"`{target.array}` is declared const")
            self.written.add(target.array)
            ttype = target.dtype
        elif isinstance(lvalue, c_ast.ID):
            target, ttype = self.scalar_target(lvalue, ctx, define=op == "=")
        else:
            self.error(lvalue, f"cannot assign to `{self.src(lvalue)}`: assign to an array "
                               "element or a local variable")
        if op == "=":
            node = self.emit(target, "=", convert(value, vtype, ttype), st, ctx)
            if isinstance(target, Scalar):
                ctx.assigned.add(target.name)
            return node
        bop = op[:-1]
        t = common_type(ttype, vtype)
        if bop == "%" and t not in INT_TYPES:
            self.error(st, f"`%=` of floating values `{self.src(st)}` is not C; use fmod")
        if t == ttype and not (bop in ("/", "%") and t in INT_TYPES):
            return self.emit(target, op, convert(value, vtype, t), st, ctx)
        # C computes `x op= v` in the common type of x and v, then converts back to x's type.
        a, b = convert(target, ttype, t), convert(value, vtype, t)
        rhs = truncating(bop, a, b) if bop in ("/", "%") and t in INT_TYPES else binary(bop, a, b)
        return self.emit(target, "=", convert(rhs, t, ttype), st, ctx)

    def scalar_target(self, node: c_ast.ID, ctx: Ctx, define: bool) -> tuple[Scalar, str]:
        name = node.name
        if name in self.loop_vars:
            self.error(node, f"cannot assign to loop counter `{name}` inside its loop")
        if name in self.syms:
            self.error(node, f"cannot assign to int parameter `{name}`: it is a size")
        decl = self.lookup(name)
        if decl is None and name in self.arrays:
            self.error(node, f"cannot assign to argument `{name}`: the caller would not see the "
                             "new value; use a local variable")
        if decl is None or decl.kind in ("array", "alias"):
            what = "an array" if decl is not None and decl.kind == "array" else "not a local " \
                "variable of the region"
            self.error(node, f"cannot assign to `{name}`: it is {what}")
        if decl.info is None:
            if not define:
                self._check_readable(node, decl)
                self.error(node, f"local variable `{name}` is read before it is assigned in "
                                 "this iteration")
            decl.info = self._new_scalar(name, decl.ctype, ctx)
        elif not define and decl.info.name not in ctx.assigned:
            self.error(node, f"local variable `{name}` is read before it is assigned in this "
                             "iteration")
        return Scalar(decl.ctype, decl.info.name), decl.ctype

    def _new_scalar(self, name: str, ctype: str, ctx: Ctx) -> ScalarInfo:
        unique, n = name, 0
        # c0, c1, ... are isl's loop iterators in generated code: keep locals off those names.
        while unique in self.scalar_names or unique in self.arrays or unique in self.syms \
                or unique in self.counter_names or re.fullmatch(r"c[0-9]+", unique):
            n += 1
            unique = f"{name}_{n}"
        self.scalar_names.add(unique)
        info = ScalarInfo(unique, len(ctx.loops), tuple(lp.var for lp in ctx.loops))
        self.arrays[unique] = Array(unique, ctype, (), "local", info.scope)
        return info

    def emit(self, target: Load | Scalar, op: str, value: Expr, st: c_ast.Node,
             ctx: Ctx) -> Node:
        name = f"S{len(self.pending)}"
        self.pending.append(Pending(name, ctx.loops, ctx.conds, target, op, value, self.loc(st)))
        return StmtRef(name)


def _is_id(node: c_ast.Node | None, name: str) -> bool:
    return isinstance(node, c_ast.ID) and node.name == name


def _reassigned(name: str, nodes: list[c_ast.Node]) -> bool:
    """Whether any of ``nodes`` may assign ``name`` (conservatively, ignoring shadowing)."""

    class Finder(c_ast.NodeVisitor):
        found = False

        def visit_Assignment(self, node: c_ast.Assignment) -> None:  # noqa: N802
            if _is_id(node.lvalue, name):
                self.found = True
            self.generic_visit(node)

        def visit_UnaryOp(self, node: c_ast.UnaryOp) -> None:  # noqa: N802
            if node.op in ("++", "--", "p++", "p--", "&") and _is_id(node.expr, name):
                self.found = True
            self.generic_visit(node)

    finder = Finder()
    for n in nodes:
        finder.visit(n)
    return finder.found

