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

#include "core/backend.h"
#include "core/internal.h"

/* The eval lock serialises graph walks and detaching (graph mutation). */
static pthread_mutex_t g_eval_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_mark;

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

/* The outputs keep the failure's message (which a later read reports)
 * and the kernel's status. */
static void fail_outputs(cmx__task* t, const char* msg, cmx_status st) {
  for (int i = 0; i < t->nout; i++) {
    cmx_array o = t->arrays[t->nin + i];
    if (!o->error) {
      o->error = strdup(msg);
      o->error_status = st;
    }
  }
}

void cmx__task_run(cmx__task* t) {
  for (int i = 0; i < t->ndeps; i++)
    cmx__stream_wait(t->deps[i].stream, t->deps[i].seq);
  const cmx_array* in = t->arrays;
  const cmx_array* out = t->arrays + t->nin;
  for (int i = 0; i < t->nin; i++)
    if (in[i]->error) {
      fail_outputs(t, in[i]->error, in[i]->error_status);
      cmx__task_free(t);
      return;
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
  cmx__task_free(t);
}

/* ---------------- CPU stream worker ---------------- */

typedef struct cpu_worker {
  cmx__stream* stream;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t work, done;
  cmx__task *head, *tail;
  uint64_t submitted;
  _Atomic int waiters;
  bool running; /* the worker is running a batch (guarded by lock) */
  bool claimed; /* an eval runs this stream's tasks itself (see below) */
} cpu_worker;

/* Marks task seq done and wakes its waiters. */
static void cpu_complete(cpu_worker* w, uint64_t seq) {
  /* seq_cst store then load: pairs with cpu_wait's increment-then-check so
   * a waiter is never missed. */
  atomic_store(&w->stream->completed, seq);
  if (atomic_load(&w->waiters)) {
    pthread_mutex_lock(&w->lock);
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->lock);
  }
}

static void* cpu_worker_main(void* arg) {
  cpu_worker* w = arg;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->head || w->claimed) pthread_cond_wait(&w->work, &w->lock);
    /* Take the whole queue at once: fewer lock round trips. */
    cmx__task* batch = w->head;
    w->head = w->tail = NULL;
    w->running = true;
    pthread_mutex_unlock(&w->lock);
    while (batch) {
      cmx__task* t = batch;
      batch = t->next;
      uint64_t my_seq = t->arrays[t->nin]->seq;
      cmx__task_run(t);
      cpu_complete(w, my_seq);
    }
    pthread_mutex_lock(&w->lock);
    w->running = false;
  }
  return NULL;
}

void* cmx__cpu_worker_new(cmx__stream* s) {
  cpu_worker* w = calloc(1, sizeof *w);
  if (!w) return CMX__FAIL(CMX_ERR_MEMORY, "[new_stream] out of host memory");
  w->stream = s;
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->work, NULL);
  pthread_cond_init(&w->done, NULL);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&w->thread, &attr, cpu_worker_main, w);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    free(w);
    return CMX__FAIL(CMX_ERR_RUNTIME, "[new_stream] cannot start a thread");
  }
  return w;
}

static void cpu_wait(cmx__stream* s, uint64_t seq) {
  cpu_worker* w = s->backend;
  if (atomic_load_explicit(&s->completed, memory_order_acquire) >= seq) return;
  pthread_mutex_lock(&w->lock);
  atomic_fetch_add(&w->waiters, 1);
  while (atomic_load(&s->completed) < seq)
    pthread_cond_wait(&w->done, &w->lock);
  atomic_fetch_sub(&w->waiters, 1);
  pthread_mutex_unlock(&w->lock);
}

static void cpu_submit(cmx__stream* s, cmx__task* t) {
  cpu_worker* w = s->backend;
  uint64_t seq = t->arrays[t->nin]->seq;
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
  w->submitted = seq;
  pthread_cond_signal(&w->work);
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
 * numbers) still run after these; releasing the claim wakes the worker. */
static bool cpu_try_claim(cmx__stream* s) {
  if (s->ops != &cmx__cpu_stream_ops) return false;
  cpu_worker* w = s->backend;
  pthread_mutex_lock(&w->lock);
  bool ok = !w->head && !w->running && !w->claimed;
  if (ok) w->claimed = true;
  pthread_mutex_unlock(&w->lock);
  return ok;
}

/* Runs a claimed stream's tasks (a list linked by next) and releases the
 * claim. */
