/* compile_bench: the gelu of compile.rst, x * (1 + erf(x / sqrt(2))) / 2
 * on (32, 1000, 4096) float32, eager against compiled (one fused kernel),
 * and against hand-written C loops of the same math on as many threads as
 * cmx's pool (CMX_NUM_THREADS, else the CPUs the process may use): one
 * with libm's erff, one with the vectorised erf cmx's kernels use. Both
 * loops are compiled for AVX-512, AVX2 and baseline x86-64 as cmx's own
 * transcendental rows are. Also the first call's latency (trace, passes,
 * C compiler, dlopen) with a cold and a warm disk cache, each in a fresh
 * process.
 *
 *   build/compile_bench [--size N]      (N elements; default 32*1000*4096)
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmx/cmx.h"

/* The float32 erf cmx's kernels compute (header-only). */
#include "../src/backend/cpu/vmath.h"

#define S CMX_STREAM_DEFAULT

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of the whole process (every thread): on a shared machine it
 * counts the work done, where wall time also counts waiting for a core. */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static cmx_status gelu(void* payload, const cmx_array* in, int n,
                       cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array s2 = NULL, one = NULL, two = NULL, a = NULL, b = NULL, c = NULL,
            d = NULL, e = NULL;
  cmx_array_weak_float(&s2, sqrt(2.0));
  cmx_array_weak_float(&one, 1.0);
  cmx_array_weak_float(&two, 2.0);
  cmx_divide(&a, in[0], s2, S);
  cmx_erf(&b, a, S);
  cmx_add(&c, one, b, S);
  cmx_multiply(&d, in[0], c, S);
  cmx_divide(&e, d, two, S);
  cmx_array_release_all((cmx_array[]){s2, one, two, a, b, c, d}, 7);
  *out = malloc(sizeof(cmx_array));
  (*out)[0] = e;
  *nout = 1;
  return e ? CMX_OK : cmx_last_status();
}

/* ---------------- hand-written loops ---------------- */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

CLONES static void loop_libm(const float* x, float* y, int64_t n) {
  const float s2 = (float)sqrt(2.0);
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * (1.0f + erff(x[i] / s2)) / 2.0f;
}

CLONES static void loop_cmx(const float* x, float* y, int64_t n) {
  const float s2 = (float)sqrt(2.0);
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] * (1.0f + cmx__verff(x[i] / s2)) / 2.0f;
}

typedef struct {
  const float* x;
  float* y;
  int64_t n;
  void (*fn)(const float*, float*, int64_t);
} job;

static void* run_job(void* p) {
  job* j = p;
  j->fn(j->x, j->y, j->n);
  return NULL;
}

static int g_threads;

static void hand(void (*fn)(const float*, float*, int64_t), const float* x,
                 float* y, int64_t n) {
  pthread_t th[256];
  job jobs[256];
  int t = g_threads < 1 ? 1 : g_threads > 256 ? 256 : g_threads;
  int64_t chunk = (n + t - 1) / t;
  for (int i = 0; i < t; i++) {
    int64_t b = i * chunk, e = b + chunk < n ? b + chunk : n;
    jobs[i] = (job){x + b, y + b, e > b ? e - b : 0, fn};
    if (i) pthread_create(&th[i], NULL, run_job, &jobs[i]);
  }
  run_job(&jobs[0]);
  for (int i = 1; i < t; i++) pthread_join(th[i], NULL);
}

static int pool_threads(void) {
  const char* v = getenv("CMX_NUM_THREADS");
  if (v && atoi(v) > 0) return atoi(v);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* ---------------- first-call latency (a child process) ---------------- */

static int latency_child(void) {
  cmx_compiled* cf = NULL;
  cmx_compile(&cf, (cmx_closure){gelu, NULL}, NULL);
  float v[1000];
  for (int i = 0; i < 1000; i++) v[i] = (float)i / 500.f - 1.f;
  int64_t n = 1000;
  cmx_array x = NULL;
  cmx_array_from_data(&x, v, &n, 1, CMX_FLOAT32);
  double t0 = now();
  cmx_array* o = NULL;
  int no = 0;
  if (cmx_compiled_call(cf, &x, 1, &o, &no) != CMX_OK ||
      cmx_array_eval(o[0]) != CMX_OK) {
    fprintf(stderr, "%s\n", cmx_last_error());
    return 1;
  }
  double t1 = now();
  cmx_compile_stats s;
  cmx_compile_stats_get(&s);
  printf("%.3f %llu %llu\n", (t1 - t0) * 1e3,
         (unsigned long long)s.kernels_built, (unsigned long long)s.disk_hits);
  cmx_arrays_free(o, no);
  cmx_array_release(x);
  cmx_compiled_release(cf);
  return 0;
}

static double child_latency(const char* self, const char* dir, char* kind,
                            size_t size) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "CMX_CACHE_DIR='%s' '%s' --latency-child", dir,
           self);
  FILE* p = popen(cmd, "r");
  double ms = -1;
  unsigned long long built = 0, hits = 0;
  if (p && fscanf(p, "%lf %llu %llu", &ms, &built, &hits) != 3) ms = -1;
  if (p) pclose(p);
  snprintf(kind, size, "%s", built ? "compiler ran" : hits ? "disk hit" : "?");
  return ms;
}

