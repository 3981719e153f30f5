/* Integer arithmetic with C semantics: truncating / and %, abs, long and int64_t arrays. */
#include <stdlib.h>
#include <stdint.h>

void intops(int N, long S, int A[N], int B[N], int64_t C[N], long D[N]) {
  for (int i = 0; i < N; i++) {
    int q = A[i] / 3 - B[i] % 4;
    q += A[i] / (1 + abs(B[i]));
    C[i] = (int64_t)q * S + A[i] % (2 + abs(B[i]));
    D[i] += (long)(i - N / 2) / 3 + q * 0.5;
    A[i] /= 2;
    B[i] %= 3;
    B[i]++;
    C[i] = D[i] = C[i] - 1;
  }
}
