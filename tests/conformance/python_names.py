"""Names the generated Python uses itself (np, math, and a _-prefixed helper name)."""

import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def op(np: f32[N], math: out(f32[N])):
    for i in range(N):
        _T_f32 = pd.exp(np[i]) if np[i] > 0.0 else -pd.inf
        math[i] = pd.sqrt(pd.abs(_T_f32)) + max(np[i], 0.0)
