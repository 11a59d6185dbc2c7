/* The CPU thread pool (core/threadpool.c): every index of a
 * parallel_for runs exactly once, whatever the size, grain and thread
 * count; jobs from several threads at once (one gets the pool, the others
 * run inline); nested loops; back-to-back jobs that catch workers spinning
 * or asleep. The pool has 4 threads here (CMX_NUM_THREADS). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/internal.h"
#include "test.h"

typedef struct cover {
  _Atomic int* hits;
  int64_t n;
  int nested; /* run a nested parallel_for over each chunk */
} cover;

static void mark(void* ctx, int64_t b, int64_t e) {
  cover* c = ctx;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void mark_nested(void* ctx, int64_t b, int64_t e) {
  cover* c = ctx;
  cover inner = {c->hits + b, e - b, 0};
  cmx__parallel_for(e - b, 1, mark, &inner);
}

/* Runs one parallel_for over n indices; true when each ran once. */
static bool run_once(int64_t n, int64_t grain, int nested) {
  _Atomic int* hits = calloc((size_t)(n ? n : 1), sizeof *hits);
  cover c = {hits, n, nested};
  cmx__parallel_for(n, grain, nested ? mark_nested : mark, &c);
  bool ok = true;
  for (int64_t i = 0; i < n; i++) ok &= atomic_load(&hits[i]) == 1;
  free((void*)hits);
  return ok;
}

static void test_coverage(void) {
  int64_t sizes[] = {0, 1, 2, 3, 4, 5, 17, 1000, 100003};
  int64_t grains[] = {1, 2, 7, 1000, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
      CHECK_MSG(run_once(sizes[i], grains[g], 0),
                "parallel_for n=%lld grain=%lld", (long long)sizes[i],
                (long long)grains[g]);
  CHECK(run_once(1000, 10, 1)); /* nested loops run inline */
}

/* Back to back, then after pauses long enough for workers to sleep. */
static void test_spin_and_sleep(void) {
  bool ok = true;
  for (int i = 0; i < 2000 && ok; i++) ok = run_once(64 + i % 7, 1, 0);
  CHECK(ok);
  for (int i = 0; i < 20 && ok; i++) {
    struct timespec ts = {0, 2000000}; /* 2 ms */
    nanosleep(&ts, NULL);
    ok = run_once(1000, 1, 0);
  }
  CHECK(ok);
}

static void* hammer(void* arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int i = 0; i < 1500; i++) {
    seed = seed * 1103515245u + 12345u;
    int64_t n = 1 + (seed >> 8) % 5000;
    if (!run_once(n, 1 + (seed >> 20) % 64, (seed >> 4) % 5 == 0))
      return (void*)1;
  }
  return NULL;
}

static void test_concurrent_callers(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, hammer, (void*)(uintptr_t)(i + 1));
  for (int i = 0; i < 4; i++) {
    void* r;
    pthread_join(t[i], &r);
    CHECK(r == NULL);
  }
}

int main(void) {
  setenv("CMX_NUM_THREADS", "4", 1);
  CHECK(cmx__pool_threads() == 4);
  RUN(test_coverage);
  RUN(test_spin_and_sleep);
  RUN(test_concurrent_callers);
  return test_summary("test_threadpool");
}
