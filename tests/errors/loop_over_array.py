# error: loops must iterate over range
# line: 12
# A for loop over an array.
import polydyn as pd
from polydyn import f32, out

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N], Y: out(f32[N])):
    for x in A:
        Y[0] = x
