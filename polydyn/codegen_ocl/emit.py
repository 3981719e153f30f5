"""Stage 5b, emission: OpenCL C kernels from the mapped kernels' loop trees.

``OpenCLEmitter`` is the C emitter with a small table changed: address-space qualifiers on
pointer parameters, loops without OpenMP pragmas (the CPU's loop roles are ignored),
work-group and work-item ids for the mapped members (promoted kernels print the loops over
mapped members as work-item guards; lane kernels deal their top-level loops out to the lanes
and combine reductions in local memory), the OpenCL names of the math functions (overloaded for
float and double), ``barrier`` and ``__local`` buffers for promoted tiles, and a prelude
without libc. Expressions, statements and conditions print through the C emitter.
"""

from __future__ import annotations

import cgen

from ..astgen import ITERATOR
from ..codegen_c.astnodes import LoopState, strip_parens
from ..codegen_c.emit import CEmitter, fixed_param, fixed_sizes, size_constants
from ..codegen_c.prelude import INT_HELPERS, fmod_helper
from ..errors import UnsupportedError
from ..lowering.tree import If, Instance, Loop, MarkNode, Node
from ..runtime.opencl import SEQUENCES_MARK, VARIANT_MARK
from ..scop.exprs import C_TYPE, Bin, Call, Const, concrete, is_float
from ..scop.ir import Array, Expr, Load, Scalar, Scop
from .combine import shuffle_prelude, shuffles
from .copies import LocalCopies
from .lanemit import LaneLoops
from .plan import GROUP, HOST, LOCAL, OFFSET, KernelSpec, VariantMapping
from .promotion import SYNC, only_copies
from .regemit import RegisterLoops
from .scalars import SpilledScalar
from .sequences import group_var, prologue, twin_spec

# OpenCL C overloads these for float and double: one table for both types.
MATH = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "erf": "erf",
        "abs": "fabs", "sin": "sin", "cos": "cos", "floor": "floor", "ceil": "ceil",
        "pow": "pow"}

PRELUDE = "typedef int int32_t;\n\n" + INT_HELPERS + fmod_helper("float", "f32", "fmod")
# The index type (loop iterators, offsets, flattened subscripts). Where no data is a 64-bit
# integer, the program also builds with PD_INDEX32, which the host runs for calls whose
# arrays and sizes stay under runtime.opencl.INDEX32_LIMIT: GPUs emulate 64-bit integer
# arithmetic, and an address computed in 32 bits takes fewer instructions and registers.
INDEX_64 = "typedef long int64_t;\n"
INDEX_32_OR_64 = "#ifdef PD_INDEX32\ntypedef int int64_t;\n#else\ntypedef long int64_t;\n#endif\n"

PRELUDE_F64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\nPD_MINMAX(double, f64)\n" + \
    fmod_helper("double", "f64", "fmod")


