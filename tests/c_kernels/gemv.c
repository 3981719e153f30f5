/* y := alpha*A*x + beta*y (double), with a local scalar accumulator. */
void gemv(int M, int N, double alpha, double beta, const double A[M][N], const double x[N],
          double y[M]) {
#pragma omp parallel for
  for (int i = 0; i < M; i++) {
    double acc = 0.0;
    for (int j = 0; j < N; j++)
      acc += A[i][j] * x[j];
    y[i] = alpha * acc + beta * y[i];
  }
}
