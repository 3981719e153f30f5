"""The flat schedule of a register-tiled kernel's work-group (regtiles.py): one map per kind of
statement into ``[outer, phase, seq, tile, slot, below .., m_r, m_c]``, widened so that whole
reduction tiles and whole blocks get loops of their own, and isl's AST build options for it.

The copies into local memory come first in their reduction tile (slot 0), the statements
next (slot 1); with two buffers per copy the copies come a tile early and a ``PDSYNC``
statement (slot 2) ends every tile: after its barrier the buffer just filled is the one the
next tile reads. The accumulators' loads and stores are the phases before (0) and after (2).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..astgen import new_build
from .promotion import SYNC, maps


@dataclass(frozen=True)
class Layout:
    """The flat schedule's dimensions: ``n_pre - 2`` outer values, the phase, ``d``
    sequence positions, the reduction tile, the slot (copies 0, statements 1), the
    ``n_sub - d`` dimensions below, then ``m_r`` and ``m_c``."""

    n_pre: int
    n_sub: int
    d: int
    seq: int
    bk: int

    @property
    def n_dims(self) -> int:
        return self.n_pre + self.n_sub + 3

    def _map(self, ins: list[str], outer: list[str], phase: int, seq: list[str], tile: str,
             slot: int, below: list[str], cell: list[str]) -> str:
        out = [*outer, str(phase), *seq, tile, str(slot), *below, *cell]
        return f"[{', '.join(ins)}] -> [{', '.join(out)}]"

    def statements(self) -> isl.UnionMap:
        """``{ [p.., b..] -> flat }`` for the kernel's statements."""
        p = [f"p{j}" for j in range(self.n_pre)]
        b = [f"b{j}" for j in range(self.n_sub)]
        tile = f"{self.bk} * floor(({b[self.d]}) / {self.bk})"
        return isl.UnionMap("{ " + self._map(p + b, p[:-2], 1, b[:self.d], tile, 1,
                                             b[self.d:], p[-2:]) + " }")

    def cell_statement(self, cells: isl.Set, phase: int) -> isl.Map:
        """``{ PDACC..[p..] -> flat }`` before (phase 0) or after (2) everything else."""
        p = [f"p{j}" for j in range(self.n_pre)]
        text = self._map(p, p[:-2], phase, ["0"] * self.d, "0", 0,
                         ["0"] * (self.n_sub - self.d), p[-2:])
        return isl.Map("{ " + cells.get_tuple_name() + text + " }").intersect_domain(cells)

    def build(self, kctx: isl.Set) -> isl.AstBuild:
        """isl's AST build for the wide schedule: one loop over the reduction tiles (atomic:
        isl would otherwise peel the last, partial tile, and the copies' barriers would
        stand under its condition)."""
        xs = [f"x{j}" for j in range(self.n_dims + 4)]
        tile = self.n_pre + self.d - 1
        return new_build(kctx).set_options(isl.UnionMap(
            f"{{ [{', '.join(xs)}] -> atomic[{tile}] }}"))

    def widen(self, statements: isl.UnionMap, k_r: int, k_c: int, bm: int, bn: int,
              speculate: bool = False) -> isl.UnionMap:
        """``{ flat -> wide }``: the flat schedule with two scalar dimensions after the slot,
        ``whole_r`` (0 where the reduction tile ends at or before its last value) and
        ``whole_b`` (0 where the group's block is whole for every statement of the tile),
        and the rows and columns twice: a statement instance with both 0 has them in the last
        two dimensions (``free``: the emitter prints no guard), every other instance (partial
        tiles, the copies, the cells) in the two before them. Both are functions of the tile
        (``outer, phase, seq, tile``; ``whole_r`` is monotone in it), so the wide schedule
        orders the instances as the flat one does, and isl gives each whole tile's loops
        bounds without ``min``/``max``: a reduction loop of ``bk`` points, register loops over
        the whole block (PPCG's full/partial tile separation, here as a schedule, not an AST
        option, so that no barrier falls under a condition). ``statements``: ``{ S -> flat
        }`` of the group's instances. With ``speculate`` (``_speculative``) every block counts
        as whole and partial reduction tiles run free too: the register loops run every
        point, those outside the domain on stale local-memory values into registers that are
        never stored."""
        n, key_n = self.n_dims, self.n_pre + self.d
        xs = [f"x{j}" for j in range(n)]
        key = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs[:key_n])}] }}")
        kr, kc = f"pd_o{k_r} + {bm} * pd_g{k_r}", f"pd_o{k_c} + {bn} * pd_g{k_c}"
        box = isl.Set(f"[pd_o{k_r}, pd_g{k_r}, pd_o{k_c}, pd_g{k_c}] -> {{ [{', '.join(xs)}] : "
                      f"{kr} <= {xs[-2]} < {kr} + {bm} and {kc} <= {xs[-1]} < {kc} + {bn} }}")
        images: list[isl.Set] = [m.range() for m in maps(statements)]
        every = images[0]
        for image in images[1:]:
            every = every.union(image)
        keys = every.apply(key)
        holes = keys.subtract(keys)
        for image in [] if speculate else images:
            near = image.project_out(isl.dim_type.set, n - 2, 2).insert_dims(
                isl.dim_type.set, n - 2, 2)
            near = near.intersect(box.align_params(near.get_space()))
            holes = holes.union(near.subtract(image.align_params(near.get_space())).apply(key))
        whole_block = keys.subtract(holes)
        # tiles that end at or before the last reduction value of their (outer, seq)
        r = xs[key_n + 1]
        ends = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs[:key_n - 1])}, t] : "
                       f"exists e : t = {self.bk} e and t + {self.bk - 1} <= {r} }}")
        whole_r = keys.intersect(every.apply(ends))
        slot = isl.Set(f"{{ [{', '.join(xs)}] : {xs[key_n]} = 1 }}")
        out = None
        for full_r, rows in ((0, whole_r), (1, keys.subtract(whole_r))):
            for full_b, block in ((0, whole_block), (1, keys.subtract(whole_block))):
                free = full_b == 0 and (full_r == 0 or speculate)
                cells = ["0", "0", *xs[-2:]] if free else [*xs[-2:], "0", "0"]
                wide = [*xs[:key_n + 1], str(full_r), str(full_b), *xs[key_n + 1:-2], *cells]
                m = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(wide)}] }}")
                where = key.intersect_range(rows.intersect(block)).domain().intersect(slot)
                m = m.align_params(where.get_space()).intersect_domain(where)
                out = m if out is None else out.union(m)
        # the copies (slot 0) and the cells (other phases): in place, the cells guarded
        rest = key.intersect_range(keys).domain().intersect(slot)
        rest = isl.Set.universe(rest.get_space()).subtract(rest)
        wide = [*xs[:key_n + 1], "0", "0", *xs[key_n + 1:-2], *xs[-2:], "0", "0"]
        m = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(wide)}] }}")
        m = m.align_params(rest.get_space()).intersect_domain(rest)
        return isl.UnionMap.from_map(out).union(isl.UnionMap.from_map(m))

    def copy_statement(self, tiles: isl.Set, ahead: int = 0) -> isl.Map:
        """``{ PDCOPY_A[outer.., kt] -> flat }``: first in each reduction tile, or (``ahead``
        = ``bk``, two buffers) first in the tile before, while that one is computed."""
        u = [f"u{j}" for j in range(self.n_pre - 1)]
        text = self._map(u, u[:-1], 1, [str(self.seq)] * self.d, f"{u[-1]} - {ahead}", 0,
                         ["0"] * (self.n_sub - self.d), ["0", "0"])
        return isl.Map("{ " + tiles.get_tuple_name() + text + " }").intersect_domain(tiles)

    def sync_statement(self, footprints: list[isl.Set], statements: isl.UnionMap,
                       ahead: int) -> isl.Map:
        """``{ PDSYNC[outer.., kt] -> flat }``: last in each reduction tile, the barrier
        after which the buffers swap (two buffers). Its tiles are the hull of those that
        copy (the copies' tiles ``ahead`` before theirs) or compute, so that it stands in
        every iteration of the tiles' loop, under no condition."""
        u = [f"u{j}" for j in range(self.n_pre - 1)]
        tile = f"{u[-1]} - {ahead}"
        shift = isl.Map(f"{{ [{', '.join(u)}] -> [{', '.join([*u[:-1], tile])}] }}")
        seq = [f"s{j}" for j in range(self.d)]
        rest = [f"r{j}" for j in range(self.n_dims - len(u) - 1 - self.d)]
        flat = [*u[:-1], "1", *seq, u[-1], *rest]
        same = " and ".join(f"{v} = {self.seq}" for v in seq) or "true"
        band = isl.Map(f"{{ [{', '.join(flat)}] -> [{', '.join(u)}] : {same} }}")
        tiles = None
        for m in maps(statements):
            own = m.range().apply(band.align_params(m.range().get_space()))
            tiles = own if tiles is None else tiles.union(own)
        for fp in footprints:
            own = fp.reset_tuple_id()
            tiles = tiles.union(own.apply(shift.align_params(own.get_space())))
        stride = isl.Set(f"{{ [{', '.join(u)}] : exists e : {u[-1]} = {self.bk} e }}")
        tiles = isl.Set.from_basic_set(tiles.simple_hull()).intersect(
            stride.align_params(tiles.get_space()))
        text = self._map(u, u[:-1], 1, [str(self.seq)] * self.d, u[-1], 2,
                         ["0"] * (self.n_sub - self.d), ["0", "0"])
        return isl.Map("{ " + SYNC + text + " }").intersect_domain(tiles.set_tuple_name(SYNC))


__all__ = ["Layout"]
