/* The CPU thread pool for data-parallel kernels. One parallel_for runs at a
 * time; a caller that finds the pool busy (another stream's kernel) runs its
 * loop inline instead of waiting. Chunks are handed out with an atomic
 * counter; the calling thread takes chunks too. */
#include <stdlib.h>
#include "core/internal.h"

typedef struct {
  pthread_mutex_t busy; /* held by the thread running a parallel_for */
  pthread_mutex_t lock;
  pthread_cond_t start, finish;
  int nthreads; /* pool threads, excluding callers */
  uint64_t generation;
  /* the current job */
  void (*fn)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n, chunk, nchunks;
  _Atomic int64_t next_chunk;
  int active; /* pool threads still working on the job */
} pool_t;

static pool_t g_pool = {.busy = PTHREAD_MUTEX_INITIALIZER,
                        .lock = PTHREAD_MUTEX_INITIALIZER,
                        .start = PTHREAD_COND_INITIALIZER,
                        .finish = PTHREAD_COND_INITIALIZER};
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void run_chunks(void) {
  for (;;) {
    int64_t c = atomic_fetch_add(&g_pool.next_chunk, 1);
    if (c >= g_pool.nchunks) break;
    int64_t b = c * g_pool.chunk;
    int64_t e = b + g_pool.chunk < g_pool.n ? b + g_pool.chunk : g_pool.n;
    g_pool.fn(g_pool.ctx, b, e);
  }
}

static void* pool_main(void* arg) {
  (void)arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&g_pool.lock);
  for (;;) {
    while (g_pool.generation == seen) pthread_cond_wait(&g_pool.start, &g_pool.lock);
    seen = g_pool.generation;
    pthread_mutex_unlock(&g_pool.lock);
    run_chunks();
    pthread_mutex_lock(&g_pool.lock);
    if (--g_pool.active == 0) pthread_cond_signal(&g_pool.finish);
  }
  return NULL;
}

static void pool_init(void) {
  int want = cmx__env_get()->num_threads - 1;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < want; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, pool_main, NULL) != 0) break;
    g_pool.nthreads++;
  }
  pthread_attr_destroy(&attr);
}

int cmx__pool_threads(void) {
  pthread_once(&g_pool_once, pool_init);
  return g_pool.nthreads + 1;
}

void cmx__parallel_for(int64_t n, int64_t grain,
                       void (*fn)(void* ctx, int64_t begin, int64_t end),
                       void* ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int threads = cmx__pool_threads();
  if (threads == 1 || n < 2 * grain || pthread_mutex_trylock(&g_pool.busy)) {
    fn(ctx, 0, n);
    return;
  }
  int64_t parts = n / grain;
  if (parts > threads) parts = threads;
  pthread_mutex_lock(&g_pool.lock);
  g_pool.fn = fn;
  g_pool.ctx = ctx;
  g_pool.n = n;
  g_pool.chunk = (n + parts - 1) / parts;
  g_pool.nchunks = (n + g_pool.chunk - 1) / g_pool.chunk;
  atomic_store(&g_pool.next_chunk, 0);
  g_pool.active = g_pool.nthreads;
  g_pool.generation++;
  pthread_cond_broadcast(&g_pool.start);
  pthread_mutex_unlock(&g_pool.lock);
  run_chunks();
  pthread_mutex_lock(&g_pool.lock);
  while (g_pool.active > 0) pthread_cond_wait(&g_pool.finish, &g_pool.lock);
  pthread_mutex_unlock(&g_pool.lock);
  pthread_mutex_unlock(&g_pool.busy);
}
