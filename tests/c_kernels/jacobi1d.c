/* PolyBench jacobi-1d: TSTEPS time steps, both arrays updated in place (float). */
void jacobi1d(int TSTEPS, int N, float A[N], float B[N]) {
  int t, i;
#pragma scop
  for (t = 0; t < TSTEPS; t++) {
    for (i = 1; i < N - 1; i++)
      B[i] = 0.33333f * (A[i - 1] + A[i] + A[i + 1]);
    for (i = 1; i < N - 1; i++)
      A[i] = 0.33333f * (B[i - 1] + B[i] + B[i + 1]);
  }
#pragma endscop
}
