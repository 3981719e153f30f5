"""The lane combine: a lane kernel's per-lane copies of a reduction's scalar combined into one
value in every lane (``OpenCLEmitter.lane_combine``).

Three forms, all in a fixed order (the same bits run to run) and with every barrier outside any
condition (PoCL miscompiles barriers under conditions):

- *local memory*, on every device: each lane writes its copy; ``fan`` lanes each combine the
  ``lanes / fan`` copies ``fan`` apart; every lane combines those ``fan`` partials. Three
  barriers for any number of lanes (a tree with a barrier per level took ``log2(lanes) + 1``).
- *by columns*, for lane kernels over several values per work-group (their lanes are not
  neighbours in a warp): every copy to local memory, one barrier, each work-item combining
  its value's copies in lane order.
- *warp shuffles*, where the runtime defines ``PD_NV_SHUFFLE`` (NVIDIA, whose OpenCL lists no
  sub-group extension but compiles inline PTX): a butterfly over each warp's 32 lanes by
  ``shfl.sync.bfly``, then lane 0 of each warp writes, one barrier, and every lane combines
  the warps' results. 64-bit values travel as two 32-bit halves.

``PD_SHUFFLE_LOCAL`` (tests, ``POLYDYN_OCL_SHUFFLE=local``) runs the warp form on any device,
each shuffle through local memory between barriers, so PoCL checks everything in it but the
PTX instruction.
"""

from __future__ import annotations

import cgen

WARP = 32
SHUFFLE_TYPES = ("f32", "f64", "i32", "i64")
BARRIER = "barrier(CLK_LOCAL_MEM_FENCE)"

# PD_SHFL_XOR(T, out, v, mask): ``out`` = ``v`` of the lane ``pd_lane ^ mask`` (a statement)
_SHUFFLE_HEAD = """#if defined(PD_NV_SHUFFLE) && defined(PD_SHUFFLE_LOCAL)
#define PD_SHFL_XOR(T, out, v, mask) { pd_red_##T[pd_lane] = (v); """ + BARRIER + """; \\
  out = pd_red_##T[pd_lane ^ (mask)]; """ + BARRIER + """; }
#elif defined(PD_NV_SHUFFLE)
#define PD_SHFL_XOR(T, out, v, mask) out = pd_shfl_xor_##T(v, mask)
static inline uint pd_shfl_xor_u32(uint v, int mask) {
  uint r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}
"""
_SHUFFLE_64 = """static inline uint2 pd_shfl_xor_u64(uint2 v, int mask) {
  return (uint2)(pd_shfl_xor_u32(v.x, mask), pd_shfl_xor_u32(v.y, mask));
}
"""
_SHUFFLE_TYPED = {
    "f32": "static inline float pd_shfl_xor_f32(float v, int mask) {\n"
           "  return as_float(pd_shfl_xor_u32(as_uint(v), mask));\n}\n",
    "i32": "static inline int pd_shfl_xor_i32(int v, int mask) {\n"
           "  return as_int(pd_shfl_xor_u32(as_uint(v), mask));\n}\n",
    "f64": "static inline double pd_shfl_xor_f64(double v, int mask) {\n"
           "  return as_double(pd_shfl_xor_u64(as_uint2(v), mask));\n}\n",
    "i64": "static inline long pd_shfl_xor_i64(long v, int mask) {\n"
           "  return as_long(pd_shfl_xor_u64(as_uint2(v), mask));\n}\n",
}


def shuffle_prelude(dtypes: set[str]) -> str:
    """The shuffle macro and the helpers for ``dtypes`` (only those: ``double`` needs fp64)."""
    if not dtypes:
        return ""
    text = _SHUFFLE_HEAD
    if dtypes & {"f64", "i64"}:
        text += _SHUFFLE_64
    text += "".join(_SHUFFLE_TYPED[t] for t in SHUFFLE_TYPES if t in dtypes)
    return text + "#endif\n"


def shuffles(dtype: str, lanes: int) -> bool:
    """Whether a combine of ``dtype`` over ``lanes`` has the warp form: whole warps, and no
    more warps than one warp's lanes (the step across warps reads them in one pass)."""
    return dtype in SHUFFLE_TYPES and WARP <= lanes <= WARP * WARP


