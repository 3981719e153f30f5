"""The target machine (polydyn.target): the CPU the C schedule plans for and the OpenCL device
the mapping plans for, named by a string ("c", "opencl") or given as a CpuTarget or
GpuTarget; the probes of this machine; what a target changes (the generated code, the cache
entry)."""

from __future__ import annotations

import math
import os

import pytest

import polydyn as pd
from kernels import load
from polydyn.options import Options
from polydyn.pipeline import generate
from polydyn.runtime.opencl import opencl_available
from polydyn.schedule.registers import ISAS
from polydyn.target import (
    AVX512,
    CpuTarget,
    GpuTarget,
    compiler_isa,
    host_cache_bytes,
    host_cores,
    host_cpu,
    opencl_device,
    resolve_target,
)

needs_opencl = pytest.mark.skipif(not opencl_available(), reason="no OpenCL platform")


@pytest.mark.parametrize(("march", "isa"), [("x86-64", "sse"), ("x86-64-v3", "avx2"),
                                            ("skylake-avx512", "avx512")])
def test_cpu_target_follows_the_compiler_flags(march, isa) -> None:
    """The register tiles are planned for what the C compiler's flags enable (the default
    ``-march=native``: this machine's); ``isa`` and ``l2_bytes`` override it."""
    flags = ("-O3", f"-march={march}")
    assert compiler_isa("cc", flags) == isa
    target = host_cpu(Options(cflags=flags, isa=None, l2_bytes=1 << 19))
    assert (target.isa, target.l2_bytes) == (isa, 1 << 19)
    assert target.registers.vector_bytes == 2 * {"sse": 16, "avx2": 32, "avx512": 64}[isa]
    chosen = host_cpu(Options(cflags=flags, isa="avx512", l2_bytes=1 << 20))
    assert (chosen.isa, chosen.vector_bytes, chosen.vector_registers, chosen.l2_bytes) == \
        (AVX512.isa, AVX512.vector_bytes, AVX512.vector_registers, AVX512.l2_bytes)


def test_host_cpu_probe_is_sane() -> None:
    """This machine as the probes see it: a known instruction set, caches of plausible
    sizes, the CPUs this process may use."""
    cpu = host_cpu(Options(isa=None, l2_bytes=None))
    assert cpu.isa in ISAS and (cpu.vector_bytes, cpu.vector_registers) == ISAS[cpu.isa]
    assert 4 << 10 <= cpu.l1_bytes <= 1 << 20
    assert 64 << 10 <= cpu.l2_bytes <= 64 << 20 and cpu.l2_bytes >= cpu.l1_bytes
    assert (cpu.l1_bytes, cpu.l2_bytes) == (host_cache_bytes(1), host_cache_bytes(2))
    assert 1 <= cpu.cores == host_cores() <= (os.cpu_count() or 1)
    assert cpu.kind == "c" and cpu.describe().startswith(f"{cpu.isa}, ")
    assert resolve_target("c", Options(isa=None, l2_bytes=None)) == cpu


def test_string_and_object_targets_generate_the_same_source() -> None:
    """target="c" under options and the CpuTarget those options name generate the same
    files; an object target is taken as it is (the options' isa does not apply to it)."""
    op = load("bias_relu")[0]
    by_name = generate(op, "c", isa="sse", l2_bytes=1 << 19)
    sse = CpuTarget.of("sse", 1 << 19)
    assert generate(op, sse).sources == by_name.sources
    assert generate(op, sse, isa="avx512").sources == by_name.sources
    host = host_cpu(Options())
    assert generate(op, "c").sources == generate(op, host).sources


def test_another_isa_changes_the_code_and_the_cache_entry() -> None:
    """A CpuTarget of another instruction set (the replay check's SSE plan) plans other
    register tiles, and its kernel is another cache entry: no library built for one target
    serves the other."""
    matmul = load("matmul")[0]
    sse, wide = CpuTarget.of("sse"), AVX512

    def code(target: CpuTarget) -> str:  # the source without the line naming the plan
        return "\n".join(x for x in generate(matmul, target).source.splitlines()
                         if "planned for" not in x)

    assert code(sse) != code(wide)

    op = load("bias_relu")[0]
    host = host_cpu(Options())
    other = CpuTarget.of("sse" if host.isa != "sse" else "avx512")
    k_host, k_other = pd.compile(op), pd.compile(op, target=other)
    assert (k_host.target, k_other.target) == ("c", "c")
    assert (k_host.machine, k_other.machine) == (host, other)
    assert f"Tiles planned for: {other.describe()}." in k_other.header
    assert k_host.source != k_other.source
    assert k_host.library != k_other.library  # keyed by the source, which names the plan


def test_unknown_targets_are_refused() -> None:
    with pytest.raises(pd.UnsupportedError, match="unknown target 'cuda'; choose one of c, "
                                                  "opencl"):
        pd.compile(load("bias_relu")[0], target="cuda")
    with pytest.raises(pd.UnsupportedError, match="POLYDYN_ISA"):
        CpuTarget.of("avx3")


def test_gpu_target_limits_reach_the_mapping() -> None:
    """The OpenCL mapping plans for the GpuTarget's work-group limit, with or without a
    device (nothing is built)."""
    op = load("softmax")[0]
    for limit in (1024, 64):
        program = generate(op, GpuTarget(max_group=limit)).program
        sizes = [math.prod(info.local_size) for info in program.infos]
        assert sizes and max(sizes) <= limit
    assert max(math.prod(i.local_size) for i in program.infos) == 64  # the row groups shrank


@needs_opencl
def test_gpu_target_of_the_opencl_device() -> None:
    """The default device's limits (PoCL's CPU device here), as the mapping sees them, and
    a kernel compiled for "opencl" carries them."""
    import pyopencl as cl

    from polydyn.runtime.opencl import resolve_device

    device = resolve_device().device
    gpu = opencl_device()
    assert gpu == GpuTarget.of_device(device) == resolve_target("opencl", Options())
    assert gpu.kind == "opencl" and gpu.name == device.name.strip()
    assert gpu.max_group == min(device.max_work_group_size, 1024)
    assert gpu.local_mem_bytes == device.local_mem_size > 0 and gpu.compute_units >= 1
    assert gpu.is_gpu == bool(device.type & cl.device_type.GPU)
    assert gpu.vector_width >= 1 and gpu.name in gpu.describe()

    op = load("bias_relu")[0]
    assert generate(op, "opencl").sources == generate(op, gpu).sources
    kernel = pd.compile(op, target="opencl")
    assert (kernel.target, kernel.machine) == ("opencl", gpu)
