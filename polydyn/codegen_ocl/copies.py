"""Printing the copies of promoted tiles into ``__local`` memory (promotion.py, regtiles.py):
the buffers and their bounds, the copy loop that deals the box's elements out to the
work-group, and reads of the copy. ``LocalCopies`` is a part of ``emit.OpenCLEmitter``.

A copy loads 16 bytes at a time (``float4``, ``double2``) where the box's rows are: its
extent along the last dimension a constant multiple of the vector, and, tested in the kernel
(the test is the same for the whole work-group), the first element of every row aligned (the
box's first index along it and the array's row length multiples of the vector, the array's
address a multiple of 16) and the rows' length in the box a multiple of the vector. Otherwise
it loads an element at a time. Double-buffered kernels (regtiles.py) copy into the buffer not
read now and swap at their ``PDSYNC`` barrier (regemit.py)."""

from __future__ import annotations

import math

import cgen

from ..codegen_c.astnodes import LoopState, strip_parens
from ..lowering.tree import Node
from ..scop.exprs import C_TYPE
from .plan import KernelSpec
from .promotion import OUTER, LocalCopy
from .regemit import STAGE

VECTOR_BYTES = 16
VECTOR_TYPES = {"f32": "float4", "f64": "double2"}
BARRIER = "barrier(CLK_LOCAL_MEM_FENCE)"