def local_tree(name: str, buf: str, combine: str, lanes: int) -> list[cgen.Generable]:
    """``name``'s copies combined through ``buf`` (``__local``, ``lanes`` cells): lane ``l <
    fan`` combines cells ``l, l + fan, l + 2 fan, ...`` into cell ``l`` (strided: no bank
    conflicts), then every lane combines cells ``0 .. fan - 1`` in order. ``combine`` is a
    format string of two operands."""
    fan = 1 << ((lanes.bit_length() - 1) // 2)  # 16 of 256 lanes, 32 of 1024
    out: list[cgen.Generable] = [cgen.Statement(f"{buf}[pd_lane] = {name}"),
                                 cgen.Statement(BARRIER)]
    if lanes > fan:
        steps = [cgen.Statement(f"{name} = {combine.format(name, f'{buf}[pd_lane + {k}]')}")
                 for k in range(fan, lanes, fan)]
        out += [cgen.If(f"pd_lane < {fan}",
                        cgen.Block([*steps, cgen.Statement(f"{buf}[pd_lane] = {name}")])),
                cgen.Statement(BARRIER)]
    out.append(cgen.Statement(f"{name} = {buf}[0]"))
    out += [cgen.Statement(f"{name} = {combine.format(name, f'{buf}[{k}]')}")
            for k in range(1, fan)]
    return out


def warp_shuffle(name: str, dtype: str, combine: str, lanes: int) -> list[cgen.Generable]:
    """``name``'s copies combined by a butterfly within each warp (every lane of a warp ends
    with the warp's value: ``combine`` is commutative), lane 0 of each warp writing it to
    ``pd_red_<dtype>``, then every lane combining the warps' values in order."""
    buf, other = f"pd_red_{dtype}", f"pd_sh_{dtype}"
    out: list[cgen.Generable] = []
    width = WARP // 2
    while width:
        out += [cgen.Statement(f"PD_SHFL_XOR({dtype}, {other}, {name}, {width})"),
                cgen.Statement(f"{name} = {combine.format(name, other)}")]
        width //= 2
    out += [cgen.If(f"(pd_lane & {WARP - 1}) == 0",
                    cgen.Statement(f"{buf}[pd_lane >> {WARP.bit_length() - 1}] = {name}")),
            cgen.Statement(BARRIER), cgen.Statement(f"{name} = {buf}[0]")]
    out += [cgen.Statement(f"{name} = {combine.format(name, f'{buf}[{w}]')}")
            for w in range(1, lanes // WARP)]
    return out


def column_combine(name: str, dtype: str, combine: str, lanes: int,
                   columns: int) -> list[cgen.Generable]:
    """``name``'s copies combined over the ``lanes`` lanes of each of ``columns`` values
    (local id ``pd_lane * columns + pd_col``): each work-item writes its copy, then combines its
    column's copies in lane order (``lanes`` reads, neighbouring columns in neighbouring
    banks)."""
    buf = f"pd_red_{dtype}"
    out: list[cgen.Generable] = [
        cgen.Statement(f"{buf}[pd_lane * {columns} + pd_col] = {name}"),
        cgen.Statement(BARRIER),
        cgen.Statement(f"{name} = {buf}[pd_col]")]
    out += [cgen.Statement(f"{name} = " + combine.format(name, f"{buf}[{s * columns} + pd_col]"))
            for s in range(1, lanes)]
    return out


def lane_combine(name: str, dtype: str, combine: str, lanes: int) -> list[cgen.Generable]:
    """The combine of ``name`` (``dtype``) over ``lanes`` lanes, the result in every lane's
    copy: the warp form under ``PD_NV_SHUFFLE`` where it applies, else the local tree. A
    barrier must follow before ``pd_red_<dtype>`` is written again."""
    tree = local_tree(name, f"pd_red_{dtype}", combine, lanes)
    if not shuffles(dtype, lanes):
        return tree
    return [cgen.Line("#ifdef PD_NV_SHUFFLE"), *warp_shuffle(name, dtype, combine, lanes),
            cgen.Line("#else"), *tree, cgen.Line("#endif")]
