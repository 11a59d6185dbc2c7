/* Core benchmarks: each cmx figure next to its hardware floor, measured in
 * the same run.
 *
 *   memcpy 64 MB (2 threads)   bandwidth floor, bytes read + written
 *   add 16M f32                GB/s (3 x 64 MB moved), fraction of memcpy
 *   matmul 1024^3 f32          GFLOP/s of cmx and of a direct cblas_sgemm
 *                              with OpenBLAS set to cmx's thread count
 *   graph overhead             10,000 dependent small adds: us per op
 *
 * Every figure is the median of several repetitions after a warm-up. The
 * cmx timings include building the graph and cmx_eval, with inputs already
 * evaluated, and release the outputs every iteration as real code does (so
 * output buffers come back from cmx's buffer cache).
 *
 *   exp 16M f32                GB/s (2 x 64 MB moved), fraction of memcpy
 *   sum 16M f32                GB/s (64 MB read), fraction of memcpy
 *
 * The goals are stated for 2 threads, so cmx runs with CMX_NUM_THREADS=2
 * unless the environment sets it, and memcpy uses 2 threads too.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_graph.h"
#include "bench_time.h"
#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT
#define MB (1024.0 * 1024.0)

/* Median seconds of fa and of fb, called alternately (reps each after
 * warm each), so slow phases of a shared machine hit both alike. */
static void alternate(void (*fa)(void*), void* ca, void (*fb)(void*), void* cb,
                      int warm, int reps, double* ta, double* tb) {
  for (int i = 0; i < warm; i++) {
    fa(ca);
    fb(cb);
  }
  double x[64], y[64];
  if (reps > 64) reps = 64;
  for (int i = 0; i < reps; i++) {
    double t0 = now();
    fa(ca);
    double t1 = now();
    fb(cb);
    x[i] = t1 - t0;
    y[i] = now() - t1;
  }
  qsort(x, (size_t)reps, sizeof(double), cmp_double);
  qsort(y, (size_t)reps, sizeof(double), cmp_double);
  *ta = x[reps / 2];
  *tb = y[reps / 2];
}

static void die(const char* what) {
  fprintf(stderr, "bench_core: %s failed: %s\n", what, cmx_last_error());
  exit(1);
}
#define CK(call) \
  if ((call) != CMX_OK) die(#call)

/* ---- 1. memcpy with two threads, each copying half ---- */
typedef struct {
  char *src, *dst;
  size_t bytes;
  pthread_barrier_t start, done;
  int stop;
} copy_job;

static void* copy_worker(void* arg) {
  copy_job* j = arg;
  size_t half = j->bytes / 2;
  for (;;) {
    pthread_barrier_wait(&j->start);
    if (j->stop) return NULL;
    memcpy(j->dst + half, j->src + half, j->bytes - half);
    pthread_barrier_wait(&j->done);
  }
}

static void copy_once(void* ctx) {
  copy_job* j = ctx;
  pthread_barrier_wait(&j->start);
  memcpy(j->dst, j->src, j->bytes / 2);
  pthread_barrier_wait(&j->done);
}

static void copy_start(copy_job* j, size_t bytes, pthread_t* t) {
  j->bytes = bytes;
  j->src = aligned_alloc(64, bytes);
  j->dst = aligned_alloc(64, bytes);
  memset(j->src, 1, bytes); /* fault the pages in before timing */
  memset(j->dst, 2, bytes);
  j->stop = 0;
  pthread_barrier_init(&j->start, NULL, 2);
  pthread_barrier_init(&j->done, NULL, 2);
  pthread_create(t, NULL, copy_worker, j);
}

static void copy_stop(copy_job* j, pthread_t t) {
  j->stop = 1;
  pthread_barrier_wait(&j->start);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&j->start);
  pthread_barrier_destroy(&j->done);
  free(j->src);
  free(j->dst);
}

/* ---- 2. elementwise ops through cmx ---- */
typedef struct {
  cmx_array a, b;
} binary_job;

static void add_once(void* ctx) {
  binary_job* j = ctx;
  cmx_array c;
  CK(cmx_add(&c, j->a, j->b, S));
  CK(cmx_array_eval(c));
  cmx_array_release(c);
}

static void exp_once(void* ctx) {
  binary_job* j = ctx;
  cmx_array c;
  CK(cmx_exp(&c, j->a, S));
  CK(cmx_array_eval(c));
  cmx_array_release(c);
}

static void sum_once(void* ctx) {
  binary_job* j = ctx;
  cmx_array c;
  CK(cmx_sum(&c, j->a, NULL, 0, false, S));
  CK(cmx_array_eval(c));
  cmx_array_release(c);
}

static cmx_array random_f32(const int64_t* shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  float* v = malloc((size_t)n * sizeof(float));
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }
  cmx_array a;
  CK(cmx_array_from_data(&a, v, shape, ndim, CMX_FLOAT32));
  free(v);
  return a;
}

/* ---- 5. matmul ---- */
typedef struct {
  cmx_array a, b;
  const float *pa, *pb;
  float* pc;
  int n;
} mm_job;

static void cmx_mm_once(void* ctx) {
  mm_job* j = ctx;
  cmx_array c;
  CK(cmx_matmul(&c, j->a, j->b, S));
  CK(cmx_array_eval(c));
  cmx_array_release(c);
}

