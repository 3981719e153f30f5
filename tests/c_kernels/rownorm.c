/* Row softmax and row norms: local scalars, math.h calls, fmaxf, casts, ternaries, <float.h>
   constants and isnan. */
#include <float.h>
#include <math.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))

void rownorm(int N, int L, float X[N][L], float Y[N][L], double norm[N]) {
#pragma scop
  for (int i = 0; i < N; i++) {
    float m = -INFINITY;
    for (int j = 0; j < L; j++)
      m = fmaxf(m, X[i][j]);
    float s = 0.0f;
    for (int j = 0; j < L; j++) {
      Y[i][j] = expf(X[i][j] - m);
      s += Y[i][j];
    }
    double sq = 0;
    for (int j = 0; j < L; j++) {
      Y[i][j] /= s;
      sq += (double)X[i][j] * X[i][j];
    }
    norm[i] = sqrt(sq) + fabs(pow(MAX(sq, 1e-3), 0.25)) - log(1.0 + (float)i);
    norm[i] = isnan(norm[i]) ? -1.0 : fmin(norm[i], DBL_MAX) + DBL_EPSILON;
  }
#pragma endscop
}
