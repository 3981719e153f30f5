"""The CPU the automatic schedule plans for (``CpuTarget``: its vector registers and its L2)
and the shapes of register tiles it picks there (rows x vector bytes of accumulators), with
the measurements behind each; ``auto`` chooses among them."""

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
# how many of them there are. ``codegen_c.toolchain.cpu_target`` tells which one the C
# compiler's flags give (``-march=native``: the machine's own).
ISAS = {"avx512": (64, 32), "avx2": (32, 16), "sse": (16, 16), "neon": (16, 32)}
# A register tile's vector is two registers wide (two zmm on AVX-512); packed rows are
# padded to the widest (codegen_c.tiles), so one layout serves every target.
MAX_REG_VECTOR_BYTES = 2 * max(v for v, _ in ISAS.values())


@dataclass(frozen=True)
class CpuTarget:
    """A CPU as the automatic schedule sees it: vector registers of ``vector_bytes`` bytes,
    ``vector_registers`` of them, and ``l2_bytes`` of L2 per core (cache tiles fill half).

    The register tiles' shapes follow from the registers. Measured on Zen 5 (AVX-512, 32
    zmm) and on Zen 3 (AVX2, 16 ymm) as each property says; the other instruction sets
    (SSE, NEON) take the same rules unmeasured."""

    isa: str
    vector_bytes: int
    vector_registers: int
    l2_bytes: int = 1 << 20

    @staticmethod
    def of(isa: str, l2_bytes: int = 1 << 20) -> CpuTarget:
        vector, count = ISAS[isa]
        return CpuTarget(isa, vector, count, l2_bytes)

    def describe(self) -> str:
        return (f"{self.isa}, {self.vector_registers} vector registers of {self.vector_bytes} "
                f"bytes, {self.l2_bytes // 1024} KiB of L2")

    @property
    def reg_vector_bytes(self) -> int:
        """A register tile's vector: two registers (a row then takes one broadcast and two
        vector FMAs per step, so loads stay under the FMA ports' rate)."""
        return 2 * self.vector_bytes

    @property
    def registers(self) -> RegisterShape:
        """6 rows x two registers (12 accumulators), BLIS's shape on Haswell and its
        successors. Zen 5 (matmul, B packed): best among 4, 6, 8 and 14 rows. Zen 3 (16 ymm):
        6 x 16 f32 ran 1.4-1.6x the 6 x 32 f32 of AVX-512 (24 accumulators: spilled), 4 rows
        0.6-0.8x of 6."""
        return RegisterShape(6, self.reg_vector_bytes)

    @property
    def deep(self) -> RegisterShape:
        """Deep bands (conv): as many rows as the registers hold next to the two vector loads
        and a broadcast (14 of 32 zmm: 28 accumulators), the weights read from a repacked
        copy (codegen_c.tiles.REPACK_MIN_ROWS). Zen 5: 2-21% faster than 6 rows in every
        conv measured, 12 rows below 14 in most (docs/design.md, point 5). With 16
        registers that is 6 rows, the regular shape (Zen 3: conv 1.9-2.6x the 14 x 32 f32
        tiles of AVX-512)."""
        return RegisterShape((self.vector_registers - 4) // 2, self.reg_vector_bytes)

    @property
    def channels(self) -> RegisterShape:
        """Deep bands (conv) with many output channels: the ``deep`` shape transposed, the
        vector along the output channels, a row per output column. Output widths then
        waste no lanes (54 columns took 64 lanes of 16-lane vectors: 84% useful, 26 took
        32), and the channels (64, 128, ...) fill whole vectors. The accumulators are
        copied in and out across the vector (strided), so the reduction must be long
        (``CHANNELS_MIN_REDUCTION``)."""
        return RegisterShape(self.deep.rows, self.reg_vector_bytes, transposed=True)

    @property
    def narrow(self) -> tuple[tuple[int, RegisterShape], ...]:
        """Deep bands (conv) whose vector loop (output columns) is too short for the regular
        vector (images under 34 x 34 for 3 x 3 f32 windows on AVX-512) ran plain loops.
        Narrower tiers, by the vector member's extent in bytes (at least that many): rows
        (output channels) of one register, then of half and quarter registers down to
        16 bytes; untiled code (``partition``'s ``vectorW``). Zen 5, 2 threads, against the
        plain loops: (8, 64, 64, 28) 6.3x, (2, 64, 64, 16) 13x, (1, 64, 64, 9) 11x; 16 rows
        beat 8, 12, 24 and 28 (12: 0.9x, 24: spills). With 16 registers: 12 rows beside a
        load and a broadcast (not measured there)."""
        rows = min(16, self.vector_registers - 4)
        return tuple((w, RegisterShape(rows, w)) for w in self._narrow_widths())

    @property
    def narrow_rows(self) -> tuple[tuple[int, RegisterShape], ...]:
        """The same for a packed band (matmul) whose vector loop (M) is shorter than the
        regular vector: the untiled code's last partial vector tile cannot move down to end
        at the row's end, so the whole row ran plain loops (Zen 5, 31^3: 6.7 GFLOP/s against
        NumPy's 28). 8 rows of one register or less."""
        return tuple((w, RegisterShape(8, w)) for w in self._narrow_widths())

    def _narrow_widths(self) -> list[int]:
        widths, w = [], self.vector_bytes
        while w >= 16:
            widths.append(w)
            w //= 2
        return widths


# The plan where no target is given (the OpenCL target's partition, direct calls of the
# schedule's functions): the machine most measurements here were made on.
AVX512 = CpuTarget.of("avx512")
