/* fork() while a thread of the parent is inside a kernel. A "Gate"
 * extension primitive writes half of its output, says it has started and
 * waits until the test opens it (or a set time has passed), so the fork
 * lands mid-kernel every time: on the stream's worker (async_eval) and on
 * an eval's own thread (a small eval runs its tasks itself).
 *
 * fork() waits for running kernels (CMX_FORK_WAIT_MS, 300 ms here): a
 * kernel that ends meanwhile leaves the child everything computed. One
 * that does not (the gate opens only after the child exits) is lost in
 * the child, which must neither crash nor hang nor read the half-written
 * output: the array fails with the fork error, so do the arrays computed
 * from it, and unrelated queued work and new work compute. Before the fix
 * the child read the half-written output as a result, and a task reading
 * an output the parent's eval thread never computed dereferenced its
 * missing buffer (SIGSEGV). Last, a stress case forks at varied points of
 * a chain of matrix products in flight (the tests/python/
 * test_reliability.py case that crashed in CI). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT
#define N 4096

static _Atomic int g_entered, g_open;
static _Atomic long g_auto_open_us; /* > 0: the gate opens by itself */

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* out = in + 1, the second half written only once the gate is open. */
static cmx_status gate_cpu(const cmx_primitive* p, const cmx_array* in,
                           int nin, const cmx_array* out, int nout) {
  (void)p, (void)nin, (void)nout;
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  const float* x = cmx_kernel_data(in[0]);
  float* y = cmx_kernel_data(out[0]);
  int64_t n = cmx_array_size(out[0]);
  for (int64_t i = 0; i < n / 2; i++) y[i] = x[i] + 1;
  atomic_store(&g_entered, 1);
  long auto_us = atomic_load(&g_auto_open_us);
  for (long waited = 0; !atomic_load(&g_open); waited += 1000) {
    if (auto_us > 0 && waited >= auto_us) break;
    if (waited > 30000000) /* 30 s: never wait forever in a broken run */
      return cmx_kernel_error(CMX_ERR_RUNTIME, "[Gate] never opened");
    sleep_us(1000);
  }
  for (int64_t i = n / 2; i < n; i++) y[i] = x[i] + 1;
  return CMX_OK;
}

static const cmx_primitive_vtable gate_vt = {
    .name = "Gate", .flags = CMX_PRIM_EXTERNAL, .id = -1, .eval_cpu = gate_cpu};

static cmx_array gate(cmx_array x) {
  cmx_primitive* p = cmx_primitive_new(&gate_vt, NULL, 0, S);
  const int64_t* shapes[1] = {cmx_array_shape(x)};
  int ndims[1] = {cmx_array_ndim(x)};
  cmx_dtype dts[1] = {CMX_FLOAT32};
  cmx_array out = NULL;
  OK(cmx_primitive_apply(&out, 1, p, &x, 1, shapes, ndims, dts));
  return out;
}

/* Whether every element of a is v. */
static bool all_equal(cmx_array a, float v) {
  size_t n = (size_t)cmx_array_size(a);
  float* buf = malloc(n * sizeof *buf);
  bool ok = buf && cmx_array_copy_to(a, buf, n * sizeof *buf) == CMX_OK;
  for (size_t i = 0; ok && i < n; i++) ok = buf[i] == v;
  free(buf);
  return ok;
}

static cmx_array filled(float v) {
  int64_t n = N;
  cmx_array a = NULL;
  cmx_array s = NULL;
  OK(cmx_array_from_double(&s, v, CMX_FLOAT32));
  OK(cmx_full(&a, &n, 1, s, CMX_FLOAT32, S));
  cmx_array_release(s);
  OK(cmx_array_eval(a));
  return a;
}

/* New work in a child: computes. */
static void fresh_work_computes(void) {
  cmx_array a = filled(2), b = NULL;
  OK(cmx_multiply(&b, a, a, S));
  CHECK(all_equal(b, 4));
  cmx_array_release_all((cmx_array[]){a, b}, 2);
}

