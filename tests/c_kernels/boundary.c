/* Affine ifs: a shifted copy with a zero border, a diagonal scaling, leaky relu by ?:, guarded
   reads in && and ||. */
#include <math.h>

void boundary(int N, int M, float A[N][M], float B[N][M], float D[N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      if (i > 0 && j > 0)
        B[i][j] = A[i - 1][j - 1];
      else if (i == 0 || !(j != 0))
        B[i][j] = 0;
      if (i == j)
        D[i] = 2 * B[i][j];
      else
        B[i][j] = B[i][j] > 0 ? B[i][j] : 0.01f * B[i][j];
      if (j + 1 < M) /* && and || evaluate their right operand only when needed */
        B[i][j] += (j > 0 && A[i][j - 1] > 0) || A[i][j + 1] < 0 ? 1.0f : 0.0f;
    }
}
