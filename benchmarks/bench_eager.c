/* Host cost of eager ops through the C API, on tiny (4-element float32)
 * arrays, so that the time is cmx's bookkeeping and not arithmetic:
 *
 *   chain N        build N dependent adds, then one eval (N = 1,000 runs
 *                  on the caller's thread; 10,000 on the stream's worker)
 *   eager add      c = a + b then eval(c), one op per eval
 *   build only     c = a + b (graph node made and released, no eval)
 *
 * Figures are microseconds per op: the median of several repetitions, by
 * wall clock and by the process's CPU time (the machine may be shared:
 * CPU time counts what cmx itself spent, on every thread).
 * Run: build/bench_eager  (CMX_NUM_THREADS=2 unless set)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_graph.h"
#include "bench_time.h"
#include "cmx/cmx.h"

#define S CMX_STREAM_DEFAULT
#define CK(x)                                                               \
  do {                                                                      \
    if ((x) != CMX_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cmx_last_error()); \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  cmx_array a, b;
  int n;
  bool eval; /* single adds: each evaluated, or only built */
} job;

static void chain(job* j) {
  CK(bench_add_chain(j->a, j->b, j->n, S));
}

static void single(job* j) {
  for (int i = 0; i < j->n; i++) {
    cmx_array y;
    CK(cmx_add(&y, j->a, j->b, S));
    if (j->eval) CK(cmx_array_eval(y));
    cmx_array_release(y);
  }
}

/* Median wall and CPU microseconds per op of fn over reps runs. */
static void measure(const char* name, void (*fn)(job*), job* j, int reps) {
  double w[64], c[64];
  fn(j); /* warm: streams, caches */
  for (int r = 0; r < reps; r++) {
    double t0 = now(), c0 = cpu_now();
    fn(j);
    w[r] = (now() - t0) / j->n * 1e6;
    c[r] = (cpu_now() - c0) / j->n * 1e6;
  }
  qsort(w, (size_t)reps, sizeof(double), cmp_double);
  qsort(c, (size_t)reps, sizeof(double), cmp_double);
  printf("%-24s %7.3f us/op wall  %7.3f us/op cpu  (median of %d)\n", name,
         w[reps / 2], c[reps / 2], reps);
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 0);
  const float v[4] = {1, 2, 3, 4}, o[4] = {1, 1, 1, 1};
  const int64_t four = 4;
  job j;
  CK(cmx_array_from_data(&j.a, v, &four, 1, CMX_FLOAT32));
  CK(cmx_array_from_data(&j.b, o, &four, 1, CMX_FLOAT32));
  j.n = 1000;
  measure("chain 1000 (inline)", chain, &j, 21);
  j.n = 10000;
  measure("chain 10000 (worker)", chain, &j, 11);
  j.n = 2000;
  j.eval = true;
  measure("eager add + eval", single, &j, 21);
  j.eval = false;
  measure("build only", single, &j, 21);
  cmx_array_release(j.a);
  cmx_array_release(j.b);
  return 0;
}
