"""Operators whose names are C, OpenCL, isl or header words: every legal Python name compiles.

Kept in a module of its own so that the names do not shadow the test module's.
"""

import polydyn as pd
from polydyn import f32, i32, out, temp

I, NAN, int, kernel, EOF = pd.sym("I NAN int kernel EOF")  # noqa: A001
INFINITY, _Bool, pd_x, α = pd.sym("INFINITY _Bool pd_x α")


@pd.operator(assume="I >= 1 and NAN >= 1 and kernel >= 0")
def names_c(float: f32[I, NAN], double: f32[NAN], errno: out(f32[I, NAN]),
            restrict: out(f32[I]), kernel: pd.index):
    static = temp(f32[NAN])
    for M_PI in range(NAN):
        static[M_PI] = double[M_PI] * 2.0 + kernel
    for get_global_id in range(I):
        barrier = 0.0
        for min in range(NAN):  # noqa: A001
            NULL = float[get_global_id, min] * static[min]
            errno[get_global_id, min] = NULL + I
            barrier += abs(NULL)
        restrict[get_global_id] = barrier + NAN


@pd.operator
def names_b(EOF: f32[int, INFINITY], size_t: i32[int], _Bool: out(f32[int]),
            float4: out(f32[INFINITY, int]), pd_x: pd.index, α: pd.index):
    for CHAR_BIT in range(int):
        linux = 0.0
        for __x in range(INFINITY):
            linux += EOF[CHAR_BIT, __x] * size_t[CHAR_BIT]
            float4[__x, CHAR_BIT] = EOF[CHAR_BIT, __x] + pd_x - α
        _Bool[CHAR_BIT] = linux