static void cpu_run_claimed(cmx__stream* s, cmx__task* list) {
  cpu_worker* w = s->backend;
  cmx__error_mark mark = cmx__error_mark_get();
  while (list) {
    cmx__task* t = list;
    list = t->next;
    uint64_t seq = t->arrays[t->nin]->seq;
    cmx__task_run(t);
    cpu_complete(w, seq);
  }
  cmx__error_mark_restore(mark); /* eval reports failures it waits for */
  pthread_mutex_lock(&w->lock);
  w->claimed = false;
  if (w->head) pthread_cond_signal(&w->work);
  pthread_mutex_unlock(&w->lock);
}

const cmx__stream_ops cmx__cpu_stream_ops = {
    .submit = cpu_submit, .wait = cpu_wait, .shutdown = NULL};

/* ---------------- eval ---------------- */

typedef struct {
  cmx_array node;
  int next;
} frame;

typedef struct {
  void* items;
  size_t n, cap, elem;
} vec;

static bool vec_push(vec* v, const void* x) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    void* p = realloc(v->items, cap * v->elem);
    if (!p) return false;
    v->items = p;
    v->cap = cap;
  }
  memcpy((char*)v->items + v->n * v->elem, x, v->elem);
  v->n++;
  return true;
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
  vec stack = {.elem = sizeof(frame)};
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
  free(stack.items);
  if (st == CMX_ERR_MEMORY) cmx__error(st, "[eval] out of host memory");
  return st;
}

/* Tasks an eval runs itself (see cpu_try_claim), in order. */
typedef struct task_list {
  cmx__task *head, *tail;
} task_list;

/* Makes a task from node's op, detaches the outputs, and submits it (or
 * appends it to `own` when the eval runs its tasks itself). */
static cmx_status schedule(cmx_array node, task_list* own) {
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
  cmx__task* t = calloc(1, bytes);
  if (!t) return cmx__error(CMX_ERR_MEMORY, "[eval] out of host memory");
  t->arrays = (cmx_array*)(t + 1);
  t->deps = (void*)(t->arrays + nin + nout);
  cmx_primitive_retain(prim);
  t->prim = prim;
  t->nin = nin;
  t->nout = nout;
  for (int i = 0; i < nin; i++) {
    cmx_array in = op->inputs[i];
    t->arrays[i] = cmx_array_retain(in);
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
      if (!o) {
        for (int j = 0; j < i; j++) cmx_array_release(t->arrays[nin + j]);
        for (int j = 0; j < nin; j++) cmx_array_release(t->arrays[j]);
        cmx_primitive_release(prim);
        free(t);
        return cmx_last_status();
      }
    }
    t->arrays[nin + i] = o;
  }
  uint64_t seq = ++s->next_seq;
  for (int i = 0; i < nout; i++) {
    cmx_array o = t->arrays[nin + i];
    o->stream = s->index;
    o->seq = seq;
    atomic_store_explicit(&o->status, CMX__NODE_SCHEDULED,
                          memory_order_release);
    if (o->op == op) {
      o->op = NULL;
      if (o->tracer &&
          atomic_load_explicit(&cmx__tracing, memory_order_relaxed))
        o->hist = op; /* a transform walks it later */
      else
        cmx__op_release(op);
    }
  }
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

/* Evals of at most this many ops may run on the caller's thread. */
#define INLINE_MAX_OPS 64

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

static cmx_status eval_impl(const cmx_array* arrays, size_t n, bool wait) {
  if (n && !arrays)
    return cmx__error(CMX_ERR_VALUE, "[eval] array list is NULL");
  for (size_t i = 0; i < n; i++)
    if (!arrays[i])
      return cmx__error(CMX_ERR_VALUE, "[eval] argument %zu is a null array",
                        i);
  pthread_mutex_lock(&g_eval_lock);
  vec tape = {.elem = sizeof(cmx_array)};
  cmx_status st = build_tape(arrays, n, &tape);
  cmx_array* nodes = tape.items;
  cmx__stream* mine =
      st == CMX_OK && wait ? inline_stream(nodes, tape.n) : NULL;
  if (mine && !cpu_try_claim(mine)) mine = NULL;
  task_list own = {NULL, NULL};
  for (size_t i = 0; st == CMX_OK && i < tape.n; i++)
    if (nodes[i]->op) st = schedule(nodes[i], mine ? &own : NULL);
  pthread_mutex_unlock(&g_eval_lock);
  free(tape.items);
  if (mine) cpu_run_claimed(mine, own.head);
  if (st != CMX_OK || !wait) return st;
  for (size_t i = 0; i < n; i++) {
    st = cmx__node_wait(arrays[i]);
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

cmx_status cmx_eval(const cmx_array* arrays, size_t n) {
  return eval_impl(arrays, n, true);
}

cmx_status cmx_array_eval(cmx_array a) {
  return eval_impl(&a, 1, true);
}

cmx_status cmx_async_eval(const cmx_array* arrays, size_t n) {
  return eval_impl(arrays, n, false);
}
