/* PolyBench trmm: B := alpha * A^T * B with A unit lower triangular (float). */
void trmm(int M, int N, float alpha, const float A[restrict M][M], float B[restrict M][N]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      for (k = i + 1; k < M; k++)
        B[i][j] += A[k][i] * B[k][j];
      B[i][j] = alpha * B[i][j];
    }
#pragma endscop
}