/* Forks once the gate's kernel has started; the child runs child_fn (its
 * CHECKs decide its exit status) while the parent waits for it, then the
 * gate opens. */
static void fork_in_gate(void (*child_fn)(void* ctx), void* ctx) {
  for (int i = 0; i < 30000 && !atomic_load(&g_entered); i++) sleep_us(1000);
  CHECK(atomic_load(&g_entered));
  fflush(NULL);
  int failed_before = t_failed;
  pid_t pid = fork();
  if (pid == 0) {
    alarm(60); /* a hang fails the parent's check instead of the suite */
    child_fn(ctx);
    _exit(t_failed == failed_before ? 0 : 1);
  }
  CHECK(pid > 0);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "child status %d (signal %d)", status,
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  atomic_store(&g_open, 1);
}

typedef struct {
  cmx_array x, three, g, y, w;
} worker_case;

/* The worker cases' graph: g = gate(x) (x = 1), y = g + x queued behind it
 * and w = 3 + 3 on the same stream, both handed to the worker by
 * async_eval. auto_open_us > 0: the gate opens by itself after that long. */
static worker_case worker_case_start(long auto_open_us) {
  atomic_store(&g_entered, 0);
  atomic_store(&g_open, 0);
  atomic_store(&g_auto_open_us, auto_open_us);
  worker_case c = {filled(1), filled(3), NULL, NULL, NULL};
  c.g = gate(c.x);
  OK(cmx_add(&c.y, c.g, c.x, S));
  OK(cmx_add(&c.w, c.three, c.three, S));
  OK(cmx_async_eval(&c.y, 1));
  OK(cmx_async_eval(&c.w, 1));
  return c;
}

static void worker_case_release(worker_case* c) {
  cmx_array_release_all((cmx_array[]){c->x, c->three, c->g, c->y, c->w}, 5);
}

static void worker_child(void* ctx) {
  worker_case* c = ctx;
  FAILS(cmx_array_eval(c->g), CMX_ERR_RUNTIME, "process forked");
  FAILS(cmx_array_eval(c->y), CMX_ERR_RUNTIME, "process forked");
  CHECK(all_equal(c->w, 6)); /* queued behind the lost task: computes */
  fresh_work_computes();
}

static void test_fork_in_a_kernel_on_the_worker(void) {
  worker_case c = worker_case_start(0);
  fork_in_gate(worker_child, &c);
  CHECK(all_equal(c.g, 2)); /* the parent computes them all */
  CHECK(all_equal(c.y, 3));
  CHECK(all_equal(c.w, 6));
  worker_case_release(&c);
}

static void waited_child(void* ctx) {
  worker_case* c = ctx;
  CHECK(all_equal(c->g, 2)); /* the fork waited for the gate's kernel */
  CHECK(all_equal(c->y, 3));
  CHECK(all_equal(c->w, 6));
  fresh_work_computes();
}

static void test_fork_waits_for_a_running_kernel(void) {
  worker_case c = worker_case_start(50000); /* 50 ms, within the 300 */
  fork_in_gate(waited_child, &c);
  CHECK(all_equal(c.y, 3));
  CHECK(all_equal(c.w, 6));
  worker_case_release(&c);
}

typedef struct {
  cmx_array x, r;
  cmx_status st;
} claimed_case;

static void* claimed_eval(void* arg) {
  claimed_case* c = arg;
  c->st = cmx_array_eval(c->r); /* two ops: run on this thread */
  return NULL;
}

static void claimed_child(void* ctx) {
  claimed_case* c = ctx;
  FAILS(cmx_array_eval(c->r), CMX_ERR_RUNTIME, "process forked");
  cmx_array m = NULL; /* was a SIGSEGV: r's buffer never existed */
  OK(cmx_multiply(&m, c->r, c->x, S));
  FAILS(cmx_array_eval(m), CMX_ERR_RUNTIME, "process forked");
  cmx_array_release(m);
  fresh_work_computes();
}

