/* Banded matrix-vector product: reversed and strided loops, MIN/MAX and && bounds, i / 2
   subscripts, a guarded read in ?:, an int alias. */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

void band(int N, int W, float A[N][N], float x[N], float y[N], float h[(N + 1) / 2]) {
  for (int i = N - 1; i >= 0; i--) {
    float acc = y[i];
    for (int j = MAX(0, i - W); j < MIN(N, i + W + 1); j += 1)
      acc += A[i][j] * x[j];
    y[i] = acc;
  }
  for (int i = 0; i < N; i += 2)
    h[i / 2] = y[i] + (i + 1 < N ? y[i + 1] : 0.0f);
  for (int i = N - 1; i >= 0; i -= 3)
    x[i] = x[i] * (float)(i % 4);
  for (int i = 0; i < N && i < W; i++) {
    const int ii = N - 1 - i; /* an affine alias: usable in subscripts */
    x[ii] += 1.0f;
  }
}