/* OpenBLAS's thread count, when it offers the call (weak reference). */
extern void openblas_set_num_threads(int) __attribute__((weak));

static void blas_mm_once(void* ctx) {
  mm_job* j = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->n, j->n, j->n, 1.0f,
              j->pa, j->n, j->pb, j->n, 0.0f, j->pc, j->n);
}

/* ---- 6. graph overhead ---- */
typedef struct {
  cmx_array x0, one;
  int n;
} chain_job;

static void chain_once(void* ctx) {
  chain_job* j = ctx;
  CK(bench_add_chain(j->x0, j->one, j->n, S));
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 0);
  const size_t bytes = 64u << 20;
  const int64_t n16 = (int64_t)(bytes / sizeof(float)); /* 16M floats */

  /* memcpy and add alternate, so both see the same machine state */
  double bw;
  {
    copy_job cj;
    pthread_t t;
    copy_start(&cj, bytes, &t);
    binary_job j = {random_f32(&n16, 1), random_f32(&n16, 1)};
    CK(cmx_array_eval(j.a));
    CK(cmx_array_eval(j.b));
    double tcopy, tadd, tc2, texp, tc3, tsum;
    alternate(copy_once, &cj, add_once, &j, 3, 21, &tcopy, &tadd);
    alternate(copy_once, &cj, exp_once, &j, 3, 21, &tc2, &texp);
    alternate(copy_once, &cj, sum_once, &j, 3, 21, &tc3, &tsum);
    copy_stop(&cj, t);
    bw = 2.0 * (double)bytes / tcopy / 1e9; /* read + written */
    printf("%-26s %8.1f GB/s   (2 threads, read + write)\n", "memcpy 64 MB",
           bw);
    double gbs = 3.0 * (double)bytes / tadd / 1e9;
    printf("%-26s %8.1f GB/s   %.2f of memcpy   (%.2f ms)\n", "add 16M f32",
           gbs, gbs / bw, tadd * 1e3);
    double bw2 = 2.0 * (double)bytes / tc2 / 1e9;
    gbs = 2.0 * (double)bytes / texp / 1e9;
    printf("%-26s %8.1f GB/s   %.2f of memcpy   (%.2f ms)\n", "exp 16M f32",
           gbs, gbs / bw2, texp * 1e3);
    double bw3 = 2.0 * (double)bytes / tc3 / 1e9;
    gbs = (double)bytes / tsum / 1e9;
    printf("%-26s %8.1f GB/s   %.2f of memcpy   (%.2f ms)\n", "sum 16M f32",
           gbs, gbs / bw3, tsum * 1e3);
    cmx_array_release(j.a);
    cmx_array_release(j.b);
  }

  {
    const int n = 1024;
    int64_t sh[2] = {n, n};
    mm_job j;
    j.n = n;
    j.a = random_f32(sh, 2);
    j.b = random_f32(sh, 2);
    CK(cmx_array_eval(j.a));
    CK(cmx_array_eval(j.b));
    CK(cmx_array_data(j.a, (const void**)&j.pa));
    CK(cmx_array_data(j.b, (const void**)&j.pb));
    j.pc = aligned_alloc(64, (size_t)n * n * sizeof(float));
    memset(j.pc, 0, (size_t)n * n * sizeof(float));
    double flop = 2.0 * n * (double)n * n;
    /* The direct call gets as many threads as cmx's pool (cmx splits the
     * product over its pool with OpenBLAS single-threaded per part). */
    const char* nt = getenv("CMX_NUM_THREADS");
    if (openblas_set_num_threads && nt) openblas_set_num_threads(atoi(nt));
    double tb, tc;
    alternate(blas_mm_once, &j, cmx_mm_once, &j, 3, 15, &tb, &tc);
    double gc = flop / tc / 1e9, gb = flop / tb / 1e9;
    printf("%-26s %8.1f GFLOP/s   sgemm %.1f GFLOP/s   %.3f of sgemm\n",
           "matmul 1024^3 f32", gc, gb, gc / gb);
    free(j.pc);
    cmx_array_release(j.a);
    cmx_array_release(j.b);
  }

  {
    /* x + one where both have the same shape (no broadcast), then with a
     * 0-d `one` broadcast to x every step (the add op adds a Broadcast
     * node then), then all 0-d. */
    const int64_t four = 4;
    float v[4] = {1, 2, 3, 4}, o[4] = {1, 1, 1, 1};
    chain_job j;
    j.n = 10000;
    struct {
      const char* name;
      int xdim, odim;
    } cases[] = {{"graph add chain (4)+(4)", 1, 1},
                 {"graph add chain (4)+()", 1, 0},
                 {"graph add chain ()+()", 0, 0}};
    for (int c = 0; c < 3; c++) {
      CK(cmx_array_from_data(&j.x0, v, &four, cases[c].xdim, CMX_FLOAT32));
      CK(cmx_array_from_data(&j.one, o, &four, cases[c].odim, CMX_FLOAT32));
      double sec = median_time(chain_once, &j, 2, 11);
      printf("%-26s %8.2f us/op%s\n", cases[c].name, sec / j.n * 1e6,
             c ? "" : "   (build + eval of 10,000 dependent adds)");
      cmx_array_release(j.x0);
      cmx_array_release(j.one);
    }
  }
  return 0;
}
