/* The CPU stream backend: one worker thread per stream running its tasks
 * in order from a FIFO queue; small evals that run their tasks on the
 * caller's thread (claiming the stream); cancellation of an interrupted
 * eval's tasks; and fork().
 *
 * fork(): the child has only the forking thread, so the workers are gone.
 * A pthread_atfork handler first waits, up to CMX_FORK_WAIT_MS (5 s), for
 * the CPU kernels running now to end, while no new one starts (a task
 * that ran whole needs nothing in the child; and OpenBLAS's own fork
 * handler, which runs next, stops its threads under a product in flight,
 * leaving that product in the parent spinning forever). It then takes
 * the core's locks before fork() (the eval
 * lock, the stream table, each worker's lock, the allocator: the order in
 * which they nest), so the child's copies are consistent, and releases them
 * after. In the child each worker restarts on first use; tasks still queued
 * (and those of a batch the parent's worker, or an eval running a claimed
 * stream, had not started) run there. A task a parent thread was still
 * running at the fork (the wait timed out: a long kernel, or one waiting
 * for the forking thread) is "lost": its kernel may have written part of
 * its outputs, so the child's worker fails them (cmx__fork_lost_msg, a
 * RuntimeError in Python) and the tasks that read them fail in turn,
 * instead of reading a partial buffer or a missing one (that missing
 * buffer was a SIGSEGV in the child: tests/c/test_fork.c). PyTorch resets
 * its thread pool the same way.
 *
 * To know that task, whoever runs a stream's tasks (the worker, or an eval
 * holding the claim) publishes, per task t: live = t, then rest = t->next,
 * runs t, then live = NULL before freeing t. A child that finds live set
 * and rest past it has t unfreed and started: lost. live == rest: t had
 * not started. The stores are ordered (sequentially consistent or
 * release), which is what the fork's copy of memory observes on x86
 * (TSO); a release fence orders the free after live = NULL elsewhere.
 */
#include <stdlib.h>
#include <time.h>

#include "core/sched.h"

typedef struct cpu_worker {
  cmx__stream* stream;
  pthread_mutex_t lock;
  pthread_cond_t work, done; /* done uses CLOCK_MONOTONIC (timed waits) */
  cmx__task *head, *tail;
  uint64_t submitted;
  _Atomic int waiters;
  /* The smallest sequence number a waiter waits for (UINT64_MAX: none
   * registered): a finished task wakes the waiters only once it reaches
   * it, not after every task (a thread waiting for the last of a few
   * hundred small tasks was woken, and switched to, a few hundred times). */
  _Atomic uint64_t wake_at;
  /* Written under lock, read without it by cmx__cpu_try_claim (see
   * there): the worker is running a batch; an eval runs this stream's
   * tasks itself; head is not NULL. */
  _Atomic bool running, claimed, queued;
  bool alive; /* the worker thread exists (false in a forked child) */
  /* For a forked child (see the top): the task being run, and the tasks
   * of the batch or claimed list not started yet. */
  _Atomic(cmx__task*) live;
  _Atomic(cmx__task*) rest;
  /* In a forked child: the task the parent was running, queued first to
   * be failed by the worker (not a pointer to compare with elsewhere). */
  cmx__task* lost;
  /* Tasks lo..hi are cancelled (an interrupted eval's); any is set once a
   * range was ever given, so the worker looks only then (under lock). */
  _Atomic bool cancel_any;
  uint64_t cancel_lo, cancel_hi;
} cpu_worker;

static uint64_t task_seq(const cmx__task* t) {
  return t->arrays[t->nin]->seq;
}

static void init_sync(cpu_worker* w) {
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->work, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->done, &ca);
  pthread_condattr_destroy(&ca);
}

/* Marks task seq done and wakes its waiters when one waits for it (or
 * for an earlier task). */
static void cpu_complete(cpu_worker* w, uint64_t seq) {
  /* seq_cst store then loads: pairs with wait_register's store-then-check
   * so a waiter is never missed. */
  atomic_store(&w->stream->completed, seq);
  if (atomic_load(&w->waiters) && seq >= atomic_load(&w->wake_at)) {
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->wake_at, UINT64_MAX);
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->lock);
  }
}

/* Lock held: registers a wait for task seq (lowering wake_at to it) and
 * returns whether it is still unfinished, to be waited for. Woken waiters
 * register again (a wake-up resets wake_at). */
