"""Stage 5a: loop tree -> C, one operator's module: its variants' functions, the dispatcher and
the header. ``CEmitter`` walks the loop tree (``lowering/tree.py``); its parts are mixins, one
concern each: statement bodies (``bodies.py``), loops and their OpenMP/simd pragmas
(``loops.py``), register tiles (``tiles.py``), repacked copies (``repack.py``), packed tiles
(``packs.py``), split sums (``split.py``), tiles transposed in registers (``transposes.py``).
The OpenCL emitter subclasses it and overrides a small table (qualifiers, work-item loops).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cgen
import islpy as isl

from ..astgen import LazyBox, ast_expr_c, condition_expr
from ..errors import InternalError
from ..lowering.openmp import Locals
from ..lowering.tree import Block, Collapsed, If, Instance, Loop, MarkNode, Node
from ..parametric.variants import Variant
from ..schedule.tree import INIT, PROMOTE, RFACTOR, RROW, TRANSPOSE, PackMark
from ..scop.exprs import (
    C_TYPE,
    Load,
)
from ..scop.ir import Array, Scop
from .astnodes import LoopState
from .bodies import BodyEmitter
from .loops import LoopEmitter
from .packs import PackedTiles
from .prelude import EXP_F32, PANEL_SLOT, PRELUDE, TRANSPOSE16
from .repack import Copy, Repack, Repacks
from .split import SplitSums
from .tiles import HeldCell, Padded, RegisterTiles, loops_below, mark_role
from .toolchain import UNIT_BREAK
from .transposes import TransposeBlocks

_T = isl.ast_expr_op_type


def fixed_sizes(region: isl.Set, syms: Iterable[str]) -> dict[str, int]:
    """The sizes that ``region`` fixes to one value (``assume="N = 8"``, a variant for ``N =
    1``). The variant's code declares them as constants, so the C compiler sees constant
    strides in the subscripts too, not only constant loop bounds."""
    region = region.detect_equalities()
    out = {}
    for s in syms:
        pos = region.find_dim_by_name(isl.dim_type.param, s)
        if pos < 0:
            continue
        val = region.plain_get_val_if_fixed(isl.dim_type.param, pos)
        if val.is_int():
            out[s] = int(val.to_python())
    return out


def size_constants(fixed: dict[str, int], ctype: str = "int64_t") -> list[cgen.Generable]:
    """``const int64_t N = 8; (void)N;`` for each ``fixed`` size (used or not: the code may
    be built with -Wall -Werror): the first statements of a function whose parameter for it
    is renamed (``fixed_param``)."""
    return [line for s, v in fixed.items()
            for line in (cgen.Statement(f"const {ctype} {s} = {v}"), cgen.Statement(f"(void){s}"))]


def fixed_param(sym: str, fixed: dict[str, int] | None) -> str:
    """The name of ``sym``'s parameter: ``pd_arg_<sym>`` when ``fixed`` holds it (the callers
    pass it all the same), else the sym's own."""
    return f"pd_arg_{sym}" if fixed and sym in fixed else sym


