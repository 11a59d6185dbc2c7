/* Timing helpers of the C benchmarks (benchmarks/bench_*.c). */
#ifndef CMX_BENCH_TIME_H
#define CMX_BENCH_TIME_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* qsort's comparison of doubles, ascending. */
static inline int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Median seconds of reps calls (at most 64) of fn after warm calls. */
static inline double median_time(void (*fn)(void*), void* ctx, int warm,
                                 int reps) {
  for (int i = 0; i < warm; i++) fn(ctx);
  double t[64];
  if (reps > 64) reps = 64;
  for (int i = 0; i < reps; i++) {
    double t0 = now();
    fn(ctx);
    t[i] = now() - t0;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp_double);
  return reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
}

#endif
