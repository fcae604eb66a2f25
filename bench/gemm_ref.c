/* Single-precision GEMM C = A (MxK) * B (KxN) timed with OpenBLAS (cblas)
 * and oneDNN (dnnl_sgemm): prints "openblas GFLOPS" and "onednn GFLOPS",
 * the median of REPEATS runs after a warm-up. Reference for bench/kernels.py;
 * never part of autopar's product path.
 *   gemm_ref M N K REPEATS */
#include <cblas.h>
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: gemm_ref M N K REPEATS\n");
    return 2;
  }
  long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  int repeats = atoi(argv[4]);
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n),
        *c = malloc(sizeof(float) * m * n);
  double *times = malloc(sizeof(double) * repeats);
  if (!a || !b || !c || !times || repeats < 1)
    return 2;
  for (long i = 0; i < m * k; ++i)
    a[i] = (float)((i % 17) - 8) / 8.0f;
  for (long i = 0; i < k * n; ++i)
    b[i] = (float)((i % 13) - 6) / 6.0f;
  double flops = 2.0 * m * n * k;
  for (int lib = 0; lib < 2; ++lib) {
    for (int r = -1; r < repeats; ++r) {
      double start = now();
      if (lib == 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                    a, k, b, n, 0.0f, c, n);
      } else if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) !=
                 dnnl_success) {
        fprintf(stderr, "dnnl_sgemm failed\n");
        return 1;
      }
      if (r >= 0)
        times[r] = now() - start;
    }
    qsort(times, repeats, sizeof(double), cmp);
    printf("%s %.2f\n", lib == 0 ? "openblas" : "onednn",
           flops / times[repeats / 2] / 1e9);
  }
  return 0;
}
