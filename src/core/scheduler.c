/* Evaluation: the graph walk that turns lazy nodes into tasks, the CPU
 * stream worker that runs them, and the task runner shared by backends.
 *
 * eval walks the graph iteratively (explicit stack, visit marks, so it is
 * linear in the graph and never recurses), and in dependency order turns
 * each op into a task holding references to its inputs and outputs. The
 * outputs are detached from the op at once, so history is freed while the
 * workers run. Each stream runs its tasks in order; a task that reads a
 * node made on another stream first waits for that stream to pass the
 * node's sequence number.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/backend.h"
#include "core/pool.h"
#include "core/sched.h"

/* The eval lock serialises graph walks and detaching (graph mutation). */
static pthread_mutex_t g_eval_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_mark;
/* This thread holds g_eval_lock (GPU streams run tasks while scheduling). */
static _Thread_local bool tl_eval_locked CMX__TLS_FAST;

static void eval_lock(void) {
  pthread_mutex_lock(&g_eval_lock);
  tl_eval_locked = true;
}
static void eval_unlock(void) {
  tl_eval_locked = false;
  pthread_mutex_unlock(&g_eval_lock);
}

void cmx__eval_fork(int phase) {
  /* The eval lock is held for graph walks, which may be long: wait for it
   * a while, and in a child whose parent could not get it, make a new one
   * (the walk it guarded does not exist there). */
  static bool held;
  if (phase == CMX__FORK_PREPARE) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    held = pthread_mutex_timedlock(&g_eval_lock, &ts) == 0;
  } else if (held) {
    pthread_mutex_unlock(&g_eval_lock);
  } else if (phase == CMX__FORK_CHILD) {
    pthread_mutex_init(&g_eval_lock, NULL);
  }
}

/* ---------------- interrupts ---------------- */

typedef bool (*interrupt_fn)(void*);
static _Atomic(interrupt_fn) g_interrupt;
static void* _Atomic g_interrupt_ctx;

void cmx_set_interrupt_check(bool (*check)(void* ctx), void* ctx) {
  atomic_store(&g_interrupt_ctx, ctx);
  atomic_store(&g_interrupt, check);
}

bool cmx__interrupt_installed(void) {
  return atomic_load_explicit(&g_interrupt, memory_order_relaxed) != NULL;
}

int64_t cmx__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool cmx__interrupt_poll(int64_t* last_ns) {
  interrupt_fn f = atomic_load_explicit(&g_interrupt, memory_order_acquire);
  if (!f) return false;
  int64_t now = cmx__now_ns();
  if (*last_ns == 0) { /* the clock starts at the first poll */
    *last_ns = now;
    return false;
  }
  if (now - *last_ns < (int64_t)CMX__INTERRUPT_MS * 1000000) return false;
  *last_ns = now;
  return f(atomic_load(&g_interrupt_ctx));
}

uint64_t cmx__stream_last_seq(cmx__stream* s) {
  pthread_mutex_lock(&g_eval_lock);
  uint64_t v = s->next_seq;
  pthread_mutex_unlock(&g_eval_lock);
  return v;
}

/* ---------------- task runner ---------------- */

void cmx__task_free(cmx__task* t) {
  for (int i = 0; i < t->nin + t->nout; i++) cmx_array_release(t->arrays[i]);
  cmx_primitive_release(t->prim);
  free(t);
}

/* A failure for want of memory is not kept for good: the task's op goes
 * back on its outputs (cmx__op_reattach), so the evals waiting now report
 * the failure and a later one computes the arrays again, once memory was
 * freed or the limit raised. Not when a kernel gave an input's buffer to an
 * output, which may then hold part of a result. */
static void reattach(cmx__task* t) {
  const cmx_array* in = t->arrays;
  const cmx_array* out = t->arrays + t->nin;
  for (int i = 0; i < t->nout; i++)
    for (int j = 0; out[i]->buf && j < t->nin; j++)
      if (out[i]->buf == in[j]->buf) return;
  bool lock = !tl_eval_locked;
  if (lock) eval_lock();
  cmx__op_reattach(t->prim, in, t->nin, out, t->nout);
  if (lock) eval_unlock();
}

