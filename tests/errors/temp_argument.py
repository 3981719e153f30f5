# error: temporaries are declared in the body
# line: 12
# A temp() used as an argument annotation.
import polydyn as pd
from polydyn import f32, out, temp

N, M = pd.sym("N M")


@pd.operator
def op(A: f32[N],
       T: temp(f32[N]),
       Y: out(f32[N])):
    for i in range(N):
        Y[i] = A[i]
