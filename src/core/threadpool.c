/* The CPU thread pool for data-parallel kernels. One parallel_for runs at a
 * time; a caller that finds the pool busy (another stream's kernel) runs its
 * loop inline instead of waiting. Chunks are handed out with an atomic
 * counter; the calling thread takes chunks too.
 *
 * Waking is per worker and only as many as the job has chunks for: each
 * worker has its own "go" ticket and semaphore, so a small job on a big
 * machine does not wake every thread through one contended mutex (which
 * cost tens of microseconds per op on 16 cores). A worker that finishes
 * spins a little on its ticket before sleeping, and the caller spins a
 * little before sleeping on the job's end, so back-to-back kernels (a
 * training step) pay no system calls. Sleeping uses a flag-then-recheck
 * handshake on both sides (see worker_wait and caller_wait): a wake-up is
 * never lost, and a spare one only makes a sleeper look again.
 *
 * A woken worker joins the job (counts itself in `active`) only while the
 * job is open; the caller closes it once it finds no chunk left and then
 * waits only for the workers that joined. On a loaded machine a worker
 * may not get a CPU for milliseconds after its wake-up: the caller does
 * not wait for it (it runs the chunks itself), and the late worker finds
 * the job closed. Jobs are cut into one chunk a thread: cutting them finer
 * (4 a thread, so that a descheduled worker leaves the rest to others)
 * made short reductions 1.5-2x slower on an idle machine (bench_sweep's
 * `all` over axes (0, 2) of (64, 128, 256): 0.145 -> 0.35-0.42 ms). */
#include <semaphore.h>
#include <stdlib.h>

#include "core/internal.h"

/* Spin iterations before sleeping (each a CPU pause, ~10-40 ns). */
#define SPIN_ITERS 1000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

typedef struct worker {
  _Atomic uint64_t go;  /* the generation of the job to run */
  _Atomic int sleeping; /* 1 while in (or entering) sem_wait */
  sem_t wake;
  char pad[64]; /* keep workers' hot fields apart */
} worker;

typedef struct {
  pthread_mutex_t busy; /* held by the thread running a parallel_for */
  int nthreads;         /* pool threads, excluding callers */
  worker* workers;
  uint64_t generation; /* guarded by busy */
  /* the current job */
  void (*fn)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n, chunk, nchunks;
  _Atomic int64_t next_chunk;
  _Atomic int open;            /* 1 from the job's start to its close */
  _Atomic int active;          /* workers that joined, still on the job */
  _Atomic int caller_sleeping; /* the caller waits in sem_wait(done) */
  sem_t done;
} pool_t;

static pool_t g_pool = {.busy = PTHREAD_MUTEX_INITIALIZER};
static _Atomic bool g_pool_ready;
static pthread_mutex_t g_pool_init_lock = PTHREAD_MUTEX_INITIALIZER;

static void run_chunks(void) {
  for (;;) {
    int64_t c = atomic_fetch_add(&g_pool.next_chunk, 1);
    if (c >= g_pool.nchunks) break;
    int64_t b = c * g_pool.chunk;
    int64_t e = b + g_pool.chunk < g_pool.n ? b + g_pool.chunk : g_pool.n;
    g_pool.fn(g_pool.ctx, b, e);
  }
}

/* Waits until w's ticket differs from seen; returns the new ticket. */
static uint64_t worker_wait(worker* w, uint64_t seen) {
  for (;;) {
    for (int i = 0; i < SPIN_ITERS; i++) {
      uint64_t g = atomic_load_explicit(&w->go, memory_order_acquire);
      if (g != seen) return g;
      cpu_relax();
    }
    /* Flag, then look again: the caller stores the ticket, then reads the
     * flag (both sequentially consistent), so either it sees the flag and
     * posts, or this load sees the ticket. */
    atomic_store(&w->sleeping, 1);
    uint64_t g = atomic_load(&w->go);
    if (g == seen)
      while (sem_wait(&w->wake) != 0) {
      }
    atomic_store(&w->sleeping, 0);
    g = atomic_load(&w->go);
    if (g != seen) return g;
  }
}