static bool wait_register(cpu_worker* w, uint64_t seq) {
  uint64_t cur = atomic_load(&w->wake_at);
  if (seq < cur) atomic_store(&w->wake_at, seq);
  return atomic_load(&w->stream->completed) < seq;
}

static bool is_cancelled(cpu_worker* w, uint64_t seq) {
  if (!atomic_load_explicit(&w->cancel_any, memory_order_acquire)) return false;
  pthread_mutex_lock(&w->lock);
  bool c = seq >= w->cancel_lo && seq <= w->cancel_hi;
  pthread_mutex_unlock(&w->lock);
  return c;
}

/* Set while a fork is prepared: tasks do not start (see fork_quiesce). */
static _Atomic int g_fork_pending;

static void sleep_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* Runs (or cancels) t, the first task of w's running batch or claimed
 * list, publishing it for a forked child (see the top), frees it and
 * marks it finished. */
static void settle(cpu_worker* w, cmx__task* t, bool cancel) {
  uint64_t seq = task_seq(t);
  /* Waiting for other streams comes first: a fork meanwhile does not
   * wait for it (the other stream may be held back by that fork). */
  if (!cancel) cmx__task_wait_deps(t);
  /* live = t then a look at g_fork_pending, fork_quiesce the reverse
   * (both sequentially consistent): either this sees the fork coming and
   * steps back until it is done, or the fork sees t and waits for it. */
  for (;;) {
    atomic_store(&w->live, t);
    if (!atomic_load(&g_fork_pending)) break;
    atomic_store(&w->live, NULL);
    while (atomic_load(&g_fork_pending)) sleep_us(50);
  }
  atomic_store_explicit(&w->rest, t->next, memory_order_release);
  int how = cancel ? CMX__TASK_CANCEL : CMX__TASK_RUN;
  if (t == w->lost) { /* only in a forked child */
    w->lost = NULL;
    how = CMX__TASK_LOST;
  }
  cmx__task_settle(t, how);
  atomic_store_explicit(&w->live, NULL, memory_order_release);
  atomic_thread_fence(memory_order_release); /* the free comes after */
  cmx__task_free(t);
  cpu_complete(w, seq);
}

static void* cpu_worker_main(void* arg) {
  cpu_worker* w = arg;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->head || atomic_load(&w->claimed))
      pthread_cond_wait(&w->work, &w->lock);
    /* Take the whole queue at once: fewer lock round trips. running is
     * set before queued is cleared (see cmx__cpu_try_claim). */
    cmx__task* batch = w->head;
    w->head = w->tail = NULL;
    atomic_store(&w->running, true);
    atomic_store(&w->queued, false);
    atomic_store(&w->rest, batch);
    pthread_mutex_unlock(&w->lock);
    while (batch) {
      cmx__task* t = batch;
      batch = t->next;
      settle(w, t, is_cancelled(w, task_seq(t)));
    }
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->running, false);
  }
  return NULL;
}

/* Starts the worker thread if it is not running (a forked child). Lock
 * held. False when no thread could be started. */
static bool ensure_thread(cpu_worker* w) {
  if (w->alive) return true;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  w->alive = pthread_create(&th, &attr, cpu_worker_main, w) == 0;
  pthread_attr_destroy(&attr);
  return w->alive;
}

static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static void register_fork_handlers(void);

void* cmx__cpu_worker_new(cmx__stream* s) {
  pthread_once(&g_fork_once, register_fork_handlers);
  cpu_worker* w = calloc(1, sizeof *w);
  if (!w) return CMX__FAIL(CMX_ERR_MEMORY, "[new_stream] out of host memory");
  w->stream = s;
  atomic_init(&w->wake_at, UINT64_MAX);
  init_sync(w);
  pthread_mutex_lock(&w->lock);
  bool ok = ensure_thread(w);
  pthread_mutex_unlock(&w->lock);
  if (!ok) {
    free(w);
    return CMX__FAIL(CMX_ERR_RUNTIME, "[new_stream] cannot start a thread");
  }
  return w;
}

static void cpu_wait(cmx__stream* s, uint64_t seq) {
  cpu_worker* w = s->backend;
  if (atomic_load_explicit(&s->completed, memory_order_acquire) >= seq) return;
  pthread_mutex_lock(&w->lock);
  ensure_thread(w);
  atomic_fetch_add(&w->waiters, 1);
  while (wait_register(w, seq)) pthread_cond_wait(&w->done, &w->lock);
  atomic_fetch_sub(&w->waiters, 1);
  pthread_mutex_unlock(&w->lock);
}