/* ---------------- main ---------------- */

typedef void (*bench_fn)(void* ctx);

/* One timed run: wall and process CPU seconds. */
static void timed(bench_fn fn, void* ctx, double* wall, double* cpu) {
  double w0 = now(), c0 = cpu_now();
  fn(ctx);
  double w = now() - w0, c = cpu_now() - c0;
  if (w < *wall) *wall = w;
  if (c < *cpu) *cpu = c;
}

typedef struct {
  cmx_array x;
  cmx_compiled* cf;
  const float* xp;
  float* yp;
  int64_t n;
} ctx_t;

static void b_eager(void* p) {
  ctx_t* c = p;
  cmx_array* o;
  int no;
  gelu(NULL, &c->x, 1, &o, &no);
  cmx_array_eval(o[0]);
  cmx_arrays_free(o, no);
}
static void b_compiled(void* p) {
  ctx_t* c = p;
  cmx_array* o;
  int no;
  cmx_compiled_call(c->cf, &c->x, 1, &o, &no);
  cmx_array_eval(o[0]);
  cmx_arrays_free(o, no);
}
static void b_libm(void* p) {
  ctx_t* c = p;
  hand(loop_libm, c->xp, c->yp, c->n);
}
static void b_cmx(void* p) {
  ctx_t* c = p;
  hand(loop_cmx, c->xp, c->yp, c->n);
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--latency-child")) return latency_child();
  int64_t n = 32LL * 1000 * 4096;
  if (argc > 2 && !strcmp(argv[1], "--size")) n = atoll(argv[2]);
  g_threads = pool_threads();
  if (g_threads > 256) g_threads = 256;

  /* first-call latency: cold then warm cache, fresh processes */
  char dir[] = "/tmp/cmx-compile-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char k1[32], k2[32];
  double cold = child_latency(argv[0], dir, k1, sizeof k1);
  double warm = child_latency(argv[0], dir, k2, sizeof k2);
  char rm[256];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", dir);

  ctx_t c = {.n = n};
  int64_t shape[1] = {n};
  cmx_array key = NULL;
  cmx_random_key(&key, 0);
  if (cmx_random_uniform(&c.x, NULL, NULL, shape, 1, CMX_FLOAT32, key, S) !=
          CMX_OK ||
      cmx_array_eval(c.x) != CMX_OK) {
    fprintf(stderr, "%s\n", cmx_last_error());
    return 1;
  }
  cmx_array_data(c.x, (const void**)&c.xp);
  c.yp = malloc((size_t)n * sizeof(float));
  cmx_compile(&c.cf, (cmx_closure){gelu, NULL}, NULL);
  b_compiled(&c); /* trace and build outside the timing */
  b_libm(&c);
  b_cmx(&c);
  int reps = n > 10000000 ? 5 : 20;
  bench_fn fns[4] = {b_eager, b_compiled, b_libm, b_cmx};
  const char* names[4] = {"eager (5 ops)", "compiled (1 fused kernel)",
                          "hand C loop, libm erff", "hand C loop, cmx's erf"};
  double wall[4], cpu[4];
  for (int k = 0; k < 4; k++) wall[k] = cpu[k] = 1e30;
  for (int r = 0; r < reps; r++) /* in turns: slow spells hit all */
    for (int k = 0; k < 4; k++) timed(fns[k], &c, &wall[k], &cpu[k]);
  double gb = 2.0 * (double)n * 4 / 1e9;
  printf(
      "compile_bench: gelu on %lld float32 elements, %d threads, best of "
      "%d (wall; process CPU time)\n",
      (long long)n, g_threads, reps);
  for (int k = 0; k < 4; k++)
    printf("  %-28s %9.2f ms wall %9.2f ms cpu  %5.1f GB/s\n", names[k],
           wall[k] * 1e3, cpu[k] * 1e3, gb / wall[k]);
  printf("  compiled vs eager: %.2fx faster (wall), %.2fx (cpu)\n",
         wall[0] / wall[1], cpu[0] / cpu[1]);
  printf("  compiled / hand loop (libm erff): %.2f (wall), %.2f (cpu)\n",
         wall[1] / wall[2], cpu[1] / cpu[2]);
  printf("  compiled / hand loop (cmx's erf): %.2f (wall), %.2f (cpu)\n",
         wall[1] / wall[3], cpu[1] / cpu[3]);
  printf(
      "  first call (trace+cc+dlopen): cold cache %.1f ms (%s), warm "
      "cache %.1f ms (%s)\n",
      cold, k1, warm, k2);
  cmx_compiled_release(c.cf);
  cmx_array_release_all((cmx_array[]){c.x, key}, 2);
  free(c.yp);
  return 0;
}