static void* pool_main(void* arg) {
  worker* w = arg;
  uint64_t seen = 0;
  for (;;) {
    seen = worker_wait(w, seen);
    /* Join, then look whether the job is still open (both sequentially
     * consistent, as the caller's close and its read of active): either
     * the caller sees this worker in active and waits for it, or this
     * worker sees the job closed and leaves it alone. A worker woken for
     * an earlier job may join a later one: it only runs its chunks. */
    atomic_fetch_add(&g_pool.active, 1);
    if (atomic_load(&g_pool.open)) run_chunks();
    if (atomic_fetch_sub(&g_pool.active, 1) == 1 &&
        atomic_load(&g_pool.caller_sleeping))
      sem_post(&g_pool.done);
  }
  return NULL;
}

/* The caller's wait for the woken workers to finish the job. */
static void caller_wait(void) {
  for (int i = 0; i < SPIN_ITERS; i++) {
    if (atomic_load_explicit(&g_pool.active, memory_order_acquire) == 0) return;
    cpu_relax();
  }
  atomic_store(&g_pool.caller_sleeping, 1);
  while (atomic_load(&g_pool.active) != 0)
    while (sem_wait(&g_pool.done) != 0) {
    }
  atomic_store(&g_pool.caller_sleeping, 0);
  /* A post that raced with the last check above leaves the semaphore at
   * one: drain it so the next job's wait does not return early (that wait
   * would look at active again anyway). */
  while (sem_trywait(&g_pool.done) == 0) {
  }
}

/* fork(): the child has none of the pool's threads, so it starts a new
 * pool on first use (PyTorch does the same); the old workers' records are
 * dropped. The busy lock may have been held by a parent thread. */
static void pool_atfork_child(void) {
  pthread_mutex_init(&g_pool.busy, NULL);
  pthread_mutex_init(&g_pool_init_lock, NULL);
  g_pool.nthreads = 0;
  g_pool.workers = NULL;
  atomic_store(&g_pool.caller_sleeping, 0);
  atomic_store(&g_pool.open, 0);
  atomic_store(&g_pool.active, 0);
  atomic_store(&g_pool_ready, false);
}

static void pool_init(void) {
  static bool registered;
  if (!registered)
    registered = pthread_atfork(NULL, NULL, pool_atfork_child) == 0;
  int want = cmx__env_get()->num_threads - 1;
  sem_init(&g_pool.done, 0, 0);
  if (want <= 0) return;
  g_pool.workers = calloc((size_t)want, sizeof *g_pool.workers);
  if (!g_pool.workers) return; /* no pool: loops run on the caller */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < want; i++) {
    worker* w = &g_pool.workers[i];
    sem_init(&w->wake, 0, 0);
    pthread_t t;
    if (pthread_create(&t, &attr, pool_main, w) != 0) break;
    g_pool.nthreads++;
  }
  pthread_attr_destroy(&attr);
}

int cmx__pool_threads(void) {
  if (!atomic_load_explicit(&g_pool_ready, memory_order_acquire)) {
    pthread_mutex_lock(&g_pool_init_lock);
    if (!atomic_load(&g_pool_ready)) {
      pool_init();
      atomic_store(&g_pool_ready, true);
    }
    pthread_mutex_unlock(&g_pool_init_lock);
  }
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
  int helpers = (int)parts - 1; /* workers to wake; the caller is one more */
  g_pool.fn = fn;
  g_pool.ctx = ctx;
  g_pool.n = n;
  g_pool.chunk = (n + parts - 1) / parts;
  g_pool.nchunks = (n + g_pool.chunk - 1) / g_pool.chunk;
  atomic_store(&g_pool.next_chunk, 0);
  atomic_store(&g_pool.open, 1);
  uint64_t gen = ++g_pool.generation;
  for (int i = 0; i < helpers; i++) {
    worker* w = &g_pool.workers[i];
    atomic_store(&w->go, gen);
    if (atomic_load(&w->sleeping)) sem_post(&w->wake);
  }
  run_chunks();
  atomic_store(&g_pool.open, 0); /* no chunk left: late workers stay out */
  caller_wait();
  pthread_mutex_unlock(&g_pool.busy);
}
