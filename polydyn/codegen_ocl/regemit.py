"""Printing register-tiled kernels (regtiles.py): the loops over the rows and columns of a
work-item's register tile, unrolled, its accumulators and per-point local scalars in private
arrays, and the statements that load them from the output and store them back.
``RegisterLoops`` is a part of ``emit.OpenCLEmitter``."""

from __future__ import annotations

from typing import Any

import cgen

from ..codegen_c.astnodes import LoopState
from ..lowering.tree import Instance, Loop
from ..scop.exprs import C_TYPE
from ..scop.ir import Expr, Load, Scalar
from .plan import GROUP, LOCAL, OFFSET, KernelSpec
from .promotion import OUTER
from .regtiles import ACC_LOAD, ACC_STORE

# the register tile's row and column in a work-item (loops fully unrolled)
REG_VARS = ("pd_ra", "pd_rb")
CELL = f"[{REG_VARS[0]}][{REG_VARS[1]}]"
# the register loops are unrolled: the cells then live in registers
UNROLL = "#pragma unroll"
# the buffer a double-buffered kernel's statements read (0 or 1); copies fill the other
STAGE = "pd_db"


class RegisterLoops:
    """The register-tile part of the OpenCL emitter (``_spec``: the kernel being printed)."""

    _spec: KernelSpec | None
    spilled: dict[str, Any]

    def _registers(self) -> bool:
        return self._spec is not None and self._spec.regtiles is not None

    def register_loop(self, n: Loop, st: LoopState, it: str, k: int,
                      guard: str) -> list[cgen.Generable]:
        """``#pragma unroll for (pd_ra < TM) { const c = o + BM g + (BM / TM) pd_ra + l;
        if (guard) body }``: the loop over mapped member ``k`` (rows or columns) of the
        group's AST, as the points of the work-item's register tile."""
        spec = self._spec
        n_mapped = len(spec.grid.tiles)
        per = spec.regtiles.per_item(n_mapped)[k]
        block = spec.grid.tiles[k]
        var = REG_VARS[k - (n_mapped - 2)]
        body = self.node(n.body, st)
        point = cgen.Statement(f"const int64_t {it} = {OFFSET}{k} + {block} * {GROUP}{k} + "
                               f"{block // per} * {var} + {LOCAL}{k}")
        free = k in spec.full or it in spec.free
        inner = [point, *body] if free else [point, cgen.If(guard, cgen.Block(body))]
        return [cgen.Line(UNROLL),
                cgen.For(f"int {var} = 0", f"{var} < {per}", f"{var} += 1", cgen.Block(inner))]

    def _staged(self) -> bool:
        return self._spec is not None and self._spec.stages == 2

    def swap_buffers(self) -> list[cgen.Generable]:
        """``PDSYNC``, the end of a double-buffered reduction tile: after the barrier, the
        buffer the copies filled (and its bounds) is the one read, and the other is free."""
        lines: list[cgen.Generable] = [cgen.Statement("barrier(CLK_LOCAL_MEM_FENCE)"),
                                       cgen.Statement(f"{STAGE} ^= 1")]
        for copy in self._spec.local:
            lines += [cgen.Statement(f"{copy.buffer}_lo{j} = {copy.buffer}_nlo{j}")
                      for j in range(len(copy.sizes))]
        return lines

    def register_expr(self, e: Expr) -> str | None:
        """A local scalar (one per point of the tile) or an accumulated cell; None for
        anything else."""
        if isinstance(e, Scalar) and e.name not in self.spilled and \
                self.scop.array(e.name).kind == "local":
            return f"{e.name}{CELL}"
        if isinstance(e, Load):
            for acc in self._spec.accumulators:
                if acc.array == e.array:
                    return f"{acc.buffer}{CELL}"
        return None

    def cell_transfer(self, name: str, call: Instance) -> cgen.Generable | None:
        """``PDACCLOAD_C``/``PDACCSTORE_C``: the point's cell from or to the array; None
        for another statement."""
        for acc in self._spec.accumulators:
            load, store = name == ACC_LOAD + acc.array, name == ACC_STORE + acc.array
            if not (load or store):
                continue
            args = [self.ast_expr(e) for e in call.args]
            lines: list[cgen.Generable] = [cgen.Statement(f"const int64_t {OUTER}{j} = {arg}")
                                           for j, arg in enumerate(args)]
            a = self.scop.array(acc.array)
            flat = ""
            for j, sub in enumerate(acc.index):
                text = self.ast_expr(sub)
                flat = text if j == 0 else f"({flat}) * ({a.shape[j].to_c()}) + {text}"
            elem, cell = f"{a.name}[{flat or '0'}]", f"{acc.buffer}{CELL}"
            lines.append(cgen.Statement(f"{cell} = {elem}" if load else f"{elem} = {cell}"))
            return cgen.Block(lines)
        return None

    def register_declarations(self, spec: KernelSpec) -> list[cgen.Generable]:
        """The private accumulators, ``float pd_acc_C[TM][TN]``."""
        if spec.regtiles is None:
            return []
        dims = self.register_dims(spec)
        return [cgen.Statement(f"{C_TYPE[self.scop.array(acc.array).dtype]} {acc.buffer}{dims}")
                for acc in spec.accumulators]

    @staticmethod
    def register_dims(spec: KernelSpec) -> str:
        """``[TM][TN]`` after a local scalar's name in a register-tiled kernel."""
        if spec.regtiles is None:
            return ""
        return f"[{spec.regtiles.tm}][{spec.regtiles.tn}]"


__all__ = ["REG_VARS", "STAGE", "RegisterLoops"]
