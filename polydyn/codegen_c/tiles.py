"""Register tiles in C: the accumulators of a rows x vector register tile kept in a local
array around its reduction loops (a partial tile run as a full one where that is safe), and
one cell kept in a local around an unrolled reduction. ``RegisterTiles`` is a part of
``emit.CEmitter``, which reads the marks; the copies a tile reads from are in ``repack.py``
and ``packs.py``."""

from __future__ import annotations

from dataclasses import dataclass

import cgen

from ..astgen import LazyBox, ast_expr_c, iterator_depth
from ..lowering.tree import (
    Block,
    Collapsed,
    If,
    Instance,
    Loop,
    MarkNode,
    Node,
    constant_trip,
    count_role_loops,
    expr_ids,
    find_role_loop,
)
from ..schedule.registers import MAX_REG_VECTOR_BYTES
from ..schedule.tree import PROMOTE, RROW, RVEC
from ..scop.affine import Aff
from ..scop.exprs import C_TYPE, Expr, Index, Load, Scalar, Select
from ..scop.ir import Statement
from .astnodes import LoopState, UserCall, ast_users, strip_parens


@dataclass
class Padded:
    """A partial register tile run as a full one (``RegisterTiles._padded_plan``)."""

    stmt: Statement
    args: dict[str, str]  # C values of the statement's iterators (rows, vector: set later)
    lo: dict[str, str]  # the box: smallest value and extent of each iterator
    size: dict[str, str]
    uses: dict[str, frozenset[str]]  # the identifiers each iterator's ``lo`` and size use
    rows: int
    width: int
    where: str  # C: the box is not empty (else there are no instances: nothing runs)
    checks: list[str]  # more run-time conditions (C): reads stay in rows, the width fits
    shift: bool = False  # the vector ends at the box's top (it starts below the box)


@dataclass(frozen=True)
class _Tile:
    """What ``RegisterTiles.register_tile`` found of a register tile around ``n``."""

    n: Node
    stmts: list[Statement]
    args: dict[str, str]
    uses: dict[str, frozenset[str]]  # the identifiers each of ``args`` uses
    target: Load
    row_dim: int
    vec_dim: int
    row_var: str
    vec_var: str
    row_it: str
    vec_it: str
    extents: list[int | None]
    transposed: bool
    saved_packed: dict
    panel: str | None = None  # the panel the vector operand is read from (Repacks.panel_plan)


@dataclass
class HeldCell:
    """The cell an unrolled loop's statement updates, held in ``local`` over the loop
    (``RegisterTiles.held_cell``); ``decls`` declare the iterators its subscripts use."""

    array: str
    index: tuple[Aff, ...]
    local: str
    ctype: str
    decls: list[cgen.Generable]
    cell: str  # C: the cell itself (in the array, or in a copy the array is read from)