static void fail_outputs(cmx__task* t, const char* msg, cmx_status st) {
  for (int i = 0; i < t->nout; i++)
    cmx__node_fail(t->arrays[t->nin + i], msg, st);
  if (st == CMX_ERR_MEMORY || st == CMX_ERR_INTERRUPTED) reattach(t);
}

void cmx__task_cancel(cmx__task* t) {
  cmx__task_settle(t, CMX__TASK_CANCEL);
  cmx__task_free(t);
}

const char cmx__fork_lost_msg[] =
    "[eval] not computed: the process forked while a thread of the parent "
    "was computing this array (or an input of it); evaluate it in the "
    "parent, or fork before queuing the work";

void cmx__task_wait_deps(const cmx__task* t) {
  for (int i = 0; i < t->ndeps; i++)
    cmx__stream_wait(t->deps[i].stream, t->deps[i].seq);
}

/* Runs the kernel of t (how == CMX__TASK_RUN) or fails its outputs. */
void cmx__task_settle(cmx__task* t, int how) {
  if (how == CMX__TASK_CANCEL) {
    fail_outputs(t, "[eval] not computed: the eval was interrupted",
                 CMX_ERR_INTERRUPTED);
    return;
  }
  if (how == CMX__TASK_LOST) {
    fail_outputs(t, cmx__fork_lost_msg, CMX_ERR_RUNTIME);
    return;
  }
  cmx__task_wait_deps(t);
  const cmx_array* in = t->arrays;
  const cmx_array* out = t->arrays + t->nin;
  for (int i = 0; i < t->nin; i++) {
    if (in[i]->error) {
      fail_outputs(t, in[i]->error, in[i]->error_status);
      return;
    }
    /* An input that is neither computed nor failed: its task was lost
     * (a forked child's copy of a task another thread of the parent was
     * running). Kernels read buf unchecked, so fail here, not in them. */
    if (!in[i]->buf && in[i]->size > 0) {
      fail_outputs(t, cmx__fork_lost_msg, CMX_ERR_RUNTIME);
      return;
    }
  }
  const cmx_primitive_vtable* vt = t->prim->vt;
  bool gpu = t->prim->stream.device.type == CMX_GPU;
  cmx_kernel_fn k = cmx__kernel_lookup(vt, gpu ? CMX_GPU : CMX_CPU);
  cmx_status st = CMX_OK;
  if (!k)
    st = cmx__error(CMX_ERR_NOT_IMPLEMENTED, "[%s] has no %s implementation",
                    vt->name, gpu ? "gpu" : "cpu");
  for (int i = 0; st == CMX_OK && !gpu && i < t->nin; i++)
    if (in[i]->buf) st = cmx__buffer_to_host(in[i]->buf);
  if (st == CMX_OK) st = k(t->prim, in, t->nin, out, t->nout);
  if (st == CMX_OK)
    for (int i = 0; i < t->nout; i++)
      if (!out[i]->buf && out[i]->size > 0)
        st = cmx__error(CMX_ERR_RUNTIME, "[%s] kernel left output %d empty",
                        vt->name, i);
  if (st != CMX_OK) fail_outputs(t, cmx_last_error(), st);
}

void cmx__task_run(cmx__task* t) {
  cmx__task_settle(t, CMX__TASK_RUN);
  cmx__task_free(t);
}

/* ---------------- eval ---------------- */

typedef struct {
  cmx_array node;
  int next;
} frame;

/* A growable array that starts in storage the caller provides (on its
 * stack), so that the walks of small graphs allocate nothing. */
typedef struct {
  void* items;
  size_t n, cap, elem;
  void* local; /* the caller's storage, cap elements */
} vec;

#define VEC_LOCAL 64
#define VEC_INIT(storage)                                            \
  {                                                                  \
    .items = (storage), .cap = VEC_LOCAL, .elem = sizeof *(storage), \
    .local = (storage)                                               \
  }

static bool vec_push(vec* v, const void* x) {
  if (v->n == v->cap) {
    size_t cap = v->cap * 2;
    void* p = v->items == v->local ? malloc(cap * v->elem)
                                   : realloc(v->items, cap * v->elem);
    if (!p) return false;
    if (v->items == v->local) memcpy(p, v->local, v->n * v->elem);
    v->items = p;
    v->cap = cap;
  }
  if (v->elem == sizeof(frame)) /* the two users: no memcpy call */
    ((frame*)v->items)[v->n] = *(const frame*)x;
  else
    ((cmx_array*)v->items)[v->n] = *(const cmx_array*)x;
  v->n++;
  return true;
}

