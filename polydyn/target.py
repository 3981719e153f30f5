"""The machine code is generated for: a ``CpuTarget`` (target "c": the vector registers the C
compiler's flags enable, the caches, the cores) or a ``GpuTarget`` (target "opencl": the
OpenCL device's limits), and the probes that describe this machine and its devices.

``resolve_target`` turns the target names of ``pd.compile`` ("c", "opencl") into one of them,
once, at the top of the pipeline; every stage after it reads what it needs from that value.
Probing lives here alone: the C toolchain only compiles and links.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .errors import CompileError, UnsupportedError
from .options import Options
from .schedule.registers import ISAS, RegisterShape

TARGETS = ("c", "opencl")


@dataclass(frozen=True)
class CpuTarget:
    """A CPU as the automatic schedule sees it: vector registers of ``vector_bytes`` bytes,
    ``vector_registers`` of them, ``l1_bytes`` of L1 data cache and ``l2_bytes`` of L2 per
    core (cache tiles fill half of the L2), ``cores`` the process may run on. The schedule
    reads the registers and the L2; ``describe()``, which the generated C quotes, names
    those alone (the L1 and the cores change no generated code).

    The register tiles' shapes follow from the registers. Measured on Zen 5 (AVX-512, 32
    zmm) and on Zen 3 (AVX2, 16 ymm) as each property says; the other instruction sets
    (SSE, NEON) take the same rules unmeasured."""

    isa: str
    vector_bytes: int
    vector_registers: int
    l2_bytes: int = 1 << 20
    l1_bytes: int = 1 << 15
    cores: int = 1
    kind: ClassVar[str] = "c"

    @staticmethod
    def of(isa: str, l2_bytes: int = 1 << 20, *, l1_bytes: int = 1 << 15,
           cores: int = 1) -> CpuTarget:
        """The plan for instruction set ``isa`` (a key of ``registers.ISAS``)."""
        if isa not in ISAS:
            raise UnsupportedError(f"unknown instruction set isa={isa!r} (POLYDYN_ISA); "
                                   f"choose one of {', '.join(ISAS)}")
        if l2_bytes < 1 << 14:
            raise UnsupportedError(f"l2_bytes={l2_bytes} (POLYDYN_L2_BYTES): expected at "
                                   "least 16384")
        vector, count = ISAS[isa]
        return CpuTarget(isa, vector, count, l2_bytes, l1_bytes, cores)

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
        successors; it fits 16 registers as well as 32 (bench/HISTORY.md, points 0 and 5)."""
        return RegisterShape(6, self.reg_vector_bytes)

    @property
    def deep(self) -> RegisterShape:
        """Deep bands (conv): as many rows as the registers hold next to the two vector loads
        and a broadcast (14 of 32 zmm: 28 accumulators), the weights read from a repacked
        copy (codegen_c.tiles.REPACK_MIN_ROWS). With 16 registers that is 6 rows, the
        regular shape (bench/HISTORY.md, point 5)."""
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
        16 bytes; untiled code (``partition``'s ``vectorW``); 16 rows, or 12 with 16
        registers (beside a load and a broadcast). Figures: bench/HISTORY.md, point 5."""
        rows = min(16, self.vector_registers - 4)
        return tuple((w, RegisterShape(rows, w)) for w in self._narrow_widths())

    @property
    def narrow_rows(self) -> tuple[tuple[int, RegisterShape], ...]:
        """The same for a packed band (matmul) whose vector loop (M) is shorter than the
        regular vector: the untiled code's last partial vector tile cannot move down to end
        at the row's end, so the whole row would run plain loops. 8 rows of one register or
        less."""
        return tuple((w, RegisterShape(8, w)) for w in self._narrow_widths())

    def _narrow_widths(self) -> list[int]:
        widths, w = [], self.vector_bytes
        while w >= 16:
            widths.append(w)
            w //= 2
        return widths


# The plan where no CPU is given (the OpenCL target's partition, direct calls of the
# schedule's functions): the machine most measurements here were made on.
AVX512 = CpuTarget.of("avx512")


@dataclass(frozen=True)
class GpuTarget:
    """An OpenCL device as the mapping sees it: ``max_group`` work-items per work-group (the
    device's limit, at most 1024), ``local_mem_bytes`` of local memory per group,
    ``compute_units``, ``is_gpu`` (False for a CPU device such as PoCL's), the preferred
    float vector width, and the width work-items run in lock step (NVIDIA's warp, AMD's
    wavefront) where the driver says. The mapping reads ``max_group``; the generated code
    is a function of the operator, the options and that limit alone."""

    name: str = "OpenCL device"
    max_group: int = 1024
    local_mem_bytes: int = 1 << 15
    compute_units: int = 1
    is_gpu: bool = True
    vector_width: int = 1
    sub_group_width: int | None = None
    kind: ClassVar[str] = "opencl"

    @staticmethod
    def of_device(device: Any) -> GpuTarget:
        """The limits of a pyopencl Device."""
        import pyopencl as cl

        return GpuTarget(
            name=device.name.strip(),
            max_group=int(min(device.max_work_group_size, 1024)),
            local_mem_bytes=int(device.local_mem_size),
            compute_units=int(device.max_compute_units),
            is_gpu=bool(device.type & cl.device_type.GPU),
            vector_width=int(device.preferred_vector_width_float),
            sub_group_width=_lock_step_width(device))

    def describe(self) -> str:
        lanes = f", {self.sub_group_width}-wide sub-groups" if self.sub_group_width else ""
        return (f"{self.name}: work-groups of at most {self.max_group}, "
                f"{self.local_mem_bytes // 1024} KiB of local memory, {self.compute_units} "
                f"compute units{lanes}")


Target = CpuTarget | GpuTarget


def resolve_target(target: str | Target, options: Options, device: Any = None) -> Target:
    """The machine ``target`` names: "c" the CPU of ``host_cpu(options)``, "opencl" the
    device ``device`` selects (``opencl_device``); a Target is itself."""
    if isinstance(target, CpuTarget | GpuTarget):
        return target
    if target == "c":
        return host_cpu(options)
    if target == "opencl":
        return opencl_device(device)
    raise UnsupportedError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)} "
                           "or give a polydyn.target.CpuTarget or GpuTarget")


def host_cpu(options: Options) -> CpuTarget:
    """The CPU the C schedule plans for: ``options.isa`` and ``options.l2_bytes``, or what
    the C compiler's flags enable (``-march=native``: this machine's) and this machine's L2;
    this machine's L1 and the CPUs this process may run on."""
    isa = options.isa or compiler_isa(options.cc, options.all_cflags)
    l2 = options.l2_bytes or host_cache_bytes(2)
    return CpuTarget.of(isa, l2, l1_bytes=host_cache_bytes(1), cores=host_cores())


def opencl_device(device: Any = None) -> GpuTarget:
    """The limits of the OpenCL device ``device`` selects (a pyopencl Device, Context or
    CommandQueue; None: the default, ``runtime.opencl.resolve_device``)."""
    from .runtime.opencl import resolve_device

    return GpuTarget.of_device(resolve_device(device).device)


@functools.lru_cache(maxsize=8)
def compiler_isa(cc: str, flags: tuple[str, ...]) -> str:
    """The widest vector instruction set (a key of ``registers.ISAS``) that ``cc`` with
    ``flags`` compiles for, from its predefined macros; "sse" (16-byte vectors, 16
    registers) where it names none of them."""
    try:
        out = subprocess.run([cc, *flags, "-dM", "-E", "-x", "c", "/dev/null"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CompileError(f"C compiler {cc!r} is not usable: {exc}") from None
    macros = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    for macro, isa in (("__AVX512F__", "avx512"), ("__AVX2__", "avx2"), ("__AVX__", "avx2"),
                       ("__ARM_NEON", "neon")):
        if macro in macros:
            return isa
    return "sse"


# glibc's getconf names, and what to assume where neither it nor Linux says
_GETCONF = {1: "LEVEL1_DCACHE_SIZE", 2: "LEVEL2_CACHE_SIZE"}
_ASSUMED = {1: 1 << 15, 2: 1 << 20}


@functools.lru_cache(maxsize=2)
def host_cache_bytes(level: int) -> int:
    """This machine's data (or unified) cache of ``level`` (1 or 2) per core, from Linux's
    cache description or glibc's ``getconf`` (32 KiB of L1, 1 MiB of L2 where neither
    says)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() != str(level) or \
                    (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit() and int(digits) > 0:
            return int(digits) * scale
    try:
        out = subprocess.run(["getconf", _GETCONF[level]], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return int(out) if out.isdigit() and int(out) > 0 else _ASSUMED[level]


def host_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _lock_step_width(device: Any) -> int | None:
    """NVIDIA's warp or AMD's wavefront width, where the driver has the extension."""
    for attribute in ("warp_size_nv", "wavefront_width_amd"):
        try:
            return int(getattr(device, attribute))
        except Exception:  # pyopencl raises LogicError or AttributeError where absent
            continue
    return None


__all__ = ["AVX512", "TARGETS", "CpuTarget", "GpuTarget", "Target", "compiler_isa",
           "host_cache_bytes", "host_cores", "host_cpu", "opencl_device", "resolve_target"]