class OpenCLEmitter(LocalCopies, LaneLoops, RegisterLoops, CEmitter):
    """Prints the OpenCL program of one operator: every kernel of every variant.
    ``spilled``: local scalars kept in global memory (live across launches)."""

    restrict = "restrict"
    address_space = "__global"

    def __init__(self, scop: Scop, spilled: tuple[SpilledScalar, ...] = (),
                 permute: str = ""):
        super().__init__(scop)
        self.spilled = {s.name: s for s in spilled}
        if permute not in PERMUTATIONS:
            raise UnsupportedError(f"POLYDYN_OCL_PERMUTE={permute!r}: choose one of "
                                   f"{', '.join(repr(p) for p in PERMUTATIONS)}")
        self.permute = permute
        self._lane_types: set[str] = set()  # the local scalar types a lane kernel combines
        self._cells = {}
        self._sequences = False  # printing a kernel's twin over sequences
        self._shuffle_types: set[str] = set()  # the types any kernel shuffles (the prelude's)
        self._fixed: dict[str, int] = {}  # the sizes the variant being printed fixes

    # --- the overridden table ------------------------------------------------------------
    def param(self, a: Array, with_restrict: bool) -> str:
        text = super().param(a, with_restrict)
        return text if a.kind == "value" else f"{self.address_space} {text}"

    def call(self, e: Call) -> str:
        t = concrete(e.dtype)
        if e.fn == "abs" and not is_float(t):
            return super().call(e)
        return f"{MATH[e.fn]}({self.cast_to(e.args[0], t)})"

    def binary(self, e: Bin) -> str:
        t = concrete(e.dtype)
        if e.op == "pow" or (e.op == "//" and is_float(t)):
            a, b = self.cast_to(e.a, t), self.cast_to(e.b, t)
            return f"pow({a}, {b})" if e.op == "pow" else f"floor({a} / {b})"
        return super().binary(e)

    # --- promoted kernels: work-item guards, copies, local accesses --------------------------
    _spec: KernelSpec | None = None

    def node(self, n: Node, st: LoopState) -> list[cgen.Generable]:
        if isinstance(n, If) and self._spec is not None and \
                self._spec.local and n.orelse is None and \
                only_copies(n.then):
            return self.conditional_copies(n, st)
        if isinstance(n, If):  # no doubled parentheses (clang warns)
            then = cgen.Block(self.node(n.then, st))
            orelse = cgen.Block(self.node(n.orelse, st)) \
                if n.orelse is not None else None
            return [cgen.If(strip_parens(self.ast_expr(n.cond)), then, orelse)]
        if isinstance(n, Loop):
            return self.loop(n, st, parallel=False)
        if isinstance(n, MarkNode):  # loop marks; the CPU's roles do not apply
            child = n.node
            if isinstance(child, Loop):
                mark = n.loop
                return self.loop(child, st, parallel=mark is not None and mark.parallel)
            return self.node(child, st)
        if isinstance(n, Instance) and self._spec is not None:
            return self.user_node(n, st)
        return super().node(n, st)

    def user_node(self, n: Instance, st: LoopState) -> list[cgen.Generable]:
        """A statement (a lane kernel's: ``lane_statement``), a copy into local memory, or a
        register tile's cell transfer."""
        name = n.name
        if self._private_scalars():
            lane = self.lane_statement(n, st, name, lambda: super(OpenCLEmitter, self).node(
                n, st))
            if lane is not None:
                return lane
        for copy in self._spec.local:
            if copy.statement == name:
                args = [self.ast_expr(e) for e in n.args]
                return [self.copy_in(copy, args)]
        if name == SYNC:
            return self.swap_buffers()
        transfer = self.cell_transfer(name, n) if self._registers() else None
        if transfer is not None:
            return [transfer]
        return super().node(n, st)

    def loop(self, n: Loop, st: LoopState, parallel: bool,
             **_cpu: object) -> list[cgen.Generable]:
        """A loop over a mapped member (promoted kernels) is the work-item's own point,
        guarded by the loop's bounds: ``{ const c1 = pd_o0 + 16 * pd_g0 + pd_l0; if (..) }``
        (register-tiled kernels: the points of its register tile, ``register_loop``)."""
        if self._lanes_free():  # a loop of one iteration stays a block around its body
            return self.plain_loop(n, st) if n.degenerate else self.lane_loop(n, st)
        it = n.iterator
        threads = dict(self._spec.threads) if self._spec is not None and \
            self._spec.grid is not None else {}
        if it not in threads:
            return self.plain_loop(n, st)
        k = threads[it]
        tile = self._spec.grid.tiles[k]
        init = self.ast_expr(n.init)
        if n.degenerate:
            guard = f"{it} == {init}"
        else:
            guard = f"{it} >= {init} && {self.ast_expr(n.cond)}"
            inc = self.ast_expr(n.inc)
            if inc != "1":
                guard += f" && ({it} - {init}) % {inc} == 0"
        if self._registers():
            return self.register_loop(n, st, it, k, guard)
        body = self.node(n.body, st)
        return [cgen.Block([
            cgen.Statement(f"const int64_t {it} = {OFFSET}{k} + {tile} * {GROUP}{k} + "
                           f"{LOCAL}{k}"),
            cgen.If(guard, cgen.Block(body))])]

    def plain_loop(self, n: Loop, st: LoopState) -> list[cgen.Generable]:
        """A loop inside a work-item: no pragma (parallel members are work-items already)."""
        it = n.iterator
        init = self.ast_expr(n.init)
        body = self.node(n.body, st)
        if n.degenerate:
            return [cgen.Block([cgen.Statement(f"const int64_t {it} = {init}"), *body])]
        cond = strip_parens(self.ast_expr(n.cond))
        inc = self.ast_expr(n.inc)
        return [cgen.For(f"int64_t {it} = {init}", cond, f"{it} += {inc}", cgen.Block(body))]

    def expr(self, e: Expr) -> str:
        if isinstance(e, Scalar) and e.name in self.spilled and not self._private_scalars():
            return self.spilled_cell(self.spilled[e.name])
        held = self.register_expr(e) if self._registers() else None
        if held is not None:
            return held
        if isinstance(e, Load) and self._spec is not None:
            for copy in self._spec.local:
                if copy.array == e.array:
                    return self.local_read(copy, [i.to_c() for i in e.index])
        return super().expr(e)

    def spilled_cell(self, sc: SpilledScalar) -> str:
        """``pd_s_acc[(i - lo0) * extent1 + (j - lo1)]``: the scope iterators are among the
        statement's iterators, declared in its block."""
        out = ""
        for j, v in enumerate(sc.scope):
            term = f"({v} - ({self.ast_expr(sc.lo[j])}))" if sc.lo else "0"
            out = term if j == 0 else f"({out}) * ({self.ast_expr(sc.extent[j])}) + {term}"
        return f"{sc.buffer}[{out or '0'}]"

    # --- kernels ---------------------------------------------------------------------------
    def kernel_params(self, spec: KernelSpec) -> list[str]:
        """Sizes, host loop values, grid offsets, then the operator's arguments in declaration
        order, then its temporaries and spilled scalars, then the __local buffers sized at
        launch (the host passes them in this order)."""
        out = [f"long {fixed_param(s, self._fixed)}" for s in self.scop.syms]
        out += [f"long {HOST}{j}" for j in range(spec.n_host)]
        if spec.grid:
            out += [f"long {OFFSET}{k}" for k in range(len(spec.grid.tiles))]
        # in a lane kernel, lane 0 writes cells that the other lanes read after a barrier:
        # a restrict pointer lets the compiler keep their values from before it (a barrier
        # is a call that cannot write memory reached only through a restrict pointer)
        shared = bool(spec.lanes)
        out += [self.param(a, a.kind == "in" or not shared) for a in self.scop.arg_arrays]
        out += [self.param(a, not shared) for a in temporaries(self.scop)]
        spilled = "" if shared else "restrict "
        out += [f"__global {C_TYPE[sc.dtype]} *{spilled}{sc.buffer}"
                for sc in self.spilled.values()]
        out += [f"__local {C_TYPE[self.scop.array(c.array).dtype]} *restrict {c.buffer}"
                for c in spec.dynamic_local]
        return out

    def ids(self, spec: KernelSpec) -> list[cgen.Generable]:
        """Mapped member k (outermost first) uses OpenCL dimension n - 1 - k."""
        if spec.grid is None:
            return [cgen.Statement(f"const int64_t pd_lane = {self.local_id(0)}")] \
                if spec.lanes else []
        n = len(spec.grid.tiles)
        if spec.lanes:  # a group per value of the one mapped member, or per columns
            return self.lane_ids(spec)
        out: list[cgen.Generable] = []
        for k in range(n):
            out.append(cgen.Statement(f"const int64_t {GROUP}{k} = {self.group_id(n - 1 - k)}"))
            out.append(cgen.Statement(f"const int64_t {LOCAL}{k} = {self.local_id(n - 1 - k)}"))
        return out

    def group_id(self, d: int) -> str:
        """The work-group id along dimension ``d``, through the test permutation."""
        if self._sequences:  # a twin over sequences: its group's id in its sequence's grid
            return group_var(d)
        return _permuted(self.permute, f"get_group_id({d})", f"get_num_groups({d})")

    def local_id(self, d: int) -> str:
        """The work-item's local id along ``d``, through the test permutation (groups only
        under "groups"). Local-memory copies deal elements out by ``pd_lid``, the plain id:
        any order works for them."""
        if self.permute == "groups":
            return f"get_local_id({d})"
        return _permuted(self.permute, f"get_local_id({d})", f"get_local_size({d})")

    def kernel_function(self, spec: KernelSpec, sequences: bool = False) -> str:
        """The kernel's text; with ``sequences``, its twin over the groups of many sequences
        (``sequences.py``: the group ids come from its table)."""
        self._spec, self._sequences = spec, sequences
        self._lane_types = set()
        try:
            body = self.node(spec.ast, LoopState())
            ids = self.ids(spec)
        finally:
            self._spec, self._sequences = None, False
        assigned = self.locals.assigned(spec.ast)
        decls = [cgen.Statement(f"{C_TYPE[a.dtype]} {a.name}{self.register_dims(spec)}")
                 for a in self.scop.arrays if a.kind == "local" and a.name in assigned
                 and (a.name not in self.spilled or spec.lanes)]
        decls += self.register_declarations(spec)
        decls += self.local_declarations(spec)
        decls += [cgen.Statement(f"__local {C_TYPE[t]} pd_red_{t}"
                                 f"[{spec.lanes * max(1, spec.columns)}]")
                  for t in sorted(self._lane_types)]
        shuffled = sorted(t for t in self._lane_types
                          if not spec.columns and shuffles(t, spec.lanes))
        decls += [cgen.Statement(f"{C_TYPE[t]} pd_sh_{t}") for t in shuffled]
        self._shuffle_types.update(shuffled)
        size = ", ".join(str(s) for s in (*spec.local_size, 1, 1)[:3])
        params, first = self.kernel_params(spec), []
        name = spec.name
        if sequences:
            n = len(spec.grid.tiles) if spec.grid is not None else 0
            syms = [fixed_param(s, self._fixed) for s in self.scop.syms]
            params = ["__global const long *restrict pd_group_table",
                      "__global const long *restrict pd_seq_table", *params[len(syms) + n:]]
            first = prologue(self.scop, spec, syms)
            name = twin_spec(spec).name
        head = (f"__kernel __attribute__((reqd_work_group_size({size})))\n"
                f"void {name}({', '.join(params)})")
        block = cgen.Block([*first, *size_constants(self._fixed, "long"), *ids, *decls,
                            *body])
        what = f"the twin over sequences of {_describe(spec)}" if sequences else \
            _describe(spec)
        return f"/* {what} */\n{head}\n{block}\n"

    def module(self, mappings: list[VariantMapping],  # type: ignore[override]
               twins: list[tuple[VariantMapping, KernelSpec]] = ()) -> str:
        """Every kernel of every variant, then the ``twins`` over sequences."""
        self._shuffle_types = set()
        kernels = []
        for m in mappings:
            kernels.append(f"{VARIANT_MARK}{m.variant.name}: {m.variant.region} */")
            self._fixed = fixed_sizes(m.variant.region, self.scop.syms)
            self.vector = _vector_copies(m)
            kernels.extend(self.kernel_function(k) for k in m.kernels)
            kernels.extend(self.kernel_function(x) for k in m.kernels for x in k.family()[1:])
        if twins:
            kernels.append(SEQUENCES_MARK)
        for m, x in twins:
            self._fixed = fixed_sizes(m.variant.region, self.scop.syms)
            self.vector = _vector_copies(m)
            kernels.append(self.kernel_function(x, sequences=True))
        text = "\n".join(kernels)
        index = INDEX_32_OR_64 if self.scop.narrow_indices else INDEX_64
        prelude = index + PRELUDE + (PRELUDE_F64 if uses_double(self.scop) else "")
        prelude += shuffle_prelude(self._shuffle_types)
        return "\n".join([f"/* generated by polydyn for operator {self.scop.name} (OpenCL) */",
                          prelude, text])


