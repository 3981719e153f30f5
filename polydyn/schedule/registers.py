"""Register tiles: their shape (rows x vector bytes of accumulators) and the vector register
files they are planned for. The shapes a CPU takes, with the measurements behind each, are
properties of ``polydyn.target.CpuTarget``; ``auto`` chooses among them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegisterShape:
    """A register tile: ``rows`` rows of ``vector_bytes`` of accumulators (a row per value
    of the rows' member, the vector along the stride-1 member). ``transposed``: the vector
    runs along the member the rows would take (conv's output channels) and the rows along
    the stride-1 one (its output columns); the operands that move along the vector only
    are read from copies with that member innermost (``codegen_c.tiles``)."""

    rows: int
    vector_bytes: int  # at most MAX_REG_VECTOR_BYTES: packed rows are padded to that
    transposed: bool = False

    def width(self, elem: int) -> int:
        return self.vector_bytes // elem


# The vector instruction sets register tiles are planned for: bytes per vector register and
# how many of them there are. ``polydyn.target.host_cpu`` tells which one the C compiler's
# flags give (``-march=native``: the machine's own).
ISAS = {"avx512": (64, 32), "avx2": (32, 16), "sse": (16, 16), "neon": (16, 32)}
# A register tile's vector is two registers wide (two zmm on AVX-512); packed rows are
# padded to the widest (codegen_c.tiles), so one layout serves every target.
MAX_REG_VECTOR_BYTES = 2 * max(v for v, _ in ISAS.values())