class RegisterTiles:
    """The register-tile and packing methods of ``emit.CEmitter``."""

    def held_cell(self, n: Loop, it: str) -> HeldCell | None:
        """Scalar replacement for an unrolled loop whose one statement updates a cell that
        does not move with the loop (the N = 1 matmul's steps of k: ``C[0, j] += A[0, k] *
        B[k, j]``) and reads no other cell of that array: the cell is loaded into a local
        before the loop and stored after it (``held_loop``). In the functions OpenMP
        outlines gcc no longer knows the arrays apart, restrict being lost: it stored the
        cell after every step and loaded A's values again, and the N = 1 matmul ran at half
        NumPy's speed. None where the loop is not of that form."""
        body = n.body
        if not isinstance(body, Instance):
            return None
        stmt = self.scop.statement(body.name)
        target = stmt.target
        if not isinstance(target, Load) or target.array in self.promoted:
            return None
        if any(isinstance(e, Load) and e.array == target.array and e.index != target.index
               for e in stmt.value.walk()):
            return None
        used = set().union(*(a.vars() for a in target.index))
        (user,) = ast_users(body, self)
        if used & user.moving(stmt.iters, it):
            return None  # the cell moves with the loop
        decls = [(v, a) for v, a in zip(stmt.iters, user.args, strict=True) if v in used]
        self.held_count += 1
        return HeldCell(target.array, target.index, f"pd_cell{self.held_count}",
                        C_TYPE[self.scop.array(target.array).dtype],
                        [cgen.Statement(f"const int64_t {v} = {a}") for v, a in decls],
                        self.load(target))

    def held_loop(self, n: Node, held: HeldCell, unrolled: list[cgen.Generable],
                  it: str, init: str) -> list[cgen.Generable]:
        """The unrolled loop ``n`` with its cell loaded before and stored after; a loop
        that may have no iterations does both only where it runs (a thread whose share has
        none must not store a cell another thread updates)."""
        code = [cgen.Statement(f"{held.ctype} {held.local} = {held.cell}"), *unrolled,
                cgen.Statement(f"{held.cell} = {held.local}")]
        if not (constant_trip(n) or 0) > 0:  # the loop's condition at its first value
            first = strip_parens(ast_expr_c(n.cond, {it: f"({init})"}))
            code = [cgen.If(first, cgen.Block(code))]
        return [cgen.Block([*held.decls, *code])]

    def _promoted_ref(self, e: Load) -> tuple[str, str, str, str, str]:
        """The accumulator cell of a target access: its row and vector iterators minus
        their values at the tile's origin (``C[i, k + 1]`` -> ``acc[i - i0][k - k0]``)."""
        acc, row_dim, vec_dim, base_row, base_vec = self.promoted[e.array]
        (row,) = e.index[int(row_dim)].vars()
        (vec,) = e.index[int(vec_dim)].vars()
        return acc, f"({row})", f"({vec})", base_row, base_vec

    def register_tile(self, n: Loop, st: LoopState, box: LazyBox | None = None
                      ) -> list[cgen.Generable] | None:
        """Around the reduction loop ``n`` of a register tile: copy the target's rows x
        vector footprint into a local array, accumulate there, copy it back. A partial tile
        runs as a full one over its instance box (``box``, see ``_padded_plan``) where that
        is safe; otherwise (None) the plain loops run."""
        body_node = n.body
        row = find_role_loop(body_node, RROW, through_ifs=True)
        vec = find_role_loop(body_node, RVEC, through_ifs=True)
        if row is None or vec is None:
            return None
        extents = [constant_trip(x) for x in (row, vec)]
        full = None not in extents and find_role_loop(body_node, RROW) is not None and \
            find_role_loop(body_node, RVEC) is not None
        if not full and (box is None or box.value is None or
                         count_role_loops(body_node, RROW) != 1):
            return None
        row_it, vec_it = (x.iterator for x in (row, vec))
        users = ast_users(body_node, self)
        stmts = [self.scop.statement(u.name) for u in users]
        target = stmts[0].target
        if not isinstance(target, Load) or any(
                not isinstance(s.target, Load) or s.target.array != target.array
                or [str(i) for i in s.target.index] != [str(i) for i in target.index]
                for s in stmts):
            return None
        # which target subscript moves with the rows, which with the vector
        args = users[0].values(stmts[0].iters)
        uses = dict(zip(stmts[0].iters, users[0].uses, strict=True))
        row_dim = vec_dim = None
        for d, sub in enumerate(target.index):
            if sub.vars() & users[0].moving(stmts[0].iters, row_it):
                row_dim = d
            if sub.vars() & users[0].moving(stmts[0].iters, vec_it):
                vec_dim = d
        if row_dim is None or vec_dim is None or row_dim == vec_dim:
            return None
        row_sub, vec_sub = target.index[row_dim], target.index[vec_dim]
        if len(row_sub.vars()) != 1 or len(vec_sub.vars()) != 1:
            return None
        (row_var,), (vec_var,) = row_sub.vars(), vec_sub.vars()
        saved_packed = dict(self.packed)
        vector_copies = self._vector_copies(n, stmts, uses, target, vec_dim, row_var, vec_var)
        if vector_copies is None:
            return None
        transposed, panel = vector_copies
        padded = None
        if not full:
            padded = self._padded_plan(stmts, users, box, row_var, vec_var, row_it, vec_it)
            if padded is None:
                self.packed = saved_packed
                return None
        # a partial vector of at most half the tile's width runs with half the lanes: the
        # cells past the box cost half as much (33 columns: 32 + 1 computed as 32 + 16)
        narrow = self._narrow_plan(padded, stmts, users, box, row_var, vec_var, row_it, vec_it)
        tile = _Tile(n, stmts, args, uses, target, row_dim, vec_dim, row_var, vec_var, row_it,
                     vec_it, extents, transposed, saved_packed, panel)
        entry = dict(self.packed)  # each version starts from the copies made so far
        wide = self._tile_version(tile, st, padded)
        if wide is None or narrow is None:
            return wide
        self.packed = dict(entry)
        half = self._tile_version(tile, st, narrow, fallback=cgen.Block(wide))
        return half if half is not None else wide

    def _vector_copies(self, n: Node, stmts: list[Statement],
                       uses: dict[str, frozenset[str]], target: Load, vec_dim: int,
                       row_var: str, vec_var: str) -> tuple[bool, str | None] | None:
        """Whether the tile reads the operands that move along its vector from copies with
        the vector's dimension innermost, and the panel it reads (``Repacks.panel_plan``;
        else a whole copy, ``Repacks.repack``); None where they cannot be copied. A
        transposed tile (RegisterShape.transposed: the vector along a subscript of the
        target that is not its last) does so always: in place, each vector would be a
        gather; so does a tile whose operands move along the vector other than with stride
        1 (B stored transposed: ``Bt[j, k]``, the vector along j)."""
        last = vec_dim == len(target.index) - 1
        if last and not _strided_along(stmts[0].value, vec_var):
            return False, None
        panel = self.panel_plan(stmts[0], uses, n, row_var, vec_var) \
            if last and len(stmts) == 1 else None
        lanes = MAX_REG_VECTOR_BYTES // dtype_bytes(self.scop.array(target.array).dtype)
        if panel is None and not self.repack(stmts, uses, vec_var, row_var, lanes, always=True):
            return None
        return True, panel

    def _narrow_plan(self, padded: Padded | None, stmts: list[Statement],
                     users: list[UserCall], box: LazyBox | None, row_var: str,
                     vec_var: str, row_it: str, vec_it: str) -> Padded | None:
        """For a partial register tile of two 64-byte vectors whose vector can be at most
        half that at run time: the same tile with one of them, or None. Measured on Zen 4,
        2 threads, square matmul against the wide tile alone: 33^3 1.11x, 40^3 1.12x,
        65^3 1.12x, 80^3 1.14x, 100^3 1.08x, 129^3 1.07x, 300^3 1.04x; halving a one-zmm
        tile (the narrow tiers, 17^3 to 24^3) ran 0.94-0.97x, so those stay whole."""
        if padded is None or padded.size[vec_var] == str(padded.width):
            return None
        half = padded.width // 2
        elem = dtype_bytes(self.scop.array(stmts[0].target.array).dtype)
        if half * elem < MAX_REG_VECTOR_BYTES // 2:
            return None
        return self._padded_plan(stmts, users, box, row_var, vec_var, row_it, vec_it,
                                 max_width=half)

    def _tile_version(self, tile: _Tile, st: LoopState, padded: Padded | None,
                      fallback: cgen.Generable | None = None) -> list[cgen.Generable] | None:
        """The register tile around ``tile.n`` (full, or the partial one ``padded``); where
        a partial tile's run-time checks fail, ``fallback`` runs (by default the plain
        loops)."""
        n, stmts, args, target = tile.n, tile.stmts, tile.args, tile.target
        uses = dict(tile.uses)
        row_var, vec_var, row_it, vec_it = tile.row_var, tile.vec_var, tile.row_it, tile.vec_it
        saved_packed = tile.saved_packed
        repacked = [] if tile.transposed else \
            self.repack(stmts, tile.uses, row_var, vec_var,
                        tile.extents[0] if padded is None else padded.rows)
        self.tile_count += 1
        k = self.tile_count
        acc = f"pd_acc{k}"
        ctype = C_TYPE[self.scop.array(target.array).dtype]
        # base iterator values: the statement's iterators with the tile's point loops at 0
        # (a partial tile: at the smallest values of its box)
        bases = {v: f"pd_b{k}_{v}" for v in stmts[0].iters}
        decl = [cgen.Statement(f"int64_t {b}") for b in bases.values()]
        zero = [cgen.Statement(f"const int64_t {row_it} = 0"),
                cgen.Statement(f"const int64_t {vec_it} = 0")]
        values = dict(args)
        if padded is not None:
            zero = []
            values[row_var], values[vec_var] = padded.lo[row_var], padded.lo[vec_var]
            uses[row_var], uses[vec_var] = padded.uses[row_var], padded.uses[vec_var]
            if padded.shift:
                values[vec_var] = \
                    f"({padded.lo[vec_var]}) + ({padded.size[vec_var]}) - {padded.width}"
        assign = [cgen.Statement(f"{bases[v]} = {values[v]}") for v in stmts[0].iters
                  if not _mentions_inner(uses[v], n, row_it, vec_it)]
        if len(assign) != len(stmts[0].iters):
            # an iterator of the target depends on the reduction loops: no promotion
            tgt_vars = set().union(*(sub.vars() for sub in target.index))
            assign = [cgen.Statement(f"{bases[v]} = {values[v]}") for v in stmts[0].iters
                      if v in tgt_vars]
            if any(_mentions_inner(uses[v], n, row_it, vec_it) for v in tgt_vars):
                self.tile_count -= 1
                self.packed = saved_packed
                return None
        env = {v: Aff.var(bases[v]) for v in bases}
        env[row_var] = Aff.var(bases[row_var]) + Aff.var("pd_r")
        env[vec_var] = Aff.var(bases[vec_var]) + Aff.var("pd_v")
        cells = [i.subst(env) for i in target.index]
        cell = f"{target.array}[{self.flat_index(target.array, cells)}]"
        # the accumulators' first values: the cells, or the values of the init statement
        # fused before the tile (schedule.inits), whose loops then do not run
        start = self._init_values([c.to_c() for c in cells])
        first_value, decls = (cell, []) if start is None else start
        if padded is None:
            rows, width = tile.extents
            copy_in = [self._tile_copy(f"{acc}[pd_r][pd_v] = {first_value}", rows, width,
                                       decls=decls)]
            copy_out = self._tile_copy(f"{cell} = {acc}[pd_r][pd_v]", rows, width)
        else:  # the accumulators of cells outside the box start at 0 and are dropped
            rows, width = padded.rows, padded.width
            nr, nv = f"pd_nr{k}", f"pd_nv{k}"
            decl += [cgen.Statement(f"const int64_t {nr} = {padded.size[row_var]}"),
                     cgen.Statement(f"const int64_t {nv} = {padded.size[vec_var]}")]
            # the box's cells: the first nv of the vector, or its last nv when it ends at the
            # box's top (the cells below are other tiles': neither read nor written)
            first = f"{width} - {nv}" if padded.shift else 0
            copy_in = [self._tile_copy(f"{acc}[pd_r][pd_v] = 0", rows, width),
                       self._tile_copy(f"{acc}[pd_r][pd_v] = {first_value}", nr, nv if not
                                       padded.shift else width, first, decls=decls)]
            copy_out = self._tile_copy(f"{cell} = {acc}[pd_r][pd_v]", nr,
                                       nv if not padded.shift else width, first)
            clamped = f"{bases[row_var]} + pd_min(pd_r, {nr} - 1)"
            # rows past the box read a repacked copy's zeros, in bounds (not where a
            # condition on the row guards a load that does not move with it, as for columns
            # in _padded_plan)
            padded.args[row_var] = f"{bases[row_var]} + pd_r" \
                if repacked and not _guarded_along(padded.stmt.value, row_var) else clamped
            padded.args[vec_var] = f"{bases[vec_var]} + pd_v"
        self.promoted[target.array] = (acc, str(tile.row_dim), str(tile.vec_dim),
                                       bases[row_var], bases[vec_var])
        self.padded = padded
        try:
            body = self.loop(n, st, parallel=False)
            if repacked:  # where the copies were not made, the arrays are read in place
                self.packed = dict(saved_packed)
                if padded is not None:
                    padded.args[row_var] = clamped
                body = [cgen.If(" && ".join(repacked), cgen.Block(body),
                                cgen.Block(self.loop(n, st, parallel=False)))]
        finally:
            del self.promoted[target.array]
            self.padded = None
            self.packed = saved_packed
        fill = [] if tile.panel is None else \
            self.panel_fill(tile.panel, bases[vec_var], bases)
        code = cgen.Block([*(self.init_loops(st, PROMOTE) if start is None else []),
                           *decl, cgen.Block([*zero, *assign]), *fill,
                           cgen.Statement(f"{ctype} {acc}[{rows}][{width}]"),
                           *copy_in, *body, copy_out])
        if padded is None:
            return [code]
        if padded.checks:
            # where the vector's cells outside the box would read past the end of a packed
            # row (a tile not aligned to the vector in the packed box), or the box is wider
            # than the tile, the plain loops run
            other = fallback if fallback is not None else cgen.Block(
                [*self.init_loops(st, PROMOTE), *self.loop(n, st, parallel=False)])
            code = cgen.If(" && ".join(padded.checks), code, other)
        # where the box is empty nothing runs (the plain loops' reduction loops around an
        # empty vector loop took a quarter of conv (2, 8, 28, 34), whose columns are one
        # whole tile)
        return [code if padded.where == "1" else cgen.If(padded.where, code)]

    def _padded_plan(self, stmts: list[Statement], users: list[UserCall],
                     box: LazyBox | None, row_var: str, vec_var: str, row_it: str,
                     vec_it: str,
                     max_width: int | None = None) -> Padded | None:
        """How a partial register tile runs as a full one. ``box`` (astgen) gives, per
        iterator of the tile's one statement, its smallest value, its extent and its largest
        extent, and says that the instances form that box: every cell of the target in it
        takes the same reduction iterations. The tile then computes all rows x width cells:
        a row outside the box reads the last row in it (its loads stay in bounds) and the
        cells outside are never stored. Columns outside the box read past the box's end, so
        a partial vector needs every load that moves along it to come from a packed buffer
        (rows padded and zero-filled, see ``pack``), checked at run time to stay in its row.
        None when that does not hold. With ``max_width``, the tile is that many lanes wide,
        for boxes no wider (a run-time check)."""
        box = box.value if box is not None else None
        if len(users) != 1 or box is None:
            return None
        stmt, user = stmts[0], users[0]
        if len(box.lo) != len(stmt.iters):
            return None
        where = self.ast_expr(box.where)
        lo = {v: self.ast_expr(e) for v, e in zip(stmt.iters, box.lo, strict=True)}
        size = {v: self.ast_expr(e) for v, e in zip(stmt.iters, box.size, strict=True)}
        top = dict(zip(stmt.iters, box.top, strict=True))
        uses = {v: expr_ids(a) | expr_ids(b)
                for v, a, b in zip(stmt.iters, box.lo, box.size, strict=True)}
        for sub, var in ((stmt.target.index[d], v) for d, v in
                         _target_dims(stmt.target, row_var, vec_var)):
            lin = sub.linear()
            if lin is None or lin[0] != {var: 1}:
                return None
        elem = dtype_bytes(self.scop.array(stmt.target.array).dtype)
        if top[row_var] is None or top[vec_var] is None:  # unbounded
            return None
        # the rows the box can have; its width rounded up to whole vectors: 16, 32 or 64
        # bytes (a narrow tier's tile: CpuTarget.narrow, or a register tile's vector)
        lanes = next(b for b in (16, 32, 64) if int(top[vec_var]) * elem <= b or b == 64) // elem
        rows, width = int(top[row_var]), -(-int(top[vec_var]) // lanes) * lanes
        if rows * width > 4096:  # not a register tile
            return None
        others = {v: a for v, a in zip(stmt.iters, user.args, strict=True)
                  if v not in (row_var, vec_var)}
        if set(others) & (user.moving(stmt.iters, row_it) | user.moving(stmt.iters, vec_it)):
            return None
        checks = []
        if max_width is not None:
            width = max_width
            checks.append(f"({size[vec_var]}) <= {width}")
        shift = False
        if size[vec_var] != str(width):  # a partial vector
            moving = [ref for ref in stmt.value.walk() if isinstance(ref, Load) and
                      ref.array != stmt.target.array and
                      any(vec_var in sub.vars() for sub in ref.index)]
            # columns past the box evaluate the statement there: a load that does not move
            # along the vector, under a condition that does (`A[i, k - 1] if k + j >= M`),
            # could leave the array there although it stays inside at every instance
            past = not _guarded_along(stmt.value, vec_var)
            if past and all(self._repacked_along(ref, vec_var) for ref in moving):
                pass  # a transposed tile's copies: zeros past the vector's end, in bounds
            elif past and all(self.copy_of(ref) is not None and
                              ref.index[-1].vars() == {vec_var} and
                              vec_var not in set().union(*(sub.vars() for sub in ref.index[:-1]))
                              for ref in moving):
                for ref in moving:
                    copy = self.copy_of(ref)
                    top_cell = Aff.var(f"({lo[vec_var]} + {width - 1})")
                    last = ref.index[-1].subst({vec_var: top_cell})
                    checks.append(f"({last.to_c()}) - ({copy.offsets[-1]}) < "
                                  f"{copy.strides[-2]}")
            elif not any(ref.array in self.packed for ref in moving) and \
                    box.vector == stmt.iters.index(vec_var) and box.room is not None:
                # the tile moved down to end at the box's top, over instances (a packed
                # copy's box may start at the tile's box: it would be read below its start)
                shift = True
                room = self.ast_expr(box.room)
                checks.append(f"({lo[vec_var]}) + ({size[vec_var]}) - {width} >= ({room})")
            else:
                return None
        return Padded(stmt, dict(others), lo, size, uses, rows, width, where, checks, shift)

    def _repacked_along(self, ref: Load, var: str) -> bool:
        """``ref`` reads a repacked copy (``repack``) whose innermost dimension is ``var``'s:
        its rows run on past the array's end by the widest register vector, in zeros."""
        copy = self.copy_of(ref)
        if copy is None or copy.buf not in {r.data for r in self.repacks.values()}:
            return False
        return any(sub.vars() == {var} and copy.strides[d] == "1"
                   for d, sub in enumerate(ref.index))

    def padded_rows(self, st: LoopState) -> list[cgen.Generable]:
        """The rows x vector loops of a partial register tile run as a full one."""
        padded = self.padded
        args = [padded.args[v] for v in padded.stmt.iters]
        vec = cgen.For("int64_t pd_v = 0", f"pd_v < {padded.width}", "pd_v++",
                       cgen.Block([self.statement(padded.stmt, args)]))
        rows = cgen.For("int64_t pd_r = 0", f"pd_r < {padded.rows}", "pd_r++",
                        cgen.Block([cgen.Pragma(self.simd_pragma), vec]))
        return [cgen.Pragma("GCC unroll 16"), rows]

    def init_loops(self, st: LoopState, role: str) -> list[cgen.Generable]:
        """Under a promote mark that an init's loops precede, where the tile's statement runs
        as plain code: those loops, first."""
        if role != PROMOTE or self.init is None:
            return []
        init, self.init = self.init, None
        try:
            return self.node(init, st)
        finally:
            self.init = init

    def _init_values(self, cells: list[str]) -> tuple[str, list[str]] | None:
        """With an init fused before the tile (``self.init``): its value at the target cell
        whose subscripts are ``cells`` (C) and the declarations of its iterators there, when
        its subscripts are its iterators plus constants and it reads no copied array;
        else None (its loops then run before the tile)."""
        if self.init is None:
            return None
        names = {u.name for u in ast_users(self.init, self)}
        if len(names) != 1:
            return None
        init = self.scop.statement(names.pop())
        if not isinstance(init.target, Load) or len(init.target.index) != len(cells):
            return None
        values: dict[str, str] = {}
        for sub, cell in zip(init.target.index, cells, strict=True):
            lin = sub.linear()
            if lin is None or len(lin[0]) != 1 or set(lin[0].values()) != {1}:
                return None
            (it,) = lin[0]
            values[it] = f"({cell}) - {lin[1]}"
        reads = {e.array for e in init.value.walk() if isinstance(e, Load)}
        if set(values) != set(init.iters) or len(values) != len(cells) or \
                reads & (set(self.packed) | set(self.promoted)) or \
                any(isinstance(e, Scalar) for e in init.value.walk()):
            return None  # (a local scalar is not in scope at the tile)
        dtype = self.scop.array(init.target.array).dtype
        return (self.cast_to(init.rhs(), dtype),
                [f"const int64_t {it} = {values[it]}" for it in init.iters])

    def _tile_copy(self, assignment: str, rows: int | str, width: int | str,
                   first: int | str = 0, decls: list[str] | tuple[str, ...] = ()
                   ) -> cgen.Generable:
        inner = cgen.For(f"int64_t pd_v = {first}", f"pd_v < {width}", "pd_v++",
                         cgen.Block([*(cgen.Statement(d) for d in decls),
                                     cgen.Statement(assignment)]))
        return cgen.For("int64_t pd_r = 0", f"pd_r < {rows}", "pd_r++",
                        cgen.Block([cgen.Pragma("omp simd"), inner]))


def dtype_bytes(dtype: str) -> int:
    """Bytes of an accumulator's element, as register tiles count them."""
    return 8 if dtype in ("f64", "i64") else 4


def _target_dims(target: Load, row_var: str, vec_var: str) -> list[tuple[int, str]]:
    """``(subscript position, iterator)`` of the target's row and vector subscripts."""
    return [(d, v) for d, sub in enumerate(target.index) for v in (row_var, vec_var)
            if v in sub.vars()]


def _strided_along(value: Expr, var: str) -> bool:
    """Some read in ``value`` moves along ``var`` in a subscript other than its last."""
    return any(isinstance(e, Load) and any(var in sub.vars() for sub in e.index[:-1])
               for e in value.walk())


def _guarded_along(value: Expr, var: str) -> bool:
    """Whether ``value`` holds a load whose subscripts do not use ``var`` under the branches
    of an `a if c else b` whose condition does."""
    for e in value.walk():
        if not isinstance(e, Select):
            continue
        cond_vars = set().union(*(x.aff.vars() if isinstance(x, Index) else
                                  set().union(*(i.vars() for i in x.index))
                                  for x in e.cond.walk() if isinstance(x, Index | Load)))
        if var in cond_vars and any(
                isinstance(x, Load) and var not in set().union(*(i.vars() for i in x.index))
                for branch in (e.a, e.b) for x in branch.walk()):
            return True
    return False


def _mentions_inner(uses: frozenset[str], n: Loop, row_it: str, vec_it: str) -> bool:
    """Whether an iterator's value (the identifiers it ``uses``) depends on loops inside the
    promoted loop other than the tile's rows and vector (then it has no single value at the
    copy-in point)."""
    outer_limit = iterator_depth(n.iterator)
    return any((depth := iterator_depth(c)) is not None and depth >= outer_limit
               for c in uses - {row_it, vec_it})


def mark_role(n: Node) -> str | None:
    """The role of a loop mark, "init" for an init's mark, None for other nodes."""
    return n.role if isinstance(n, MarkNode) else None


def loops_below(n: Node) -> int:
    """The for nodes that ``n`` reaches through blocks and ifs; 2 when it reaches anything
    else (a statement outside a loop)."""
    if isinstance(n, Loop | Collapsed):
        return 1
    if isinstance(n, Block):
        return sum(loops_below(c) for c in n.children)
    if isinstance(n, If):
        return loops_below(n.then) + \
            (loops_below(n.orelse) if n.orelse is not None else 0)
    return 2
