/* PolyBench 2mm: D := alpha*A*B*C + beta*D, through a local temporary (double). */
void mm2(int NI, int NJ, int NK, int NL, double alpha, double beta, double A[NI][NK],
         double B[NK][NJ], double C[NJ][NL], double D[NI][NL]) {
#pragma scop
  double tmp[NI][NJ];
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      tmp[i][j] = 0.0;
      for (int k = 0; k < NK; ++k)
        tmp[i][j] += alpha * A[i][k] * B[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      D[i][j] *= beta;
      for (int k = 0; k < NJ; ++k)
        D[i][j] += tmp[i][k] * C[k][j];
    }
#pragma endscop
}
