/* PolyBench gemm: C := alpha*A*B + beta*C (float). */
#include <math.h>

void gemm(int NI, int NJ, int NK, float alpha, float beta, float C[NI][NJ],
          float A[NI][NK], float B[NK][NJ]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < NI; i++) {
    for (j = 0; j < NJ; j++)
      C[i][j] *= beta;
    for (k = 0; k < NK; k++) {
      for (j = 0; j < NJ; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop
}
