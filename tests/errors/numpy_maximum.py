# error: call to unknown function `numpy.maximum`
# line: 14
# A NumPy elementwise function that is not in the subset (write max(a, b)).
import numpy
import polydyn as pd
from polydyn import f32, out

N = pd.sym("N")


@pd.operator
def op(X: f32[N], Y: out(f32[N])):
    for i in range(N):
        Y[i] = numpy.maximum(X[i], 0.0)