# The orders POLYDYN_OCL_PERMUTE may ask for (tests: a race then gives wrong results)
PERMUTATIONS = ("", "reverse", "groups", "rotate")


def _permuted(mode: str, ident: str, count: str) -> str:
    """``ident`` (in ``[0, count)``) through the bijection of ``mode``."""
    if mode in ("reverse", "groups"):
        return f"(int64_t)({count} - 1 - {ident})"
    if mode == "rotate":
        return f"(int64_t)(({ident} + {count} / 2) % {count})"
    return ident


def _vector_copies(m: VariantMapping) -> bool:
    """Whether the variant's copies into local memory may load vectors (its ``gpu``)."""
    given = m.variant.recipe.gpu_mapping if m.variant.recipe is not None else None
    return given is None or given.vector


def temporaries(scop: Scop) -> list[Array]:
    return [a for a in scop.arrays if a.kind == "temp"]


def uses_double(scop: Scop) -> bool:
    """Any f64 array, local scalar or temporary, or any f64 arithmetic in a statement body
    (literals are typed by their operands, so they do not count): every double the kernels
    declare or compute comes from one of these."""
    if any(a.dtype == "f64" for a in scop.arrays):
        return True
    for stmt in scop.statements:
        for e in stmt.value.walk():
            if _is_f64_op(e):
                return True
    return False


