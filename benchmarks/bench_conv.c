/* Convolution throughput on LeNet-sized batches (channels-last, float32)
 * in GFLOP/s, against the OpenBLAS sgemm peak measured in the same run
 * with the same number of threads.
 *
 * Cases: the two forward convolutions of LeNet, and the convolutions its
 * backward pass runs, with the parameters MLX's Convolution vjp gives them
 * (the inputs of the gradient convolutions are transposed views, as
 * there):
 *   conv1, conv2      forward: x (N, H, W, C) * w (O, 5, 5, C);
 *   conv2 dx          input gradient: the output cotangent correlated
 *                     with the flipped weight (C <-> O swapped), padding 4;
 *   conv2 dw, conv1 dw  weight gradient: the input with batch and channels
 *                     swapped, correlated with the cotangent likewise
 *                     swapped (the output is the kernel).
 * GFLOP/s count the useful products: each gradient convolution of a layer
 * has the forward one's, 2 * N * Ho * Wo * O * kh * kw * C (the gather
 * form of conv2 dx would multiply 2.25x as many, padding zeros included).
 *
 * Ceiling: "gemm bound" (forward cases) runs the same matrix products as the
 * tiles of the kernel (rows split over the threads, single-threaded sgemm on
 * each, unfolded data already in place), i.e. im2col + gemm with a free unfold.
 * For conv1 (C_in = 1, K = 25) that thin product, not the unfolding, is
 * the floor.
 *
 * Threads: CMX_NUM_THREADS (default 2, the goals' setting); OpenBLAS's
 * count is set to the same for the peak. Before each timed series the
 * program sleeps 0.3 s so that OpenBLAS's idle workers, which spin for
 * about 2^28 cycles after each threaded call, are asleep and do not take
 * a core from cmx's pool. Figures are the best of many wall-clock times;
 * the load average is printed for context.
 *
 *   ./build/bench_conv
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT

void openblas_set_num_threads(int);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

static void die(const char* what) {
  fprintf(stderr, "bench_conv: %s failed: %s\n", what, cmx_last_error());
  exit(1);
}
#define CK(call) \
  if ((call) != CMX_OK) die(#call)

static cmx_array random_array(const int64_t* shape, int nd, unsigned seed) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)n * sizeof(float));
  srand(seed);
  for (int64_t i = 0; i < n; i++) v[i] = (float)rand() / RAND_MAX - 0.5f;
  cmx_array a = NULL;
  CK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
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

/* ---- the gemm bound: threads x single-threaded tile products ---- */
typedef struct {
  int64_t rows, N, K, mb;
  float *a, *b, *c;
  pthread_barrier_t* go;
} gemm_part;

static void* gemm_worker(void* arg) {
  gemm_part* g = arg;
  pthread_barrier_wait(g->go);
  for (int64_t r = 0; r < g->rows; r += g->mb) {
    int64_t m = g->rows - r < g->mb ? g->rows - r : g->mb;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)g->N,
                (int)g->K, 1.0f, g->a, (int)g->K, g->b, (int)g->K, 0.0f,
                g->c + r * g->N, (int)g->N);
  }
  return NULL;
}

/* Best time of M x N x K as `threads` row ranges of tiles of mb rows. */
static double time_gemm_bound(int threads, int64_t M, int64_t N, int64_t K,
                              int64_t mb, int reps) {
  openblas_set_num_threads(1);
  gemm_part parts[64];
  if (threads > 64) threads = 64;
  float* b = malloc((size_t)(N * K) * sizeof(float));
  for (int64_t i = 0; i < N * K; i++) b[i] = (float)(i % 5) * 0.1f;
  for (int t = 0; t < threads; t++) {
    parts[t].rows = M / threads + (t < M % threads);
    parts[t].N = N;
    parts[t].K = K;
    parts[t].mb = mb;
    parts[t].a = malloc((size_t)(mb * K) * sizeof(float));
    parts[t].c = malloc((size_t)(parts[t].rows * N + 1) * sizeof(float));
    parts[t].b = b;
    for (int64_t i = 0; i < mb * K; i++) parts[t].a[i] = (float)(i % 7) * .1f;
    memset(parts[t].c, 0, (size_t)(parts[t].rows * N + 1) * sizeof(float));
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    pthread_t th[64];
    for (int t = 0; t < threads; t++) parts[t].go = &go;
    for (int t = 1; t < threads; t++)
      pthread_create(&th[t], NULL, gemm_worker, &parts[t]);
    double t0 = now();
    gemm_worker(&parts[0]);
    for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
    double el = now() - t0;
    if (el < best) best = el;
    pthread_barrier_destroy(&go);
  }
  for (int t = 0; t < threads; t++) {
    free(parts[t].a);
    free(parts[t].c);
  }
  free(b);
  openblas_set_num_threads(threads);
  return best;
}

/* ---- the cases ---- */
typedef struct {
  const char* name;
  int64_t x[4], w[4];
  bool swap_x, swap_w; /* pass swapaxes(., 0, 3) views */
  int pad;
  bool flip;
  int layer; /* 0: conv1, 1: conv2 (whose forward flops count) */
} conv_case;