class LocalCopies:
    """The local-memory part of the OpenCL emitter (``_spec``: the kernel being printed;
    ``vector``: whether the variant's copies may load vectors, its recipe's ``gpu``)."""

    _spec: KernelSpec | None
    _barriers_outside = False  # printing copies under an `if` whose barriers are around it
    vector = True

    @staticmethod
    def box_sizes(copy: LocalCopy) -> list[str]:
        """The box's extents: constants, or the kernel variables holding the bounds."""
        return [str(size) if size is not None else f"{copy.buffer}_n{j}"
                for j, size in enumerate(copy.sizes)]

    def local_read(self, copy: LocalCopy, subs: list[str]) -> str:
        """The element of the copy at global subscripts ``subs``, in the buffer read now."""
        index = self.local_index(copy, subs)
        if self._staged():
            index = f"{STAGE} * {math.prod(copy.sizes)} + {index}"
        return f"{copy.buffer}[{index}]"

    def local_index(self, copy: LocalCopy, subs: list[str]) -> str:
        """Row-major index into the box of ``copy`` for global subscripts ``subs``."""
        out = ""
        for j, (sub, size) in enumerate(zip(subs, self.box_sizes(copy), strict=True)):
            term = f"(({sub}) - {copy.buffer}_lo{j})"
            out = term if j == 0 else f"({out}) * {size} + {term}"
        return out or "0"

    def conditional_copies(self, n: Node, st: LoopState) -> list[cgen.Generable]:
        """``barrier; if (uniform condition) { copies }; barrier``: the same synchronization
        as barriers inside the ``if`` (every work-item of the group takes the same branch),
        but PoCL's CPU compiler, which runs a group's work-items as loops between barriers,
        miscompiles barriers under a condition inside a loop: work-items past the guard of
        the code after them ran it (opencl_out_of_domain_write.py). Double-buffered copies
        have no barriers of their own."""
        self._barriers_outside = True
        try:
            then = self.node(n.then, st)
        finally:
            self._barriers_outside = False
        barrier = [] if self._staged() else [cgen.Statement(BARRIER)]
        return [*barrier, cgen.If(strip_parens(self.ast_expr(n.cond)),
                                  cgen.Block(then)), *barrier]

    def copy_in(self, copy: LocalCopy, args: list[str]) -> cgen.Generable:
        """The whole work-group copies the box into ``__local`` memory between barriers;
        ``pd_u<j>`` are the copy statement's arguments (uniform in the group)."""
        a = self.scop.array(copy.array)
        rank = len(copy.sizes)
        # two buffers (regtiles.py): the copy fills the one not read now, and the next
        # PDSYNC's barrier makes it the one read (its bounds too, ``_nlo``)
        staged = self._staged()
        barrier = [] if self._barriers_outside or staged else [cgen.Statement(BARRIER)]
        lo = f"{copy.buffer}_nlo" if staged else f"{copy.buffer}_lo"
        lines: list[cgen.Generable] = [
            cgen.Statement(f"const int64_t {OUTER}{j} = {arg}") for j, arg in enumerate(args)]
        lines += barrier
        for j in range(rank):
            lines.append(cgen.Statement(f"{lo}{j} = {self.ast_expr(copy.lo[j])}"))
            lines.append(cgen.Statement(
                f"const int64_t pd_n{j} = {self.ast_expr(copy.hi[j])} - {lo}{j} + 1"))
        width = self._vector_width(copy)
        scalar = self._copy_loop(copy, lo, 1)
        if width == 1:
            lines.append(scalar)
        else:
            last = rank - 1
            row = f" | ({a.shape[last].to_c()})" if rank > 1 else ""
            aligned = (f"(({lo}{last}{row} | pd_n{last}) & {width - 1}) == 0 && "
                       f"((ulong){a.name} & {VECTOR_BYTES - 1}) == 0")
            lines.append(cgen.If(aligned, cgen.Block([self._copy_loop(copy, lo, width)]),
                                 cgen.Block([scalar])))
        return cgen.Block(lines + barrier)

    def _vector_width(self, copy: LocalCopy) -> int:
        """Elements per load of the copy: a 16-byte vector where the box's rows can hold
        whole ones, else 1."""
        dtype = self.scop.array(copy.array).dtype
        if not self.vector or copy.dynamic or dtype not in VECTOR_TYPES:
            return 1
        width = VECTOR_BYTES // copy.itemsize
        return width if copy.sizes[-1] % width == 0 else 1

    def _copy_loop(self, copy: LocalCopy, lo: str, width: int) -> cgen.Generable:
        """``for (pd_v = pd_lid; ...)``: the work-items take the box's elements (or vectors
        of ``width`` elements along its rows) in turn, each loading those inside the array's
        part the box covers (``pd_n<j>``)."""
        a = self.scop.array(copy.array)
        rank = len(copy.sizes)
        sizes = self.box_sizes(copy)
        total = " * ".join(sizes)
        group = math.prod(self._spec.local_size)
        index = [] if width == 1 else [f"const int64_t pd_e = pd_v * {width}"]
        rest = "pd_e"
        for j in range(rank):
            stride = " * ".join(sizes[j + 1:])
            if stride and stride != "1":
                index.append(f"const int64_t pd_e{j} = ({rest}) / ({stride})")
                rest = f"({rest}) % ({stride})"
            else:  # the dimensions after this one have extent 1
                index.append(f"const int64_t pd_e{j} = {rest}")
                rest = "0"
        inside = " && ".join(f"pd_e{j} < pd_n{j}" for j in range(rank))
        flat = ""
        for j in range(rank):
            sub = f"{lo}{j} + pd_e{j}"
            flat = sub if j == 0 else f"({flat}) * ({a.shape[j].to_c()}) + {sub}"
        dest = f"({STAGE} ^ 1) * {total} + pd_e" if self._staged() else "pd_e"
        if width == 1:
            load = f"{copy.buffer}[{dest}] = {a.name}[{flat}]"
            it, count = "pd_e", total
        else:
            vtype = VECTOR_TYPES[self.scop.array(copy.array).dtype]
            load = (f"*(__local {vtype} *)({copy.buffer} + {dest}) = "
                    f"*(__global const {vtype} *)({a.name} + {flat})")
            it, count = "pd_v", f"{total} / {width}"
        body = [*(cgen.Statement(x) for x in index), cgen.If(inside, cgen.Statement(load))]
        if None not in copy.sizes and math.prod(copy.sizes) // width <= group:
            # one element per work-item at most: no loop that runs once (PoCL's vectorized
            # work-group loops lost the copy of such a loop in a 32-bit build)
            once = cgen.Block([cgen.Statement(f"const int64_t {it} = pd_lid"), *body])
            return once if math.prod(copy.sizes) // width == group else \
                cgen.If(f"pd_lid < {count}", once)
        return cgen.For(f"int64_t {it} = pd_lid", f"{it} < {count}", f"{it} += {group}",
                        cgen.Block(body))

    def local_declarations(self, spec: KernelSpec) -> list[cgen.Generable]:
        """``pd_lid`` (the work-item's flat id), the buffers (16-byte aligned: vectors are
        stored into them; twice the box where double-buffered) and their bounds."""
        if not spec.local:
            return []
        n = len(spec.grid.tiles)
        lid = "get_local_id(0)"
        for d in range(1, n):
            lid = f"{lid} + get_local_size(0) * get_local_id({d})" if d == 1 else \
                f"{lid} + get_local_size(0) * get_local_size(1) * get_local_id({d})"
        out: list[cgen.Generable] = [cgen.Statement(f"const int64_t pd_lid = {lid}")]
        for copy in spec.local:
            ctype = C_TYPE[self.scop.array(copy.array).dtype]
            if copy.dynamic:  # a kernel argument; its extents from the syms
                for j, size in enumerate(copy.size_c):
                    if size is not None:
                        out.append(cgen.Statement(
                            f"const int64_t {copy.buffer}_n{j} = pd_max(1, "
                            f"{self.ast_expr(size)})"))
            else:
                aligned = " __attribute__((aligned(16)))" if self._vector_width(copy) > 1 \
                    else ""
                out.append(cgen.Statement(
                    f"__local {ctype} {copy.buffer}[{spec.stages * math.prod(copy.sizes)}]"
                    f"{aligned}"))
            bounds = [f"{copy.buffer}_{lo}{j}" for lo in ("lo", "nlo")[:spec.stages]
                      for j in range(len(copy.sizes))]
            out.append(cgen.Statement(f"int64_t {', '.join(bounds)}"))
        if spec.stages == 2:
            out.append(cgen.Statement(f"int {STAGE} = 0"))
        return out


__all__ = ["VECTOR_TYPES", "LocalCopies"]
