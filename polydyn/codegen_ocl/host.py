"""The OpenCL host code, as Python source: variant selection and each variant's launches.

Printed once at compile time from the mapping (every bound is an isl expression printed by
``pyexpr``) and compiled with ``exec`` by the runtime, so a call evaluates a few integer
expressions and enqueues kernels; nothing of isl runs per call. The text is also what
``Kernel.host_source`` shows.

    def select(N, K, M):                 # the C dispatcher's logic, on the host
        if not (context): return -1
        if region_0: return 0
        ...
    def variant_0(_launch, N, K, M):
        if when:                          # the kernel has work for these sizes
            _o = (lo_0, lo_1)             # first value of each mapped member
            _launch(0, (), _o, ((hi_0 - _o[0]) // 16 + 1, ...))   # host values, groups
        for pd_h0 in range(lo, hi + 1, step):  # a host loop (a sequential member)
            ...
"""

from __future__ import annotations

from typing import Any

import islpy as isl

from ..astgen import condition_expr
from ..scop.ir import Scop
from .plan import HOST, HostLoop, KernelSpec, VariantMapping
from .pyexpr import ast_to_py
from .scalars import SpilledScalar


def region_test(region: isl.Set) -> str:
    if region.is_params() and region.plain_is_universe():
        return "True"
    return ast_to_py(condition_expr(region))


def select_source(scop: Scop, mappings: list[VariantMapping]) -> list[str]:
    args = ", ".join(scop.syms)
    lines = [f"def select({args}):",
             f"    if not {region_test(scop.context)}:",
             "        return -1"]
    for k, m in enumerate(mappings):
        lines.append(f"    if {region_test(m.variant.region.gist(scop.context))}:")
        lines.append(f"        return {k}")
    lines.append("    return -1")
    return lines


def variant_source(scop: Scop, index: int, mapping: VariantMapping,
                   kernel_ids: dict[str, int]) -> list[str]:
    lines = [f"def variant_{index}(_launch, {', '.join(scop.syms)}):".replace("(_launch, )",
                                                                              "(_launch)")]
    body = _items(mapping.host, 1, kernel_ids)
    return lines + (body or ["    pass"])


def _items(items: tuple[Any, ...], depth: int, kernel_ids: dict[str, int]) -> list[str]:
    pad = "    " * depth
    out: list[str] = []
    for item in items:
        if isinstance(item, HostLoop):
            out.append(f"{pad}if {item.when}:")
            step = f", {item.step}" if item.step != 1 else ""
            out.append(f"{pad}    for {item.var} in range({item.lo}, {item.hi} + 1{step}):")
            out.extend(_items(item.body, depth + 2, kernel_ids) or [f"{pad}        pass"])
        else:
            out.extend(_launch(item, pad, kernel_ids))
    return out


def _launch(spec: KernelSpec, pad: str, kernel_ids: dict[str, int]) -> list[str]:
    kid = kernel_ids[spec.name]
    hosts = "".join(f"{HOST}{j}, " for j in range(spec.n_host))
    out = [f"{pad}if {spec.when}:"]
    if spec.grid is None:
        out.append(f"{pad}    _launch({kid}, ({hosts}), (), (1,))")
        return out
    offsets = "".join(f"{lo}, " for lo in spec.grid.lo)
    out.append(f"{pad}    _o = ({offsets})")
    choices = [spec, *spec.alternatives]
    for n, choice in enumerate(choices):  # the first whose groups fill the device
        if n + 1 < len(choices):
            count = " * ".join(f"({e})" for e in _groups(choice))
            out.append(f"{pad}    {'if' if n == 0 else 'elif'} {count} >= _UNITS:")
        elif n:
            out.append(f"{pad}    else:")
        out += _enqueue(choice, pad + "    " * (2 if len(choices) > 1 else 1), hosts,
                        kernel_ids)
    return out


def _groups(spec: KernelSpec) -> list[str]:
    """Python expressions: the launch's work-groups along each mapped member."""
    g = spec.grid
    return [f"({hi} - _o[{k}]) // {t} + 1"
            for k, (hi, t) in enumerate(zip(g.hi, g.tiles, strict=True))]


def _enqueue(spec: KernelSpec, pad: str, hosts: str, kernel_ids: dict[str, int]) -> list[str]:
    kid = kernel_ids[spec.name]
    groups = "".join(f"{e}, " for e in _groups(spec))
    if spec.fallback is None:
        return [f"{pad}_launch({kid}, ({hosts}), _o, ({groups}))"]
    # __local buffers sized at launch; the plain kernel when they do not fit
    sizes = "".join(f"{c.bytes_py()}, " for c in spec.dynamic_local)
    return [f"{pad}if {spec.local_bytes_py()} <= _LOCAL_LIMIT:",
            f"{pad}    _launch({kid}, ({hosts}), _o, ({groups}), ({sizes}))",
            f"{pad}else:",
            f"{pad}    _launch({kernel_ids[spec.fallback.name]}, ({hosts}), _o, ({groups}))"]


def host_source(scop: Scop, mappings: list[VariantMapping],
                spilled: list[SpilledScalar] = ()) -> str:
    """``select``, ``spill_sizes`` (elements of each spilled scalar's buffer) and
    ``variant_<k>`` for every variant; kernels are numbered in the order of
    ``all_kernels(mappings)``."""
    kernel_ids = {k.name: n for n, k in enumerate(all_kernels(mappings))}
    sizes = "".join(f"{sc.elements_py}, " for sc in spilled)
    parts = ["\n".join(select_source(scop, mappings)),
             f"def spill_sizes({', '.join(scop.syms)}):\n    return ({sizes})"]
    for k, m in enumerate(mappings):
        parts.append("\n".join(variant_source(scop, k, m, kernel_ids)))
    return "\n\n\n".join(parts) + "\n"


def all_kernels(mappings: list[VariantMapping]) -> list[KernelSpec]:
    """Every kernel of the program, fallbacks and alternatives included, in id order."""
    return [x for m in mappings for k in m.kernels for x in k.family()]
