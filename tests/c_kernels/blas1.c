/* Two functions in one file: pick one with function=. */
void axpy(int N, double a, double x[N], double y[N]) {
  for (int i = 0; i < N; i++)
    y[i] += a * x[i];
}

void scal_shift(int N, int K, double a, double x[N]) {
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      x[i] = a * x[i] + k;
}
