/* Convolution throughput on LeNet-sized batches (channels-last, float32)
 * in GFLOP/s, against the OpenBLAS sgemm peak measured in the same run on
 * the same number of threads.
 *
 * Cases: the two forward convolutions of LeNet, and the convolutions its
 * backward pass runs, with the parameters MLX's Convolution vjp gives them
 * (the operands of the gradient convolutions are transposed views, as
 * there):
 *   conv1, conv2        forward: x (N, H, W, C) * w (O, 5, 5, C);
 *   conv2 dx            input gradient: the output cotangent correlated
 *                       with the flipped weight (C <-> O swapped), padding 4;
 *   conv2 dw, conv1 dw  weight gradient: the input with batch and channels
 *                       swapped, correlated with the cotangent likewise
 *                       swapped (the output is the kernel).
 * GFLOP/s count the useful products: each gradient convolution of a layer
 * has the forward one's, 2 * N * Ho * Wo * O * kh * kw * C (the gather
 * form of conv2 dx would multiply 2.25x as many, padding zeros included).
 *
 * Peak: T threads each running a single-threaded 512^3 sgemm at once (T =
 * CMX_NUM_THREADS, default 2, the goals' setting), as the convolution's
 * tiles run single-threaded BLAS on cmx's T pool threads. OpenBLAS's own
 * threaded 1024^3 figure is printed too. "gemm bnd" (forward cases) runs
 * the same matrix products as the kernel's tiles with the unfolded data
 * already in place, on one thread, scaled by T: im2col + gemm with a free
 * unfold and perfect scaling; for conv1 (C_in = 1, K = 25) that thin
 * product is the floor. (One thread: on the 2-core test machine, short
 * sgemm calls from two plain threads did not run concurrently at full
 * speed once OpenBLAS had started with two threads, for reasons not
 * pinned down, while the same calls from cmx's pool threads did.)
 *
 * The convolution (40 times) and the peak and bound (32 times each) are
 * timed in alternating rounds and the best of each is kept, so that slow
 * phases of a shared machine hit all alike; ratios are to the best peak
 * of the whole run. The load average is printed for context.
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
  for (int64_t i = 0; i < n; i++) v[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  cmx_array a = NULL;
  CK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
  free(v);
  return a;
}

/* ---- a team of T threads running single-threaded sgemm ----
 * The reference products run on plain threads with OpenBLAS held to one
 * thread, as the convolution's tiles do: OpenBLAS's own threaded calls
 * leave its idle workers spinning for about 2^28 cycles, which would take
 * a core from the convolution timed right after. */
typedef struct {
  int64_t M, N, K, mb; /* rows M in tiles of mb: C = A @ B^T */
  float *a, *b, *c;
} gemm_work;

typedef struct {
  int threads;
  pthread_barrier_t start, done;
  gemm_work* work; /* the current round's work, one per member */
  int stop;
} team;

static void run_work(const gemm_work* g) {
  for (int64_t r = 0; r < g->M; r += g->mb) {
    int64_t m = g->M - r < g->mb ? g->M - r : g->mb;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)g->N,
                (int)g->K, 1.0f, g->a, (int)g->K, g->b, (int)g->K, 0.0f,
                g->c + r * g->N, (int)g->N);
  }
}

typedef struct {
  team* t;
  int id;
} member;

static void* member_main(void* arg) {
  member* m = arg;
  for (;;) {
    pthread_barrier_wait(&m->t->start);
    if (m->t->stop) return NULL;
    run_work(&m->t->work[m->id]);
    pthread_barrier_wait(&m->t->done);
  }
}

/* Seconds of one round: every member runs its part of `work` at once. */
static double team_round(team* t, gemm_work* work) {
  t->work = work;
  double t0 = now();
  pthread_barrier_wait(&t->start);
  run_work(&t->work[0]);
  pthread_barrier_wait(&t->done);
  return now() - t0;
}