/* Best of `reps` evaluations, in seconds; the im2col product's rows, O
 * and K. */
static double time_case(const conv_case* c, int reps, int64_t* rows, int64_t* O,
                        int64_t* K) {
  cmx_array x0 = random_array(c->x, 4, 1), w0 = random_array(c->w, 4, 2);
  cmx_array x = x0, w = w0;
  if (c->swap_x) CK(cmx_swapaxes(&x, x0, 0, 3, S));
  if (c->swap_w) CK(cmx_swapaxes(&w, w0, 0, 3, S));
  CK(cmx_array_eval(x));
  CK(cmx_array_eval(w));
  int pad[1] = {c->pad};
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    cmx_array o = NULL;
    CK(cmx_conv_general(&o, x, w, NULL, 0, pad, 1, pad, 1, NULL, 0, NULL, 0, 1,
                        c->flip, S));
    double t0 = now();
    CK(cmx_array_eval(o));
    double t = now() - t0;
    if (t < best) best = t;
    if (r == 0) {
      *O = cmx_array_dim(o, 3);
      *rows = cmx_array_size(o) / *O;
      *K = cmx_array_dim(w, 1) * cmx_array_dim(w, 2) * cmx_array_dim(w, 3);
    }
    cmx_array_release(o);
  }
  if (x != x0) cmx_array_release(x);
  if (w != w0) cmx_array_release(w);
  cmx_array_release(x0);
  cmx_array_release(w0);
  return best;
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 0);
  int threads = atoi(getenv("CMX_NUM_THREADS"));
  if (threads < 1) threads = 1;
  openblas_set_num_threads(threads);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) printf("load average: %.2f\n", load[0]);
  printf("threads: %d (cmx pool; OpenBLAS for the peak)\n", threads);
  static const conv_case cases[] = {
      {"conv1    128x28x28x1 * 32x5x5x1",
       {128, 28, 28, 1},
       {32, 5, 5, 1},
       false,
       false,
       0,
       false,
       0},
      {"conv2    128x12x12x32 * 64x5x5x32",
       {128, 12, 12, 32},
       {64, 5, 5, 32},
       false,
       false,
       0,
       false,
       1},
      {"conv2 dx 128x8x8x64 * 32x5x5x64^",
       {128, 8, 8, 64},
       {64, 5, 5, 32},
       false,
       true,
       4,
       true,
       1},
      {"conv2 dw 32x12x12x128^ * 64x8x8x128^",
       {128, 12, 12, 32},
       {128, 8, 8, 64},
       true,
       true,
       0,
       false,
       1},
      {"conv1 dw 1x28x28x128^ * 32x24x24x128^",
       {128, 28, 28, 1},
       {128, 24, 24, 32},
       true,
       true,
       0,
       false,
       0},
  };
  enum { NC = sizeof cases / sizeof cases[0] };
  /* forward flops of conv1 and conv2 */
  const double layer_flops[2] = {2.0 * 128 * 24 * 24 * 32 * 5 * 5 * 1,
                                 2.0 * 128 * 8 * 8 * 64 * 5 * 5 * 32};
  double t[NC], fl[NC], bound[NC];
  double peak = 0;
  for (int l = 0; l < NC; l++) {
    int64_t rows = 0, O = 0, K = 0;
    pause_s(0.3);
    t[l] = time_case(&cases[l], 40, &rows, &O, &K);
    fl[l] = layer_flops[cases[l].layer];
    /* the kernel's tiles for forward shapes: about 384 KB of unfolded
     * rows, at most 1024 */
    int64_t mb = (384 << 10) / (K * 4);
    mb = mb < 48 ? 128 : mb > 1024 ? 1024 : mb;
    bound[l] = cases[l].swap_x || cases[l].pad
                   ? 0
                   : fl[l] / time_gemm_bound(threads, rows, O, K, mb, 10) / 1e9;
    pause_s(0.3);
    double p1 = 2.0 * 1024 * 1024 * 1024 / time_sgemm(1024, 5) / 1e9;
    double p2 = 2.0 * 512 * 512 * 512 / time_sgemm(512, 30) / 1e9;
    if (p1 > peak) peak = p1;
    if (p2 > peak) peak = p2;
  }
  printf("OpenBLAS sgemm peak (best of 1024^3, 512^3): %.1f GFLOP/s\n", peak);
  printf("%-38s %9s %9s %8s %9s\n", "case", "ms", "GFLOP/s", "of peak",
         "gemm bnd");
  for (int l = 0; l < NC; l++) {
    double gf = fl[l] / t[l] / 1e9;
    printf("%-38s %9.3f %9.1f %8.2f", cases[l].name, t[l] * 1e3, gf, gf / peak);
    if (bound[l] > 0)
      printf(" %9.2f\n", bound[l] / peak);
    else
      printf(" %9s\n", "-");
  }
  return 0;
}
