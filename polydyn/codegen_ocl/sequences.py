"""Kernels over the work-groups of many sequences, for ragged operators (SPEC section 7):
each kernel that runs with no host loop around it gets a twin that runs, in one launch, that
kernel for many sequences at once, each with its own sizes. The launch's work-groups are those
of all its sequences one after another along OpenCL dimension 0: row ``f`` of
``pd_group_table`` names the sequence of group ``f`` and that group's id along each dimension
in its sequence's own grid; the sequence's row of ``pd_seq_table`` holds, in the order of
``runtime/ocl_sequences.py``, the values of the syms (the ragged extent its length), the
offsets and the work-group counts of the mapped members, and each array's element offset in
the batch's values. The twin reads both rows and runs the kernel's own body: the rows' values
stand in for the kernel's scalar parameters and group ids under the same names, and the array
pointers move to the sequence's blocks. Every group of the launch has its work, so no group
leaves early (a barrier after a return is what PoCL runs wrong).
"""

from __future__ import annotations

from dataclasses import replace

import cgen

from ..runtime.ocl_sequences import GROUP_ROW, SUFFIX
from ..scop.ir import Scop
from .plan import OFFSET, KernelSpec, VariantMapping


def has_twin(spec: KernelSpec) -> bool:
    """Whether ``spec`` gets a twin over sequences: no host loop values."""
    return spec.n_host == 0


def twins(mappings: list[VariantMapping]) -> list[tuple[VariantMapping, KernelSpec]]:
    """The kernels with a twin, in the order of their ids (after every other kernel)."""
    return [(m, x) for m in mappings for k in m.kernels for x in k.family() if has_twin(x)]


def twin_spec(spec: KernelSpec) -> KernelSpec:
    """``spec`` under its twin's name (the emitter prints the twin from it)."""
    return replace(spec, name=spec.name + SUFFIX)


def group_var(d: int) -> str:
    """The twin's group id along OpenCL dimension ``d`` in its sequence's grid."""
    return f"pd_sg{d}"


def prologue(scop: Scop, spec: KernelSpec, sym_names: list[str]) -> list[cgen.Generable]:
    """The twin's first statements: its group's row of the group table and its sequence's
    row of the sequence table, the group ids (``group_var``), the rows' values under the
    names of the kernel's scalar parameters (``sym_names``: the syms' names there), the
    arrays moved to the sequence's blocks."""
    n = len(spec.grid.tiles) if spec.grid is not None else 0
    arrays = [a.name for a in scop.arg_arrays if a.kind != "value"]
    n_syms = len(sym_names)
    width = n_syms + 2 * n + len(arrays)
    out: list[cgen.Generable] = [
        cgen.Statement(f"__global const long *pd_map = pd_group_table + {GROUP_ROW} * "
                       "get_group_id(0)"),
        cgen.Statement(f"__global const long *pd_row = pd_seq_table + pd_map[0] * {width}")]
    out += [cgen.Statement(f"const long {group_var(d)} = pd_map[{d + 1}]")
            for d in range(len(spec.local_size))]
    for j, name in enumerate(sym_names):
        out += [cgen.Statement(f"const long {name} = pd_row[{j}]"),
                cgen.Statement(f"(void){name}")]
    for k in range(n):
        out += [cgen.Statement(f"const long {OFFSET}{k} = pd_row[{n_syms + k}]"),
                cgen.Statement(f"(void){OFFSET}{k}")]
    out += [cgen.Statement(f"{name} += pd_row[{n_syms + 2 * n + a}]")
            for a, name in enumerate(arrays)]
    return out


__all__ = ["group_var", "has_twin", "prologue", "twin_spec", "twins"]
