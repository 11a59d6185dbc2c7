/* Elementwise throughput on 16M float32 elements, against the memory
 * floor measured in the same run (cmx's negative: one read and one write
 * per element, no arithmetic to speak of). Prints milliseconds, GB/s of
 * traffic and the ratio to the floor.
 *
 *   ./build/bench_elementwise            (CMX_NUM_THREADS picks threads)
 */
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

typedef cmx_status (*un_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*bin_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);

/* Best of 7 evaluations (the output is allocated inside, as in use). */
static double time_op(un_fn u, bin_fn b, cmx_array x, cmx_array y) {
  double best = 1e30;
  for (int r = 0; r < 7; r++) {
    cmx_array o = NULL;
    if ((u ? u(&o, x, S) : b(&o, x, y, S)) != CMX_OK) {
      fprintf(stderr, "failed: %s\n", cmx_last_error());
      exit(1);
    }
    double t0 = now();
    cmx_array_eval(o);
    double t = now() - t0;
    if (t < best) best = t;
    cmx_array_release(o);
  }
  return best;
}

int main(void) {
  int64_t n = 16 << 20;
  float* v = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 2000 - 1000) * 0.01f;
  cmx_array x, y;
  cmx_array_from_data(&x, v, &n, 1, CMX_FLOAT32);
  cmx_array_from_data(&y, v, &n, 1, CMX_FLOAT32);
  free(v);
  double floor1 = time_op(cmx_negative, NULL, x, NULL);
  printf("16M float32, memory floor (negative): %.2f ms\n", floor1 * 1e3);
  struct {
    const char* name;
    un_fn u;
    bin_fn b;
  } ops[] = {
      {"exp", cmx_exp, NULL},         {"sigmoid", cmx_sigmoid, NULL},
      {"sqrt", cmx_sqrt, NULL},       {"abs", cmx_abs, NULL},
      {"tanh", cmx_tanh, NULL},       {"log", cmx_log, NULL},
      {"add", NULL, cmx_add},         {"multiply", NULL, cmx_multiply},
      {"maximum", NULL, cmx_maximum}, {"less", NULL, cmx_less},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    double t = time_op(ops[k].u, ops[k].b, x, y);
    double bytes = (double)n * (ops[k].u ? 8.0 : 12.0);
    /* binary ops move 1.5x the floor's bytes */
    double floor_t = floor1 * (ops[k].u ? 1.0 : 1.5);
    printf("%-9s %8.2f ms  %6.2f GB/s  %5.2fx floor\n", ops[k].name, t * 1e3,
           bytes / t / 1e9, t / floor_t);
  }
  cmx_array_release(x);
  cmx_array_release(y);
  return 0;
}