/* Work for every member (work[0 .. threads)): its share of M x N x K in
 * tiles of mb rows (A and B filled, one A tile reused: the unfolding is
 * free; C's pages touched before timing). */
static void work_set(gemm_work* work, int threads, int64_t M, int64_t N,
                     int64_t K, int64_t mb) {
  for (int i = 0; i < threads; i++) {
    gemm_work* g = &work[i];
    g->M = M / threads + (i < M % threads);
    g->N = N;
    g->K = K;
    g->mb = mb < g->M ? mb : g->M;
    g->a = malloc((size_t)(g->mb * K) * sizeof(float));
    g->b = malloc((size_t)(N * K) * sizeof(float));
    g->c = malloc((size_t)(g->M * N) * sizeof(float));
    for (int64_t e = 0; e < g->mb * K; e++) g->a[e] = (float)(e % 7) * .1f;
    for (int64_t e = 0; e < N * K; e++) g->b[e] = (float)(e % 5) * .1f;
    memset(g->c, 0, (size_t)(g->M * N) * sizeof(float));
  }
}

static void work_free(gemm_work* work, int threads) {
  for (int i = 0; i < threads; i++) {
    free(work[i].a);
    free(work[i].b);
    free(work[i].c);
  }
}

static void team_start(team* t, int threads, member* m, pthread_t* th) {
  memset(t, 0, sizeof *t);
  t->threads = threads;
  pthread_barrier_init(&t->start, NULL, (unsigned)threads);
  pthread_barrier_init(&t->done, NULL, (unsigned)threads);
  for (int i = 1; i < threads; i++) {
    m[i].t = t;
    m[i].id = i;
    pthread_create(&th[i], NULL, member_main, &m[i]);
  }
}

static void team_stop(team* t, pthread_t* th) {
  t->stop = 1;
  pthread_barrier_wait(&t->start);
  for (int i = 1; i < t->threads; i++) pthread_join(th[i], NULL);
}

/* Best of `reps` threaded sgemm calls of n x n x n, in seconds. */
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

/* ---- the cases ---- */
typedef struct {
  const char* name;
  int64_t x[4], w[4];
  bool swap_x, swap_w; /* pass swapaxes(., 0, 3) views */
  int pad;
  bool flip;
  int layer; /* 0: conv1, 1: conv2 (whose forward flops count) */
} conv_case;

/* The operands of a case (views as the vjp passes them). */
typedef struct {
  cmx_array x0, w0, x, w;
} case_arrays;

static void case_setup(const conv_case* c, case_arrays* a) {
  a->x0 = random_array(c->x, 4, 1);
  a->w0 = random_array(c->w, 4, 2);
  a->x = a->x0;
  a->w = a->w0;
  if (c->swap_x) CK(cmx_swapaxes(&a->x, a->x0, 0, 3, S));
  if (c->swap_w) CK(cmx_swapaxes(&a->w, a->w0, 0, 3, S));
  CK(cmx_array_eval(a->x));
  CK(cmx_array_eval(a->w));
}

static void case_free(case_arrays* a) {
  if (a->x != a->x0) cmx_array_release(a->x);
  if (a->w != a->w0) cmx_array_release(a->w);
  cmx_array_release(a->x0);
  cmx_array_release(a->w0);
}