bool cmx__cpu_wait_for(cmx__stream* s, uint64_t seq, int ms) {
  cpu_worker* w = s->backend;
  if (atomic_load_explicit(&s->completed, memory_order_acquire) >= seq)
    return true;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += (long)ms * 1000000L;
  ts.tv_sec += ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&w->lock);
  ensure_thread(w);
  atomic_fetch_add(&w->waiters, 1);
  int rc = 0;
  while (rc == 0 && wait_register(w, seq))
    rc = pthread_cond_timedwait(&w->done, &w->lock, &ts);
  atomic_fetch_sub(&w->waiters, 1);
  pthread_mutex_unlock(&w->lock);
  return atomic_load(&s->completed) >= seq;
}

static void cpu_submit(cmx__stream* s, cmx__task* t) {
  cpu_worker* w = s->backend;
  uint64_t seq = task_seq(t);
  /* Backpressure: bound the tasks in flight. */
  uint64_t bound = (uint64_t)cmx__env_get()->max_inflight_tasks;
  if (seq > bound) cpu_wait(s, seq - bound);
  t->next = NULL;
  pthread_mutex_lock(&w->lock);
  if (w->tail)
    w->tail->next = t;
  else
    w->head = t;
  w->tail = t;
  atomic_store(&w->queued, true);
  w->submitted = seq;
  ensure_thread(w);
  pthread_cond_signal(&w->work);
  pthread_mutex_unlock(&w->lock);
}

void cmx__cpu_cancel(cmx__stream* s, uint64_t lo, uint64_t hi) {
  cpu_worker* w = s->backend;
  pthread_mutex_lock(&w->lock);
  w->cancel_lo = lo;
  w->cancel_hi = hi;
  atomic_store(&w->cancel_any, lo <= hi);
  pthread_mutex_unlock(&w->lock);
}

/* Running small evaluations on the caller's thread.
 *
 * Handing a task to the worker and waiting for it costs two thread wake-ups,
 * several microseconds: most of the time of a small eval (c = a + b on four
 * elements). When an eval is small, waits for its result, and its stream's
 * worker is idle with nothing queued, the eval claims the stream and runs
 * the tasks itself, in order. While the claim is held the worker runs
 * nothing, so tasks other threads queue meanwhile (with later sequence
 * numbers) still run after these; releasing the claim wakes the worker.
 *
 * Neither claiming nor releasing takes the worker's lock when nothing else
 * is queued (the path of every small eval on one thread). The claim is
 * made under the eval lock, which every submit holds too: while it is
 * held, queued cannot become true, and running becomes true only when the
 * worker takes a queued batch (it sets running before clearing queued),
 * so queued and running both false mean an idle worker that stays idle.
 * The release stores claimed = false and then reads queued (both seq_cst):
 * a submit made meanwhile is either seen (the worker is woken under its
 * lock) or comes later in that order, and then the worker's own check of
 * claimed, made under its lock after that submit, reads false. */
void cmx__cpu_claim_publish(cmx__stream* s, cmx__task* list) {
  cpu_worker* w = s->backend;
  atomic_store_explicit(&w->rest, list, memory_order_release);
}

bool cmx__cpu_try_claim(cmx__stream* s) {
  if (s->ops != &cmx__cpu_stream_ops) return false;
  cpu_worker* w = s->backend;
  if (atomic_load(&w->queued) || atomic_load(&w->running) ||
      atomic_load(&w->claimed))
    return false;
  atomic_store(&w->claimed, true);
  return true;
}

cmx_status cmx__cpu_run_claimed(cmx__stream* s, cmx__task* list) {
  cpu_worker* w = s->backend;
  cmx__error_mark mark = cmx__error_mark_get();
  int64_t last = 0;
  bool stop = false;
  while (list) {
    cmx__task* t = list;
    list = t->next;
    /* The first poll only starts the clock: an eval of one task skips it
     * (and the clock read it costs). */
    stop = stop || ((list || last) && cmx__interrupt_poll(&last));
    settle(w, t, stop);
  }
  cmx__error_mark_restore(mark); /* eval reports failures it waits for */
  atomic_store(&w->claimed, false);
  if (atomic_load(&w->queued)) {
    pthread_mutex_lock(&w->lock);
    if (w->head) {
      ensure_thread(w);
      pthread_cond_signal(&w->work);
    }
    pthread_mutex_unlock(&w->lock);
  }
  return stop ? CMX_ERR_INTERRUPTED : CMX_OK;
}

