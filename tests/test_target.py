"""The target machine (polydyn.target): the CPU the C schedule plans for, and the probes of
this machine."""

from __future__ import annotations

import pytest

from polydyn.options import Options
from polydyn.target import AVX512, compiler_isa, host_cpu


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
