/* PolyBench 3 jacobi-2d-imper: TSTEPS time steps of a 5-point stencil into a local
   temporary B, copied back into A after each step (polydyn makes B and A a double buffer). */
void jacobi2d_imper(int TSTEPS, int N, float A[N][N]) {
  int t, i, j;
  float B[N][N];
#pragma scop
  for (t = 0; t < TSTEPS; t++) {
    for (i = 1; i < N - 1; i++)
      for (j = 1; j < N - 1; j++)
        B[i][j] = 0.2f * (A[i][j] + A[i][j - 1] + A[i][1 + j] + A[1 + i][j] + A[i - 1][j]);
    for (i = 1; i < N - 1; i++)
      for (j = 1; j < N - 1; j++)
        A[i][j] = B[i][j];
  }
#pragma endscop
}