const cmx__stream_ops cmx__cpu_stream_ops = {
    .submit = cpu_submit, .wait = cpu_wait, .shutdown = NULL};

/* ---------------- fork ---------------- */

/* Calls fn on every CPU stream's worker, in index order. */
static void each_worker(void (*fn)(cpu_worker* w)) {
  for (int i = 0;; i++) {
    cmx__stream* s = cmx__stream_get(i);
    if (!s) break;
    if (s->ops == &cmx__cpu_stream_ops && s->backend) fn(s->backend);
  }
}

static void lock_worker(cpu_worker* w) {
  pthread_mutex_lock(&w->lock);
}
static void unlock_worker(cpu_worker* w) {
  pthread_mutex_unlock(&w->lock);
}

/* In the child (locks held by this thread from prepare): fresh sync
 * objects; the lost task (see the top) and the unstarted rest of a running
 * batch or claimed list queued again in front; every task before the first
 * queued one counted as finished (it ran). */
static void reset_worker(cpu_worker* w) {
  init_sync(w); /* the parent's waiters and worker do not exist here */
  atomic_store(&w->waiters, 0);
  atomic_store(&w->wake_at, UINT64_MAX);
  w->alive = false;
  w->lost = NULL;
  bool busy = atomic_load(&w->running) || atomic_load(&w->claimed);
  cmx__task* r = busy ? atomic_load(&w->rest) : NULL;
  cmx__task* live = busy ? atomic_load(&w->live) : NULL;
  if (live && live != r) { /* started, not freed: its next is r */
    w->lost = live;
    r = live;
  }
  if (r) {
    cmx__task* tail = r;
    while (tail->next) tail = tail->next;
    tail->next = w->head;
    if (!w->head) w->tail = tail;
    w->head = r;
  }
  atomic_store(&w->running, false);
  atomic_store(&w->claimed, false);
  atomic_store(&w->queued, w->head != NULL);
  atomic_store(&w->rest, NULL);
  atomic_store(&w->live, NULL);
  cmx__stream* s = w->stream;
  uint64_t done = w->head ? task_seq(w->head) - 1 : s->next_seq;
  if (atomic_load(&s->completed) < done) atomic_store(&s->completed, done);
}

/* Before fork(): stops tasks from starting, then waits (up to
 * CMX_FORK_WAIT_MS in all) for the ones running on every CPU stream. A
 * task that waits for the forking thread (a fork from inside a kernel, a
 * kernel that needs the GIL of a Python os.fork) keeps it waiting that
 * long and is then lost in the child (see the top). */
static void fork_quiesce(void) {
  atomic_store(&g_fork_pending, 1);
  int64_t deadline =
      cmx__now_ns() + (int64_t)cmx__env_get()->fork_wait_ms * 1000000;
  for (int i = 0;; i++) {
    cmx__stream* s = cmx__stream_get(i);
    if (!s) break;
    if (s->ops != &cmx__cpu_stream_ops || !s->backend) continue;
    cpu_worker* w = s->backend;
    while (atomic_load(&w->live) && cmx__now_ns() < deadline) sleep_us(50);
  }
}

static void fork_prepare(void) {
  fork_quiesce();
  cmx__eval_fork(CMX__FORK_PREPARE);
  cmx__streams_fork(CMX__FORK_PREPARE);
  each_worker(lock_worker);
  cmx__cpu_kernels_fork(CMX__FORK_PREPARE);
  cmx__mem_fork(CMX__FORK_PREPARE);
}

static void fork_parent(void) {
  cmx__mem_fork(CMX__FORK_PARENT);
  cmx__cpu_kernels_fork(CMX__FORK_PARENT);
  each_worker(unlock_worker);
  cmx__streams_fork(CMX__FORK_PARENT);
  cmx__eval_fork(CMX__FORK_PARENT);
  atomic_store(&g_fork_pending, 0);
}

static void fork_child(void) {
  cmx__mem_fork(CMX__FORK_CHILD);
  cmx__cpu_kernels_fork(CMX__FORK_CHILD);
  each_worker(reset_worker);
  cmx__streams_fork(CMX__FORK_CHILD);
  cmx__eval_fork(CMX__FORK_CHILD);
  atomic_store(&g_fork_pending, 0);
}

static void register_fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}