static void test_fork_in_a_kernel_on_an_eval_thread(void) {
  atomic_store(&g_entered, 0);
  atomic_store(&g_open, 0);
  atomic_store(&g_auto_open_us, 0);
  claimed_case c = {filled(1), NULL, CMX_OK};
  cmx_array g = gate(c.x);
  OK(cmx_add(&c.r, g, c.x, S));
  cmx_array_release(g);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, claimed_eval, &c) == 0);
  fork_in_gate(claimed_child, &c);
  pthread_join(th, NULL);
  CHECK(c.st == CMX_OK);
  CHECK(all_equal(c.r, 3));
  cmx_array_release_all((cmx_array[]){c.x, c.r}, 2);
}

/* The chain of tests/python/test_reliability.py's in-flight case: forks
 * land in products (BLAS, the thread pool), between tasks, or after the
 * last; the child gets the right values or the fork error, never a crash,
 * a hang or a wrong value. */
static cmx_array chain(cmx_array x, cmx_array d, int depth) {
  cmx_array y = cmx_array_retain(x);
  for (int i = 0; i < depth; i++) {
    cmx_array m = NULL, t = NULL, q = NULL;
    OK(cmx_matmul(&m, y, x, S));
    OK(cmx_tanh(&t, m, S));
    OK(cmx_divide(&q, t, d, S));
    cmx_array_release_all((cmx_array[]){m, t, y}, 3);
    y = q;
  }
  return y;
}

static void test_fork_with_products_in_flight(void) {
  int64_t sh[2] = {128, 128};
  cmx_array x = NULL, d = NULL;
  OK(cmx_ones(&x, sh, 2, CMX_FLOAT32, S));
  OK(cmx_array_weak_float(&d, 128.0));
  cmx_array want = chain(x, d, 40);
  OK(cmx_array_eval(want));
  int computed = 0, failed = 0;
  for (int it = 0; it < 20; it++) {
    cmx_array y = chain(x, d, 40);
    OK(cmx_async_eval(&y, 1));
    sleep_us(it * 150); /* 0 .. 3 ms: the chain takes a few ms */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(60);
      cmx_array e = NULL;
      bool same = false;
      cmx_status st = cmx_array_eval(y);
      if (st != CMX_OK)
        _exit(strstr(cmx_last_error(), "process forked") ? 2 : 3);
      if (cmx_array_equal(&e, y, want, false, S) != CMX_OK ||
          cmx_array_item_bool(e, &same) != CMX_OK || !same)
        _exit(4);
      _exit(0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    bool clean = WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
                                       WEXITSTATUS(status) == 2);
    CHECK_MSG(clean, "fork %d: child status %d (signal %d)", it, status,
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    computed += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    failed += WIFEXITED(status) && WEXITSTATUS(status) == 2;
    cmx_array e = NULL;
    bool same = false;
    OK(cmx_array_equal(&e, y, want, false, S));
    OK(cmx_array_item_bool(e, &same));
    CHECK(same); /* the parent's result is whole */
    cmx_array_release_all((cmx_array[]){e, y}, 2);
  }
  printf("  products in flight: %d children computed, %d got the fork error\n",
         computed, failed);
  cmx_array_release_all((cmx_array[]){x, d, want}, 3);
}

int main(void) {
  /* fork is about the CPU's streams and thread pool (a CUDA context does
   * not survive it): where a GPU is present it would be the default. */
  setenv("CMX_FORK_WAIT_MS", "300", 1); /* read at cmx's first use */
  if (cmx_set_default_device(cmx_device_cpu()) != CMX_OK) return 1;
  RUN(test_fork_waits_for_a_running_kernel);
  RUN(test_fork_in_a_kernel_on_the_worker);
  RUN(test_fork_in_a_kernel_on_an_eval_thread);
  RUN(test_fork_with_products_in_flight);
  return test_summary("test_fork");
}