def _is_f64_op(e: Expr) -> bool:
    return not isinstance(e, Const) and concrete(e.dtype) == "f64"


def _describe(spec: KernelSpec) -> str:
    if spec.grid is None and spec.lanes:
        return (f"{spec.name}: one work-group of {spec.lanes} lanes sharing its loops; "
                f"statements {', '.join(spec.statements)}")
    if spec.grid is None:
        return f"{spec.name}: one work-item; statements {', '.join(spec.statements)}"
    if spec.lanes and spec.columns:
        return (f"{spec.name}: a work-group of {spec.columns} values of schedule dim "
                f"{ITERATOR}{spec.grid.positions[0]} with {spec.lanes} lanes each, its loops "
                f"dealt out to the lanes; statements {', '.join(spec.statements)}")
    if spec.lanes:
        return (f"{spec.name}: a work-group of {spec.lanes} lanes per value of schedule dim "
                f"{ITERATOR}{spec.grid.positions[0]}, its loops dealt out to the lanes; "
                f"statements {', '.join(spec.statements)}")
    tiles = "x".join(str(t) for t in spec.grid.tiles)
    return (f"{spec.name}: {len(spec.grid.tiles)}-D grid of {tiles} work-groups over schedule "
            f"dims {', '.join(f'{ITERATOR}{p}' for p in spec.grid.positions)}; " +
            (f"{spec.regtiles.describe()}; " if spec.regtiles else "") +
            f"statements {', '.join(spec.statements)}")