/* Seconds of one evaluation; the im2col product's rows, O and K. */
static double case_once(const conv_case* c, const case_arrays* a, int64_t* rows,
                        int64_t* O, int64_t* K) {
  int pad[1] = {c->pad};
  cmx_array o = NULL;
  CK(cmx_conv_general(&o, a->x, a->w, NULL, 0, pad, 1, pad, 1, NULL, 0, NULL, 0,
                      1, c->flip, S));
  double t0 = now();
  CK(cmx_array_eval(o));
  double t = now() - t0;
  *O = cmx_array_dim(o, 3);
  *rows = cmx_array_size(o) / *O;
  *K = cmx_array_dim(a->w, 1) * cmx_array_dim(a->w, 2) * cmx_array_dim(a->w, 3);
  cmx_array_release(o);
  return t;
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 0);
  int threads = atoi(getenv("CMX_NUM_THREADS"));
  if (threads < 1) threads = 1;
  openblas_set_num_threads(threads);
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) printf("load average: %.2f\n", load[0]);
  printf("threads: %d\n", threads);
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
  const int peak_n = 512;
  const double peak_flops = 2.0 * peak_n * peak_n * peak_n * threads;
  team tm;
  member mem[64];
  pthread_t th[64];
  if (threads > 64) threads = 64;
  openblas_set_num_threads(1);
  pause_s(0.3); /* OpenBLAS's workers spin for a while after start-up */
  team_start(&tm, threads, mem, th);
  gemm_work wpeak[64], wbound[64];
  work_set(wpeak, threads, (int64_t)peak_n * threads, peak_n, peak_n, peak_n);
  printf("%-38s %8s %8s %8s %8s\n", "case", "ms", "GFLOP/s", "of peak",
         "gemm bnd");
  double peak_all = 0, t_conv[NC], g_bound[NC];
  for (int l = 0; l < NC; l++) {
    case_arrays a;
    case_setup(&cases[l], &a);
    int64_t rows = 0, O = 0, K = 0;
    double tc = 1e30, tp = 1e30, tb = 1e30;
    case_once(&cases[l], &a, &rows, &O, &K); /* warm-up */
    /* the kernel's tiles for forward shapes: about 384 KB of unfolded
     * rows, at most 1024 */
    int64_t mb = (384 << 10) / (K * 4);
    mb = mb < 48 ? 128 : mb > 1024 ? 1024 : mb;
    const bool bound = !cases[l].swap_x && !cases[l].pad;
    if (bound) work_set(wbound, 1, rows, O, K, mb);
    /* the convolution, the peak and the bound alternate in rounds, so
     * that slow phases of a shared machine hit all three alike. The
     * convolution runs with OpenBLAS allowed T threads (a kernel may use
     * them), the references after a pause that lets OpenBLAS's idle
     * workers stop spinning. */
    for (int round = 0; round < 4; round++) {
      openblas_set_num_threads(threads);
      for (int r = 0; r < 10; r++) {
        double t = case_once(&cases[l], &a, &rows, &O, &K);
        if (t < tc) tc = t;
      }
      openblas_set_num_threads(1);
      pause_s(0.25);
      for (int r = 0; r < 8; r++) {
        double t = team_round(&tm, wpeak);
        if (t < tp) tp = t;
        if (bound) { /* one thread, all rows: see the header */
          double t0 = now();
          run_work(&wbound[0]);
          t = now() - t0;
          if (t < tb) tb = t;
        }
      }
    }
    if (bound) work_free(wbound, 1);
    case_free(&a);
    double peak = peak_flops / tp / 1e9;
    if (peak > peak_all) peak_all = peak;
    t_conv[l] = tc;
    g_bound[l] = bound ? 2.0 * rows * O * K / tb / 1e9 * threads : 0;
  }
  /* ratios to the best peak of the run: noise only ever lowers it */
  for (int l = 0; l < NC; l++) {
    double gf = layer_flops[cases[l].layer] / t_conv[l] / 1e9;
    printf("%-38s %8.3f %8.1f %8.2f", cases[l].name, t_conv[l] * 1e3, gf,
           gf / peak_all);
    if (g_bound[l] > 0)
      printf(" %8.2f\n", g_bound[l] / peak_all);
    else
      printf(" %8s\n", "-");
  }
  team_stop(&tm, th);
  work_free(wpeak, threads);
  openblas_set_num_threads(threads);
  double p1 = 2.0 * 1024 * 1024 * 1024 / time_sgemm(1024, 5) / 1e9;
  printf(
      "peak: %d x single-threaded sgemm 512^3, best %.1f GFLOP/s "
      "(threaded 1024^3 sgemm: %.1f)\n",
      threads, peak_all, p1);
  return 0;
}
