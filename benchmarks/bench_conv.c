/* conv2d forward throughput on LeNet-sized batches (channels-last, float32)
 * in GFLOP/s, against the OpenBLAS sgemm peak measured in the same run
 * (a 1024^3 sgemm): cmx's convolution is im2col + sgemm, so the gemm peak
 * is its ceiling. FLOPs count 2 * N * Ho * Wo * Cout * Kh * Kw * Cin.
 * Figures are best-of-many wall-clock times. The peak is the best of
 * 1024^3 and 512^3 products (the shorter one, like the convolutions,
 * finds quiet moments on a busy machine as easily), re-measured between
 * the layers; the load average is printed for context.
 *
 *   ./build/bench_conv            (CMX_NUM_THREADS, OPENBLAS_NUM_THREADS)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static cmx_array random_array(const int64_t* shape, int nd, unsigned seed) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)n * sizeof(float));
  srand(seed);
  for (int64_t i = 0; i < n; i++) v[i] = (float)rand() / RAND_MAX - 0.5f;
  cmx_array a = NULL;
  if (cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32) != CMX_OK) {
    fprintf(stderr, "failed: %s\n", cmx_last_error());
    exit(1);
  }
  free(v);
  return a;
}

/* Best of `reps` sgemm calls of n x n x n, in seconds. */
static double time_sgemm(int n, int reps) {
  float* a = malloc((size_t)n * n * sizeof(float));
  float* b = malloc((size_t)n * n * sizeof(float));
  float* c = malloc((size_t)n * n * sizeof(float));
  for (int64_t i = 0; i < (int64_t)n * n; i++) {
    a[i] = (float)(i % 7) * 0.1f;
    b[i] = (float)(i % 5) * 0.1f;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n,
                b, n, 0.0f, c, n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  free(a);
  free(b);
  free(c);
  return best;
}

/* Best of `reps` evaluations of conv2d(x, w) (stride 1, no padding). */
static double time_conv(cmx_array x, cmx_array w, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    cmx_array o = NULL;
    if (cmx_conv2d(&o, x, w, 1, 1, 0, 0, 1, 1, 1, S) != CMX_OK) {
      fprintf(stderr, "failed: %s\n", cmx_last_error());
      exit(1);
    }
    double t0 = now();
    if (cmx_array_eval(o) != CMX_OK) {
      fprintf(stderr, "failed: %s\n", cmx_last_error());
      exit(1);
    }
    double t = now() - t0;
    if (t < best) best = t;
    cmx_array_release(o);
  }
  return best;
}

int main(void) {
  const int n = 1024;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) printf("load average: %.2f\n", load[0]);
  /* Best sgemm rate in GFLOP/s. */
  double peak = 2.0 * n * n * n / time_sgemm(n, 10) / 1e9;
  struct {
    const char* name;
    int64_t x[4], w[4];
  } layers[] = {
      {"LeNet conv1 128x28x28x1 * 32x5x5x1", {128, 28, 28, 1}, {32, 5, 5, 1}},
      {"LeNet conv2 128x12x12x32 * 64x5x5x32",
       {128, 12, 12, 32},
       {64, 5, 5, 32}},
  };
  double results[2], fl[2];
  for (int l = 0; l < 2; l++) {
    cmx_array x = random_array(layers[l].x, 4, 1 + l);
    cmx_array w = random_array(layers[l].w, 4, 11 + l);
    int64_t N = layers[l].x[0], C = layers[l].x[3], O = layers[l].w[0];
    int64_t kh = layers[l].w[1], kw = layers[l].w[2];
    int64_t ho = layers[l].x[1] - kh + 1, wo = layers[l].x[2] - kw + 1;
    double flops = 2.0 * N * ho * wo * O * kh * kw * C;
    double t = time_conv(x, w, 30);
    double p1 = 2.0 * n * n * n / time_sgemm(n, 5) / 1e9;
    double p2 = 2.0 * 512 * 512 * 512 / time_sgemm(512, 30) / 1e9;
    if (p1 > peak) peak = p1;
    if (p2 > peak) peak = p2;
    results[l] = t;
    fl[l] = flops;
    cmx_array_release(x);
    cmx_array_release(w);
  }
  printf("OpenBLAS sgemm peak (best of 1024^3, 512^3): %.1f GFLOP/s\n", peak);
  for (int l = 0; l < 2; l++) {
    double gf = fl[l] / results[l] / 1e9;
    printf("%s: %.3f ms, %.1f GFLOP/s, %.2f of sgemm peak\n", layers[l].name,
           results[l] * 1e3, gf, gf / peak);
  }
  return 0;
}