class CEmitter(LoopEmitter, BodyEmitter, RegisterTiles, Repacks, PackedTiles, SplitSums,
               TransposeBlocks):
    """Prints one operator's variants, its dispatcher and its header as C."""

    restrict = "restrict"
    parallel_pragma = "omp parallel for schedule(static)"
    cyclic_pragma = "omp parallel for schedule(static, 1)"  # iterations of unequal work
    simd_pragma = "omp simd"

    def __init__(self, scop: Scop, zero_init: frozenset[str] = frozenset(),
                 planned_for: str = ""):
        self.scop = scop
        self.zero_init = zero_init
        self.planned_for = planned_for  # the CPU the schedule was planned for, in words
        # the local scalars: which statements assign and touch them (counts: per variant)
        self.locals = Locals.of(scop)
        self.blocks = False  # the variant printed may reduce in Blocks (variant_function)
        self.region: isl.Set = scop.context
        # while emitting a register tile: array -> (row iterator, vector iterator, base names)
        self.promoted: dict[str, tuple[str, str, str, str]] = {}
        # arrays read from a copy here (a pack buffer, a repacked copy, a panel, a split
        # sum's private cells): repack.Copy
        self.packed: dict[str, Copy] = {}
        self.pack_count = 0
        # the function's repacked copies and panels, by what they copy (Repacks.repack,
        # Repacks.panel_plan)
        self.repacks: dict[tuple[Any, ...], Repack] = {}
        # the prelude's helpers the function calls (``pd_exp_f32``: prelude.EXP_F32)
        self.helpers: set[str] = set()
        self.tile_count = 0
        self.team_count = 0
        self.split_count = 0
        # while emitting a partial register tile as a full one
        self.padded: Padded | None = None
        # while emitting the register tile that an init statement's loops (this AST node,
        # under an INIT mark) precede: the tile starts from the init's values
        self.init: Node | None = None
        # while emitting an unrolled loop whose statement updates one cell: the cell and the
        # local that holds it (RegisterTiles.held_cell)
        self.held: HeldCell | None = None
        self.held_count = 0
        # box_exprs's answers, by the set's and the region's text
        self.boxes: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def work_expr(self, names: Iterable[str]) -> str:
        """C expression: the statement instances under a loop, the sum of the named
        statements' bounding-box sizes (a row loop of softmax or layernorm holds three or
        four passes over the row: each counts)."""
        terms = []
        for name in sorted(set(names)):
            domain = self.scop.statement(name).domain.intersect_params(self.region)
            if domain.is_empty():
                continue
            factors = [f"({extent})" for _, extent in self.box_exprs(domain)]
            if factors and factors[0].strip("()").isdigit():
                # constant extents (sizes fixed) multiply as int64_t: 1531 * 1531 * 1531
                # overflows an int, and the test then kept every thread idle
                factors[0] = f"(int64_t){factors[0]}"
            terms.append(" * ".join(factors) or "1")
        return " + ".join(terms) if terms else "0"

    def box_exprs(self, s: isl.Set) -> list[tuple[str, str]]:
        """Per dimension of ``s``'s bounding box, C expressions of its smallest index and of
        its number of indices, in this variant's region. Remembered by the two sets' text:
        each parallel loop's work test asks again for the same statements' boxes, and isl's
        parametric minimum and maximum were most of conv2d's C emission."""
        key = (str(s), str(self.region))
        if key not in self.boxes:
            build = isl.AstBuild.from_context(self.region)
            out = []
            for d in range(s.dim(isl.dim_type.set)):
                low = s.dim_min(d).coalesce()
                extent = s.dim_max(d).sub(low).add_constant_val(isl.Val.one(s.get_ctx()))
                out.append((self.ast_expr(build.expr_from_pw_aff(low)),
                            self.ast_expr(build.expr_from_pw_aff(extent.coalesce()))))
            self.boxes[key] = out
        return list(self.boxes[key])

    # --- isl AST expressions -------------------------------------------------------------
    def ast_expr(self, e: isl.AstExpr) -> str:
        return ast_expr_c(e)

    # --- AST nodes ----------------------------------------------------------------------------
    def node(self, n: Node, st: LoopState) -> list[cgen.Generable]:
        if isinstance(n, Block):
            return self.block(n, st)
        if isinstance(n, Loop):
            return self.loop(n, st, parallel=False)
        if isinstance(n, If):
            then = cgen.Block(self.node(n.then, st))
            orelse = cgen.Block(self.node(n.orelse, st)) \
                if n.orelse is not None else None
            return [cgen.If(self.ast_expr(n.cond), then, orelse)]
        if isinstance(n, Instance):
            name = n.name
            args = [self.ast_expr(e) for e in n.args]
            if st.region:
                raise InternalError(f"{name} outside the shared loops of a pack's region")
            return [self.statement(self.scop.statement(name), args)]
        if isinstance(n, Collapsed):  # the outer loop at 0, the inner over both extents
            bound = f"({self.ast_expr(n.rows)}) * ({self.ast_expr(n.inner.cond.get_op_arg(1))})"
            return [cgen.Block([cgen.Statement(f"const int64_t {n.original.iterator} = 0"),
                                *self.loop(n.inner, st, n.parallel, bound=bound)])]
        if isinstance(n, MarkNode):
            if isinstance(n.mark, PackMark):
                return self.pack(n, st)
            is_par, role = (n.loop.parallel, n.loop.role) if n.loop is not None else \
                (False, "")
            return self.marked(n.node, st, is_par, role, n.box if role == PROMOTE else None)
        raise InternalError(f"unexpected loop tree node {n!r}")

    def block(self, n: Block, st: LoopState) -> list[cgen.Generable]:
        kids = n.children
        out: list[cgen.Generable] = []
        i = 0
        while i < len(kids):
            if i + 1 < len(kids) and mark_role(kids[i]) == INIT and \
                    mark_role(kids[i + 1]) == PROMOTE and \
                    loops_below(kids[i + 1].node) == 1:
                # an init fused before a register tile (one loop: the tile's cells are the
                # init's): the tile starts from its values, or the code that runs instead
                # runs the init first (marked, register_tile)
                self.init = kids[i].node
                try:
                    out.extend(self.node(kids[i + 1], st))
                finally:
                    self.init = None
                i += 2
                continue
            out.extend(self.node(kids[i], st))
            i += 1
        return out

    def marked(self, n: Node, st: LoopState, is_par: bool, role: str,
               box: LazyBox | None = None) -> list[cgen.Generable]:
        """The code of a loop mark's subtree: the mark applies to the loops of its band, the
        for nodes reached through blocks and ifs (an isolated band is one loop for its full
        tiles and others for the partial ones, side by side). ``box``: a promote mark's
        annotation (astgen), for the register tile's partial form."""
        if st.region and role:
            raise InternalError(f"a {role} mark in a pack's region")
        if isinstance(n, Loop):
            if role == PROMOTE:
                promoted = self.register_tile(n, st, box)
                if promoted is not None:
                    return promoted
            if role == RROW and self.padded is not None:
                return self.padded_rows(st)
            if role == RFACTOR:
                return self.split_sum(n, st, is_par)
            if role == TRANSPOSE and (block := self.transpose_block(n)) is not None:
                return block
            return [*self.init_loops(st, role), *self.loop(n, st, parallel=is_par, role=role)]
        if isinstance(n, Block):
            return [g for c in n.children for g in self.marked(c, st, is_par, role, box)]
        if isinstance(n, If):
            then = cgen.Block(self.marked(n.then, st, is_par, role, box))
            orelse = cgen.Block(self.marked(n.orelse, st, is_par, role, box)) \
                if n.orelse is not None else None
            return [cgen.If(self.ast_expr(n.cond), then, orelse)]
        return [*self.init_loops(st, role), *self.node(n, st)]

    # --- functions ----------------------------------------------------------------------------
    def params(self, with_restrict: bool) -> list[str]:
        out = [f"int64_t {s}" for s in self.scop.syms]
        for a in self.scop.arg_arrays:
            out.append(self.param(a, with_restrict))
        return out

    def param(self, a: Array, with_restrict: bool) -> str:
        ctype = C_TYPE[a.dtype]
        if a.kind == "value":
            return f"{ctype} {a.name}"
        const = "const " if a.kind == "in" else ""
        restrict = f"{self.restrict} " if with_restrict and self.restrict else ""
        return f"{const}{ctype} *{restrict}{a.name}"

    def call_args(self) -> str:
        return ", ".join([*self.scop.syms, *self.scop.args])

    def size_expr(self, a: Array) -> str:
        prod = " * ".join(f"(size_t)({d.to_c()})" for d in a.shape) or "1"
        return f"sizeof({C_TYPE[a.dtype]}) * {prod}"

    def variant_function(self, fname: str, variant: Variant, ast: Node) -> str:
        self.region = variant.region
        self.locals = Locals.of(self.scop, ast)
        recipe = variant.recipe
        self.blocks = recipe.is_policy and not recipe.has("single_thread")  # openmp.Blocks
        st = LoopState()
        self.repacks = {}
        self.helpers = set()
        body = self.node(ast, st)
        decls: list[cgen.Generable] = []
        for a in self.scop.arrays:
            if a.kind == "local":
                decls.append(cgen.Statement(f"{C_TYPE[a.dtype]} {a.name}"))
        temps = [a for a in self.scop.arrays if a.kind == "temp"]
        for a in temps:  # each at its partner's offset in a page (page-aligned without one)
            ctype, zero = C_TYPE[a.dtype], int(a.name in self.zero_init)
            partner = alloc_partner(self.scop, a) or "NULL"
            decls += [cgen.Statement(f"void *pd_tb_{a.name} = NULL"), cgen.Statement(
                f"{ctype} *{self.restrict} {a.name} = ({ctype} *)pd_alloc_like("
                f"{self.size_expr(a)}, {zero}, {partner}, &pd_tb_{a.name})")]
        frees = [cgen.Statement(f"free(pd_tb_{a.name})") for a in temps] + \
            [r.release for r in self.repacks.values()]
        failed = [f"!{a.name}" for a in temps] + [r.fail for r in self.repacks.values()]
        for r in self.repacks.values():
            decls += r.alloc
        tail = [cgen.Statement("return 0")]
        if frees:
            decls.append(cgen.If(" || ".join(failed),
                                 cgen.Block([*frees, cgen.Statement("return -2")])))
            tail = [*frees, *tail]
        decls += [r.copy for r in self.repacks.values()]
        fixed = fixed_sizes(variant.region, self.scop.syms)
        block = cgen.Block([*size_constants(fixed), *decls, *body, *tail])
        helper = TRANSPOSE16 if "pd_tr16_f32" in self.helpers or \
            any(r.in_registers for r in self.repacks.values()) else ""
        if any(r.panel for r in self.repacks.values()):
            helper += PANEL_SLOT
        if "pd_exp_f32" in self.helpers:
            helper += EXP_F32
        return f"{helper}/* variant {variant.name}: {variant.region} */\n" \
            f"{self.signature(fname, fixed)}\n{block}\n"

    def signature(self, fname: str, fixed: dict[str, int] | None = None) -> str:
        """A variant's signature; the parameters of the ``fixed`` sizes renamed (their
        constants take the names)."""
        params = self.params(True)
        params[:len(self.scop.syms)] = [f"int64_t {fixed_param(s, fixed)}"
                                        for s in self.scop.syms]
        return f"PD_VARIANT int {fname}({', '.join(params)})"

    def dispatcher(self, variants: list[Variant]) -> str:
        name = self.scop.name
        syms = ", ".join(f"int64_t {s}" for s in self.scop.syms) or "void"
        lines = [f"int {name}_select({syms}) {{"]
        lines.append(f"  if (!{self.region_test(self.scop.context)}) return -1;")
        for k, v in enumerate(variants):
            lines.append(f"  if ({self.region_test(v.region.gist(self.scop.context))}) "
                         f"return {k};")
        lines.append("  return -1;")
        lines.append("}")
        params = ", ".join(self.params(False))
        lines.append(f"int {name}_run(int variant, {params}) {{")
        lines.extend(self.zero_fill())
        lines.append("  switch (variant) {")
        for k, _ in enumerate(variants):
            lines.append(f"    case {k}: return {name}_v{k}({self.call_args()});")
        lines.append("    default: return -1;")
        lines.append("  }")
        lines.append("}")
        sym_args = ", ".join(self.scop.syms)
        lines.append(f"int {name}({params}) {{")
        lines.append(f"  int variant = {name}_select({sym_args});")
        lines.append("  if (variant < 0) return -1;")
        lines.append(f"  return {name}_run(variant, {self.call_args()});")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def zero_fill(self) -> list[str]:
        return [f"  memset({a.name}, 0, {self.size_expr(a)});" for a in self.scop.arg_arrays
                if a.kind == "out" and a.name in self.zero_init]

    def region_test(self, region: isl.Set) -> str:
        if region.is_params() and region.plain_is_universe():
            return "1"
        return self.ast_expr(condition_expr(region))

    def header(self, variants: list[Variant]) -> str:
        name = self.scop.name
        guard = f"POLYDYN_{name.upper()}_H"
        syms = ", ".join(f"int64_t {s}" for s in self.scop.syms) or "void"
        params = ", ".join(self.params(False))
        doc = [f"/* {name}: generated by polydyn. Sizes: {', '.join(self.scop.syms) or '-'}.",
               f" * Context: {self.scop.context}",
               " * Arrays are dense row-major. Returns 0, or -1 when the sizes are outside",
               " * the context, or -2 when a temporary could not be allocated.",
               *([f" * Tiles planned for: {self.planned_for}."] if self.planned_for else []),
               " * Variants (first match runs):"]
        doc += [f" *   {k}: {v.name}  {v.region}" for k, v in enumerate(variants)]
        doc.append(" */")
        return "\n".join([
            f"#ifndef {guard}", f"#define {guard}", "#include <stdint.h>", *doc,
            f"int {name}({params});",
            f"int {name}_select({syms});",
            f"int {name}_run(int variant, {params});",
            f"#endif /* {guard} */", ""])

    def module(self, variants: list[Variant], asts: list[Node]) -> str:
        functions = [self.variant_function(self.function_name(k), v, ast)
                     for k, (v, ast) in enumerate(zip(variants, asts, strict=True))]
        return self.module_of(variants, functions)

    def head(self) -> str:
        """The text every translation unit of the module starts with."""
        planned = f" (tiles planned for {self.planned_for})" if self.planned_for else ""
        return "\n".join([f"/* generated by polydyn for operator {self.scop.name}{planned} */",
                          PRELUDE])

    def function_name(self, k: int) -> str:
        return f"{self.scop.name}_v{k}"

    def module_of(self, variants: list[Variant], functions: list[str]) -> str:
        """The module: the head, each variant's function (``variant_function``, in order)
        as a translation unit of its own, then the prototypes and the dispatcher."""
        names = [self.function_name(k) for k in range(len(variants))]
        parts = [self.head()]
        for function in functions:
            parts += [UNIT_BREAK, function]
        parts += [UNIT_BREAK, *(f"{self.signature(f)};" for f in names),
                  self.dispatcher(variants)]
        return "\n".join(parts)


def alloc_partner(scop: Scop, temp: Array) -> str | None:
    """The argument array a temporary is placed against (``pd_alloc_like``): the first one
    of its element type that a statement touching the temporary also touches (jacobi-2d's
    ``A`` for ``B``), so corresponding cells share their offset within a page; None if
    there is none."""
    for stmt in scop.statements:
        touched = [e.array for e in (stmt.target, *stmt.value.walk()) if isinstance(e, Load)]
        if temp.name not in touched:
            continue
        for name in touched:
            other = scop.array(name)
            if other.kind in ("in", "out", "inout") and other.dtype == temp.dtype:
                return name
    return None
