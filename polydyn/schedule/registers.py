"""The shapes of register tiles the automatic schedule picks (rows x vector bytes of
accumulators), with the measurements behind each; ``auto`` chooses among them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegisterShape:
    """A register tile: ``rows`` rows of ``vector_bytes`` of accumulators (a row per value
    of the rows' member, the vector along the stride-1 member)."""

    rows: int
    vector_bytes: int  # at most REG_VECTOR_BYTES: packed rows are padded to that

    def width(self, elem: int) -> int:
        return self.vector_bytes // elem


# The widest register vector (two zmm registers), and the shape of register tiles: 6 x 2
# zmm of f32 on AVX-512, 12 of the 32 vector registers (matmul with B packed: best among
# 4, 6, 8 and 14 rows on Zen 5).
REG_VECTOR_BYTES = 128
REGISTERS = RegisterShape(6, REG_VECTOR_BYTES)
# Deep bands (conv): 14 rows of 2 zmm (28 accumulators), the weights read from a repacked
# copy (codegen_c.tiles.REPACK_MIN_ROWS); 2-21% faster than 6 rows in every conv measured,
# 12 rows below 14 in most (docs/design.md, point 5).
DEEP_REGISTERS = RegisterShape(14, REG_VECTOR_BYTES)

# Deep bands (conv) whose vector loop (output columns) is too short for REGISTERS' vector
# (images under 34 x 34 for 3 x 3 f32 windows) ran plain loops. Narrower tiers, by the
# vector member's extent in bytes: 16 rows (output channels) of one zmm, ymm or xmm
# register; untiled code (``partition``'s ``vectorW``). Measured with 2 threads against
# the plain loops: (8, 64, 64, 28) 6.3x, (2, 64, 64, 16) 13x, (1, 64, 64, 9) 11x; 16 rows
# beat 8, 12, 24 and 28 (12: 0.9x, 24: spills).
NARROW_REGISTERS = ((64, RegisterShape(16, 64)), (32, RegisterShape(16, 32)),
                    (16, RegisterShape(16, 16)))
# The same for a packed band (matmul) whose vector loop (M) is shorter than 32 f32: the
# untiled code's last partial vector tile cannot move down to end at the row's end, so
# the whole row ran plain loops (31^3: 6.7 GFLOP/s against NumPy's 28).
NARROW_ROW_REGISTERS = ((64, RegisterShape(8, 64)), (32, RegisterShape(8, 32)),
                        (16, RegisterShape(8, 16)))