static void vec_free(vec* v) {
  if (v->items != v->local) free(v->items);
}

_Atomic int cmx__tracing = 0;

const char cmx__placeholder_msg[] =
    "[eval] Attempting to eval an array during function transformations like "
    "compile or vmap is not allowed. (Its values do not exist while the "
    "function is traced: under vmap an input stands for the whole batch, so "
    "item(), tolist(), printing or Python control flow on it cannot work; "
    "use array ops such as mx.where instead.)";

/* The k-th input of op to visit. Deeper inputs go first (for ops with a
 * few inputs): a long chain, such as the cotangent in a backward pass, is
 * then computed before the short branches beside it, which are computed
 * just before their consumer instead of early, so their buffers live
 * shorter (lower peak memory, what checkpointing relies on). */
static cmx_array next_input(cmx__op* op, int k, uint32_t mark) {
  if (op->nin > 8 || op->nin < 2) return op->inputs[k];
  /* The k-th input in order of decreasing depth (ties by index). */
  int order[8];
  for (int i = 0; i < op->nin; i++) order[i] = i;
  for (int i = 1; i < op->nin; i++)
    for (int j = i;
         j > 0 && op->inputs[order[j]]->depth > op->inputs[order[j - 1]]->depth;
         j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  (void)mark;
  return op->inputs[order[k]];
}

/* Post-order of the unscheduled nodes reachable from roots. */
static cmx_status build_tape(const cmx_array* roots, size_t n, vec* tape) {
  uint32_t mark = ++g_mark;
  if (mark == 0) mark = ++g_mark;
  frame local[VEC_LOCAL];
  vec stack = VEC_INIT(local);
  cmx_status st = CMX_OK;
  for (size_t r = 0; r < n && st == CMX_OK; r++) {
    cmx_array root = roots[r];
    if (root->tracer == CMX__PLACEHOLDER) {
      st = cmx__error(CMX_ERR_VALUE, "%s", cmx__placeholder_msg);
      break;
    }
    if (!root->op || root->mark == mark) continue;
    root->mark = mark;
    frame f = {root, 0};
    if (!vec_push(&stack, &f)) st = CMX_ERR_MEMORY;
    while (stack.n && st == CMX_OK) {
      frame* top = (frame*)stack.items + stack.n - 1;
      cmx__op* op = top->node->op;
      if (top->next < op->nin) {
        cmx_array in = next_input(op, top->next++, mark);
        if (in->tracer == CMX__PLACEHOLDER) {
          st = cmx__error(CMX_ERR_VALUE, "%s", cmx__placeholder_msg);
          break;
        }
        if (in->op && in->mark != mark) {
          in->mark = mark;
          frame g = {in, 0};
          if (!vec_push(&stack, &g)) st = CMX_ERR_MEMORY;
        }
      } else {
        cmx_array node = top->node;
        stack.n--;
        if (!vec_push(tape, &node)) st = CMX_ERR_MEMORY;
      }
    }
  }
  vec_free(&stack);
  if (st == CMX_ERR_MEMORY) cmx__error(st, "[eval] out of host memory");
  return st;
}

/* Tasks an eval runs itself (see cmx__cpu_try_claim), in order. */
typedef struct task_list {
  cmx__task *head, *tail;
} task_list;

/* Makes a task from node's op, detaches the outputs, and submits it (or
 * appends it to `own` when the eval runs its tasks itself). */
/* The tasks an eval submitted to each stream: a contiguous range of
 * sequence numbers (evals schedule under one lock), cancelled if the eval
 * is interrupted. `more`: the eval used streams past the first MAX_SPANS
 * (their tasks are not cancelled). */
#define MAX_SPANS 16
typedef struct {
  int n;
  bool more;
  struct {
    cmx__stream* s;
    uint64_t lo, hi;
  } at[MAX_SPANS];
} spans;

static void spans_add(spans* sp, cmx__stream* s, uint64_t seq) {
  for (int i = 0; i < sp->n; i++)
    if (sp->at[i].s == s) {
      sp->at[i].hi = seq;
      return;
    }
  if (sp->n == MAX_SPANS) { /* not cancelled: computed as usual */
    sp->more = true;
    return;
  }
  sp->at[sp->n].s = s;
  sp->at[sp->n].lo = sp->at[sp->n].hi = seq;
  sp->n++;
}

static cmx_status schedule(cmx_array node, task_list* own, spans* sp) {
  cmx__op* op = node->op;
  cmx_primitive* prim = op->prim;
  cmx__stream* s = cmx__stream_get(prim->stream.index);
  int nin = op->nin, nout = op->nout, ndeps = 0;
  for (int i = 0; i < nin; i++) {
    cmx_array in = op->inputs[i];
    if (in->stream >= 0 && in->stream != s->index &&
        !cmx__stream_done(in->stream, in->seq))
      ndeps++;
  }
  size_t bytes = sizeof(cmx__task) + (size_t)(nin + nout) * sizeof(cmx_array) +
                 (size_t)ndeps * 16;
  /* malloc, not calloc: glibc's calloc skips the thread cache, and every
   * field is written below. */
  cmx__task* t = malloc(bytes);
  if (!t) return cmx__error(CMX_ERR_MEMORY, "[eval] out of host memory");
  t->arrays = (cmx_array*)(t + 1);
  t->deps = (void*)(t->arrays + nin + nout);
  t->next = NULL;
  t->ndeps = 0;
  /* An op whose one output leaves it now dies here (nothing else holds
   * it, no transform keeps it as history): the task takes over its
   * references to the primitive and the inputs instead of taking its own
   * and dropping the op's (2 + 2 * nin fewer atomic operations). */
  bool steal = nout == 1 && node->op == op &&
               atomic_load_explicit(&op->refcount, memory_order_acquire) == 1 &&
               !(node->tracer &&
                 atomic_load_explicit(&cmx__tracing, memory_order_relaxed));
  if (!steal) cmx_primitive_retain(prim);
  t->prim = prim;
  t->nin = nin;
  t->nout = nout;
  for (int i = 0; i < nin; i++) {
    cmx_array in = op->inputs[i];
    t->arrays[i] = steal ? in : cmx_array_retain(in);
    if (in->stream >= 0 && in->stream != s->index &&
        !cmx__stream_done(in->stream, in->seq)) {
      t->deps[t->ndeps].stream = in->stream;
      t->deps[t->ndeps].seq = in->seq;
      t->ndeps++;
    }
  }
  for (int i = 0; i < nout; i++) {
    cmx_array o = cmx__op_output(op, i);
    if (!o) { /* a sibling nobody holds: compute into a temporary */
      o = cmx__node_new(prim->vt->name, op->out_shapes[i], op->out_ndims[i],
                        op->out_dtypes[i]);
      if (!o) { /* (never when steal: one output, alive) */
        for (int j = 0; j < i; j++) cmx_array_release(t->arrays[nin + j]);
        for (int j = 0; !steal && j < nin; j++) cmx_array_release(t->arrays[j]);
        if (!steal) cmx_primitive_release(prim);
        free(t);
        return cmx_last_status();
      }
    }
    t->arrays[nin + i] = o;
  }
  uint64_t seq = ++s->next_seq;
  for (int i = 0; i < nout; i++) {
    cmx_array o = t->arrays[nin + i];
    cmx__node_fail(o, NULL, CMX_OK); /* a failure being retried */
    o->stream = s->index;
    o->seq = seq;
    atomic_store_explicit(&o->status, CMX__NODE_SCHEDULED,
                          memory_order_release);
    if (o->op == op) {
      o->op = NULL;
      if (steal) {
        cmx__op_free(op); /* its references now belong to the task */
      } else if (o->tracer &&
                 atomic_load_explicit(&cmx__tracing, memory_order_relaxed)) {
        if (o->hist) cmx__op_release(o->hist); /* scheduled again */
        o->hist = op;                          /* a transform walks it later */
      } else {
        cmx__op_release(op);
      }
    }
  }
  spans_add(sp, s, seq);
  if (own) {
    t->next = NULL;
    if (own->tail)
      own->tail->next = t;
    else
      own->head = t;
    own->tail = t;
  } else {
    s->ops->submit(s, t);
  }
  return CMX_OK;
}

/* Under the eval lock: a's failure, if any, with the kernel's status, and
 * a made available when it is the task (stream, seq) the caller waited
 * for. */
static cmx_status finish_wait(cmx_array a, bool pending, int stream,
                              uint64_t seq) {
  if (a->error) return cmx__error(a->error_status, "%s", a->error);
  if (pending && !a->op && a->stream == stream && a->seq == seq)
    atomic_store_explicit(&a->status, CMX__NODE_AVAILABLE,
                          memory_order_release);
  return CMX_OK;
}

/* Waits for a node that an eval has scheduled (or found scheduled or
 * available) and returns its failure, if any, with the kernel's status;
 * CMX_ERR_INTERRUPTED (no error set) when the interrupt check fired.
 * The node is read under the eval lock: a task failing for want of memory
 * puts the op back on its outputs meanwhile (reattach), and another eval
 * may schedule them again. */
static cmx_status wait_scheduled(cmx_array a, int64_t* last_poll) {
  eval_lock();
  bool pending =
      !a->op && atomic_load_explicit(&a->status, memory_order_acquire) ==
                    CMX__NODE_SCHEDULED;
  int stream = a->stream;
  uint64_t seq = a->seq;
  cmx__stream* s = pending ? cmx__stream_get(stream) : NULL;
  /* Nothing to wait for (the eval ran its tasks itself, or found a
   * available) and no late device error to collect: one lock round. */
  if (!pending ||
      (s && !s->ops->take_error &&
       atomic_load_explicit(&s->completed, memory_order_acquire) >= seq)) {
    cmx_status st = finish_wait(a, pending, stream, seq);
    eval_unlock();
    return st;
  }
  eval_unlock();
  if (s && s->ops == &cmx__cpu_stream_ops && cmx__interrupt_installed()) {
    /* Interruptible: wake up now and then to ask the interrupt check. */
    while (!cmx__cpu_wait_for(s, seq, CMX__INTERRUPT_MS))
      if (cmx__interrupt_poll(last_poll)) return CMX_ERR_INTERRUPTED;
  } else if (pending) {
    cmx__stream_wait(stream, seq);
  }
  /* A failure the device found meanwhile (see take_error) fails the
   * waited array, which keeps it. */
  cmx_status late_st = CMX_OK;
  char* late = s && s->ops->take_error ? s->ops->take_error(s, &late_st) : NULL;
  eval_lock();
  if (late) {
    cmx__node_fail(a, late, late_st);
    free(late);
  }
  cmx_status st = finish_wait(a, pending, stream, seq);
  eval_unlock();
  return st;
}

/* After the interrupt check fired: cancels the eval's tasks not started,
 * waits for the kernels running now (the cancelled tasks pass at once),
 * and fails with CMX_ERR_INTERRUPTED. The cancelled arrays keep their op
 * (cmx__task_cancel), so a later eval computes them. */
static cmx_status interrupted(const spans* sp) {
  for (int i = 0; i < sp->n; i++)
    if (sp->at[i].s->ops == &cmx__cpu_stream_ops)
      cmx__cpu_cancel(sp->at[i].s, sp->at[i].lo, sp->at[i].hi);
  for (int i = 0; i < sp->n; i++) {
    cmx__stream_wait(sp->at[i].s->index, sp->at[i].hi);
    if (sp->at[i].s->ops == &cmx__cpu_stream_ops)
      cmx__cpu_cancel(sp->at[i].s, 1, 0);
  }
  return cmx__error(CMX_ERR_INTERRUPTED,
                    "[eval] interrupted: arrays not computed yet are computed "
                    "by the next eval");
}

/* Evals of at most this many ops may run on the caller's thread. Handing
 * tasks one by one to an idle worker costs two thread switches per task
 * (the worker drains its queue faster than the eval fills it): a 100-op
 * eval of small adds took ~35 context switches and 2.8 us of CPU per op
 * that way, 0 and 2.0 us inline. Past this size the worker's start while
 * the eval still schedules (overlap) is worth more than the switches. */
#define INLINE_MAX_OPS 4096

/* The CPU stream all of the tape's ops run on when an eval of them may run
 * them itself (few ops, one stream), else NULL. */
static cmx__stream* inline_stream(const cmx_array* nodes, size_t n) {
  if (n == 0 || n > INLINE_MAX_OPS) return NULL;
  int index = -1;
  for (size_t i = 0; i < n; i++) {
    cmx__op* op = nodes[i]->op;
    if (!op) continue;
    if (index >= 0 && op->prim->stream.index != index) return NULL;
    index = op->prim->stream.index;
  }
  cmx__stream* s = index >= 0 ? cmx__stream_get(index) : NULL;
  return s && s->ops == &cmx__cpu_stream_ops ? s : NULL;
}

/* Starts the work an async_eval queued: a stream that batches its launches
 * (the GPU's CUDA graphs) issues its batch when polled, so the device
 * begins at once instead of at the next wait. Only the eval's streams are
 * polled (a GPU poll costs an event record); all of them where the eval
 * used more streams than its spans hold. */
static void start_queued_work(const spans* sp) {
  int n = sp->more ? CMX__MAX_STREAMS : sp->n;
  for (int i = 0; i < n; i++) {
    cmx__stream* s = sp->more ? cmx__stream_get(i) : sp->at[i].s;
    if (!s) break;
    if (s->ops->poll) s->ops->poll(s);
  }
}

static cmx_status eval_impl(const cmx_array* arrays, size_t n, bool wait) {
  if (n && !arrays)
    return cmx__error(CMX_ERR_VALUE, "[eval] array list is NULL");
  for (size_t i = 0; i < n; i++)
    if (!arrays[i])
      return cmx__error(CMX_ERR_VALUE, "[eval] argument %zu is a null array",
                        i);
  eval_lock();
  cmx_array local[VEC_LOCAL];
  vec tape = VEC_INIT(local);
  cmx_status st = build_tape(arrays, n, &tape);
  cmx_array* nodes = tape.items;
  cmx__stream* mine =
      st == CMX_OK && wait ? inline_stream(nodes, tape.n) : NULL;
  if (mine && !cmx__cpu_try_claim(mine)) mine = NULL;
  task_list own = {NULL, NULL};
  spans sp; /* at[] is read below n only: not zeroed (400 bytes) */
  sp.n = 0;
  sp.more = false;
  for (size_t i = 0; st == CMX_OK && i < tape.n; i++)
    if (nodes[i]->op) st = schedule(nodes[i], mine ? &own : NULL, &sp);
  if (mine) cmx__cpu_claim_publish(mine, own.head);
  eval_unlock();
  vec_free(&tape);
  cmx_status ist = mine ? cmx__cpu_run_claimed(mine, own.head) : CMX_OK;
  if (!wait) start_queued_work(&sp);
  if (st != CMX_OK || !wait) return st;
  int64_t last_poll = 0;
  for (size_t i = 0; i < n && ist == CMX_OK; i++) {
    st = wait_scheduled(arrays[i], &last_poll);
    if (st == CMX_ERR_INTERRUPTED)
      ist = st;
    else if (st != CMX_OK)
      return st;
  }
  return ist == CMX_OK ? CMX_OK : interrupted(&sp);
}

cmx_status cmx__node_wait(cmx_array a) {
  if (atomic_load_explicit(&a->status, memory_order_acquire) ==
          CMX__NODE_AVAILABLE &&
      !a->error)
    return CMX_OK;
  return eval_impl(&a, 1, true);
}

cmx_status cmx_eval(const cmx_array* arrays, size_t n) {
  return eval_impl(arrays, n, true);
}

cmx_status cmx_array_eval(cmx_array a) {
  return eval_impl(&a, 1, true);
}

cmx_status cmx_async_eval(const cmx_array* arrays, size_t n) {
  for (size_t i = 0; arrays && i < n; i++) /* MLX refuses these */
    if (arrays[i] && arrays[i]->tracer)
      return cmx__error(CMX_ERR_VALUE,
                        "[async_eval] Not allowed inside a graph "
                        "transformation.");
  return eval_impl(arrays, n, false);
}
