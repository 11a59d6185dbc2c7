/* GPU streams: the cmx__stream_ops of streams on a CUDA device.
 *
 * A GPU stream has no worker thread: submit runs the task on the calling
 * (evaluating) thread, whose eval_gpu kernel launches asynchronously on the
 * stream's CUstream. Events are recorded lazily: a task's submitter
 * records one only every EVENT_EVERY tasks (an event record costs about as
 * much host time as a launch); a thread that needs to wait for, or order
 * after, a task that has no event yet records one itself then (it covers
 * everything submitted so far, the task included). Events live in a ring
 * of pending (recorded, not yet known finished) entries; wait(seq)
 * synchronises the first event at or after seq and advances `completed`.
 * A full ring blocks the submitter on its oldest event, which bounds the
 * work in flight.
 *
 * Batches (graph.c): with CUDA graphs on, the commands a stream's tasks
 * encode wait in the stream's batch instead of being launched at once;
 * `launched` is the highest seq whose work is on the CUstream, and events
 * are only recorded there. Whoever needs a task's work on the device (a
 * wait, another stream's event wait, a poll, a free ordered on another
 * stream, the native handle, a command that cannot be batched, the
 * batch's size limit) issues the batch first (stream_flush). Tasks run on
 * the evaluating thread under the eval lock (core/scheduler.c), so one
 * thread at a time adds to a stream's batch; others may issue it (under
 * `block`, taken before `lock`). A free ordered on the stream itself while
 * its batch holds commands takes a ticket naming that batch
 * (cmx__gpu_free_ticket): the memory goes back to the device cache at
 * once, where later commands of the same stream (hence of the same batch,
 * in stream order) may reuse it, exactly as without batching; whoever
 * needs the free to have happened on the device (another stream reusing
 * it, a release to the driver) issues the batch first
 * (cmx__gpu_issue_ticket). So peak memory is what it is without graphs.
 *
 * Freed device memory is stream-ordered (memory.c), and a buffer's last
 * reference may be dropped on any thread while kernels of any stream still
 * read it. Two rules make that safe: a submitting thread holds the task's
 * buffers until the task's event is recorded, and a free first makes its
 * stream wait for every other stream's pending events
 * (cmx__gpu_order_after_all).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

#define RING 1024 /* events per stream */
/* A submitter records an event after at most this many tasks. */
#define EVENT_EVERY 16

struct cmx__gpu_stream {
  cmx__stream* s;
  int dev;
  CUstream cu;
  pthread_mutex_t lock;
  pthread_cond_t recorded; /* signalled after each record */
  uint64_t last_recorded;  /* highest seq whose work is submitted */
  uint64_t last_evented;   /* highest seq an event was recorded after */
  int head, count;         /* the pending ring */
  CUevent ev[RING];
  uint64_t seq[RING];
  bool reported; /* an asynchronous CUDA error was reported */
  cmx__gpu_index_error* index_error; /* device-written record, or NULL */
  /* batching (under block): */
  pthread_mutex_t block;
  cmx__gpu_batch* batch; /* NULL until the first batched command */
  uint64_t batch_seq;    /* highest finished task with work in the batch */
  uint64_t launched;     /* (under lock) highest seq whose work is issued */
  uint64_t issued;       /* non-empty batches issued so far */
};

/* Every GPU stream, for ordering frees after their pending work. */
static struct {
  pthread_mutex_t lock;
  cmx__gpu_stream* list[CMX__MAX_STREAMS];
  int n;
} g_streams = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The stream whose task runs on this thread, and the buffers that task
 * holds until its event is recorded (see cmx__gpu_task_holds). */
static _Thread_local cmx__gpu_stream* tl_current;
static _Thread_local cmx__buffer** tl_held;
static _Thread_local int tl_nheld;
static _Thread_local const char* tl_op;
static _Atomic uint64_t g_event_deps, g_host_deps;
static int streams_snapshot(cmx__gpu_stream*** out);

const char* cmx__gpu_current_op(void) {
  return tl_op ? tl_op : "gpu";
}

cmx__gpu_dep_stats cmx__gpu_dep_stats_get(void) {
  return (cmx__gpu_dep_stats){atomic_load(&g_event_deps),
                              atomic_load(&g_host_deps)};
}

CUstream cmx__gpu_current_stream(int* dev) {
  if (!tl_current) return NULL;
  if (dev) *dev = tl_current->dev;
  return tl_current->cu;
}

CUdeviceptr cmx__gpu_index_error_record(void) {
  return tl_current ? (CUdeviceptr)(uintptr_t)tl_current->index_error : 0;
}

int cmx__gpu_task_holds(const cmx__buffer* b) {
  int n = 0;
  for (int i = 0; i < tl_nheld; i++) n += tl_held[i] == b;
  return n;
}

static void advance_completed(cmx__stream* s, uint64_t seq) {
  uint64_t c = atomic_load(&s->completed);
  while (c < seq && !atomic_compare_exchange_weak(&s->completed, &c, seq)) {
  }
}

/* A failure seen while synchronising is asynchronous (an earlier kernel
 * faulted); it cannot be tied to a task any more, so it is reported once.
 * Later launches fail with the same sticky error and name their op. */
static void report_async(cmx__gpu_stream* gs, CUresult r) {
  if (r == CUDA_SUCCESS || gs->reported) return;
  gs->reported = true;
  cmx_status st = cmx__cu_error(r, "gpu", "waiting for a stream");
  (void)st;
  fprintf(stderr, "cmx: gpu stream %d: %s\n", gs->s->index, cmx_last_error());
}

/* Pops the oldest pending entry; `sync` waits for it first (else it is
 * known finished). Lock held. */
static void pop_oldest_locked(cmx__gpu_stream* gs, bool sync) {
  int i = gs->head;
  if (sync) report_async(gs, cmx__cu.cuEventSynchronize(gs->ev[i]));
  advance_completed(gs->s, gs->seq[i]);
  gs->head = (i + 1) % RING;
  gs->count--;
}

/* Records an event on gs now, for every task up to seq (all submitted);
 * when that is impossible, waits for the whole stream instead so
 * `completed` stays truthful. Lock held. */
static void push_event_locked(cmx__gpu_stream* gs, uint64_t seq) {
  /* Retire finished entries cheaply, so `completed` keeps up. */
  while (gs->count && cmx__cu.cuEventQuery(gs->ev[gs->head]) == CUDA_SUCCESS)
    pop_oldest_locked(gs, false);
  if (gs->count == RING) pop_oldest_locked(gs, true);
  int i = (gs->head + gs->count) % RING;
  CUresult r = CUDA_SUCCESS;
  if (!gs->ev[i])
    r = cmx__cu.cuEventCreate(&gs->ev[i], CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = cmx__cu.cuEventRecord(gs->ev[i], gs->cu);
  if (r == CUDA_SUCCESS) {
    gs->seq[i] = seq;
    gs->count++;
  } else {
    report_async(gs, cmx__cu.cuStreamSynchronize(gs->cu));
    while (gs->count) pop_oldest_locked(gs, false);
    advance_completed(gs->s, seq);
  }
  gs->last_evented = seq;
}

/* Gives the issued tasks that have no event yet one (lock held): what a
 * thread needs before it waits for, or orders after, gs's work. Batched
 * work must be issued first (stream_flush). */
static void flush_locked(cmx__gpu_stream* gs) {
  if (gs->launched > gs->last_evented &&
      atomic_load(&gs->s->completed) < gs->launched)
    push_event_locked(gs, gs->launched);
}

/* ---------------- batches ---------------- */

/* Issues gs's batch (block held): its tasks count as launched. */
static void flush_batch_locked(cmx__gpu_stream* gs) {
  if (cmx__gpu_batch_size(gs->batch) == 0) return;
  cmx_status st0 = cmx_last_status();
  char* msg0 = st0 != CMX_OK ? strdup(cmx_last_error()) : NULL;
  cmx_status st = cmx__gpu_batch_flush(gs->batch);
  gs->issued++;
  if (st != CMX_OK && !gs->reported) {
    gs->reported = true;
    fprintf(stderr, "cmx: gpu stream %d: %s\n", gs->s->index, cmx_last_error());
  }
  if (msg0) {
    cmx__error(st0, "%s", msg0);
    free(msg0);
  } else if (st != CMX_OK) {
    cmx_clear_error();
  }
  pthread_mutex_lock(&gs->lock);
  if (gs->batch_seq > gs->launched) gs->launched = gs->batch_seq;
  pthread_mutex_unlock(&gs->lock);
}

/* Issues gs's batched commands, if any. */
static void stream_flush(cmx__gpu_stream* gs) {
  pthread_mutex_lock(&gs->block);
  flush_batch_locked(gs);
  pthread_mutex_unlock(&gs->block);
}

/* Makes sure task seq's work (recorded) is issued. */
static void flush_until(cmx__gpu_stream* gs, uint64_t seq) {
  pthread_mutex_lock(&gs->lock);
  bool need = gs->launched < seq;
  pthread_mutex_unlock(&gs->lock);
  if (need) stream_flush(gs);
}

cmx_status cmx__gpu_stream_encode(int dev, CUstream s, const cmx__gpu_cmd* cmd,
                                  bool* batched) {
  *batched = false;
  cmx__gpu_stream* gs = tl_current;
  if (!gs || gs->cu != s) return cmx__gpu_cmd_issue(dev, s, cmd);
  bool on = cmx__gpu_graphs_enabled();
  pthread_mutex_lock(&gs->block);
  if (on && !gs->batch) gs->batch = cmx__gpu_batch_new(dev, s);
  if (on && gs->batch) {
    bool taken = false;
    cmx_status st = cmx__gpu_batch_add(gs->batch, cmd, &taken);
    if (st != CMX_OK || taken) {
      *batched = taken;
      if (taken && cmx__gpu_batch_size(gs->batch) >= cmx__gpu_batch_limit())
        flush_batch_locked(gs);
      pthread_mutex_unlock(&gs->block);
      return st;
    }
  }
  flush_batch_locked(gs);
  pthread_mutex_unlock(&gs->block);
  /* Only this thread adds to gs's batch (it holds the eval lock), so the
   * command still comes after everything batched. */
  return cmx__gpu_cmd_issue(dev, s, cmd);
}

uint64_t cmx__gpu_free_ticket(int dev, CUstream s) {
  cmx__gpu_stream* gs = tl_current;
  if (!gs || gs->cu != s || gs->dev != dev) return 0;
  pthread_mutex_lock(&gs->block);
  uint64_t t = cmx__gpu_batch_size(gs->batch) > 0 ? gs->issued + 1 : 0;
  pthread_mutex_unlock(&gs->block);
  return t;
}

void cmx__gpu_issue_ticket(CUstream s, uint64_t ticket) {
  if (!ticket) return;
  cmx__gpu_stream** list;
  int n = streams_snapshot(&list);
  for (int i = 0; i < n; i++) {
    cmx__gpu_stream* gs = list[i];
    if (gs->cu != s) continue;
    pthread_mutex_lock(&gs->block);
    if (gs->issued < ticket) flush_batch_locked(gs);
    pthread_mutex_unlock(&gs->block);
    return;
  }
}

/* Task seq's work is submitted on gs: its event is recorded when
 * EVENT_EVERY tasks went without one (or `now`), else left to whoever
 * waits for it. */
static void record(cmx__gpu_stream* gs, uint64_t seq, bool now) {
  pthread_mutex_lock(&gs->block);
  bool batched = cmx__gpu_batch_size(gs->batch) > 0;
  if (batched) gs->batch_seq = seq;
  pthread_mutex_lock(&gs->lock);
  if (!batched) {
    if (seq > gs->launched) gs->launched = seq;
    if (now || seq >= gs->last_evented + EVENT_EVERY)
      push_event_locked(gs, seq);
  }
  gs->last_recorded = seq;
  pthread_cond_broadcast(&gs->recorded);
  pthread_mutex_unlock(&gs->lock);
  pthread_mutex_unlock(&gs->block);
}

static const cmx__stream_ops gpu_stream_ops;

/* Makes gs's stream wait, on the device, for task seq of stream `other`
 * when that is a GPU stream of the same device: once the task is recorded
 * (its submitter has run it, so its outputs have their buffers), gs waits
 * for the event of the first pending entry at or after seq (none pending:
 * it finished). False when other is not such a stream: the caller waits
 * on the host. */
static bool wait_by_event(cmx__gpu_stream* gs, int other, uint64_t seq) {
  cmx__stream* os = cmx__stream_get(other);
  if (!os || os->ops != &gpu_stream_ops) return false;
  cmx__gpu_stream* o = os->backend;
  if (o == gs) return true; /* same stream: ordered already */
  if (o->dev != gs->dev) return false;
  if (atomic_load_explicit(&os->completed, memory_order_acquire) >= seq)
    return true;
  pthread_mutex_lock(&o->lock);
  while (o->last_recorded < seq && atomic_load(&os->completed) < seq)
    pthread_cond_wait(&o->recorded, &o->lock);
  pthread_mutex_unlock(&o->lock);
  flush_until(o, seq);
  pthread_mutex_lock(&o->lock);
  if (o->last_evented < seq) flush_locked(o);
  int k = 0;
  while (k < o->count && o->seq[(o->head + k) % RING] < seq) k++;
  bool ok = true;
  if (k < o->count) /* the wait takes the event's state now: under lock */
    ok = cmx__cu.cuStreamWaitEvent(gs->cu, o->ev[(o->head + k) % RING], 0) ==
         CUDA_SUCCESS;
  pthread_mutex_unlock(&o->lock);
  if (ok) atomic_fetch_add(&g_event_deps, 1);
  return ok;
}

/* Runs the task on this thread with gs current. The thread's error state
 * is the caller's (this is the evaluating user thread): a kernel failure
 * belongs to the task's outputs only, so it is restored afterwards. */
static void gpu_submit(cmx__stream* s, cmx__task* t) {
  cmx__gpu_stream* gs = s->backend;
  uint64_t seq = t->arrays[t->nin]->seq;
  /* Hold the inputs' buffers and the outputs until the event is recorded:
   * a reference dropped meanwhile by another thread must not free memory
   * that this task's kernels may still use. Inputs are held through their
   * buffers so that the input arrays themselves stay donatable. An input
   * made on another stream has its buffer once that stream's submitter has
   * run the task: a GPU stream of the same device is waited for by an
   * event (its task recorded, the device waits); any other stream on the
   * host. cmx__task_run then has no dependency left to wait for. */
  cmx__gpu_ctx_enter(gs->dev); /* a failure resurfaces in the kernel */
  for (int i = 0; i < t->ndeps; i++) {
    if (wait_by_event(gs, t->deps[i].stream, t->deps[i].seq)) continue;
    atomic_fetch_add(&g_host_deps, 1);
    cmx__stream_wait(t->deps[i].stream, t->deps[i].seq);
  }
  t->ndeps = 0;
  int nin = t->nin, nout = t->nout;
  cmx__buffer* held_small[16];
  cmx_array outs_small[4];
  cmx__buffer** held =
      nin <= 16 ? held_small : malloc((size_t)nin * sizeof *held);
  cmx_array* outs =
      nout <= 4 ? outs_small : malloc((size_t)nout * sizeof *outs);
  bool can_hold = held && outs;
  int nheld = 0;
  if (can_hold) {
    for (int i = 0; i < nin; i++)
      if (t->arrays[i]->buf)
        held[nheld++] = cmx__buffer_retain(t->arrays[i]->buf);
    for (int i = 0; i < nout; i++)
      outs[i] = cmx_array_retain(t->arrays[nin + i]);
  }

  cmx_status st0 = cmx_last_status();
  bool pending0 = cmx__error_pending();
  const char* m = cmx_last_error();
  char* msg0 = m[0] ? strdup(m) : NULL;

  cmx__gpu_stream* prev = tl_current;
  cmx__buffer** prev_held = tl_held;
  int prev_nheld = tl_nheld;
  const char* prev_op = tl_op;
  tl_current = gs;
  tl_held = held;
  tl_nheld = nheld;
  tl_op = t->prim->vt->name;
  cmx__task_run(t);
  tl_held = NULL;
  tl_nheld = 0;
  tl_op = prev_op;
  if (!can_hold) { /* no memory to hold buffers: finish the work instead */
    stream_flush(gs);
    report_async(gs, cmx__cu.cuStreamSynchronize(gs->cu));
  }
  record(gs, seq, !can_hold);
  /* Released with gs still current: frees then order on this stream. */
  for (int i = 0; i < nheld; i++) cmx__buffer_release(held[i]);
  if (can_hold)
    for (int i = 0; i < nout; i++) cmx_array_release(outs[i]);
  tl_current = prev;
  tl_held = prev_held;
  tl_nheld = prev_nheld;
  if (held && held != held_small) free(held);
  if (outs && outs != outs_small) free(outs);

  if (msg0) {
    cmx__error(st0, "%s", msg0);
    free(msg0);
  } else {
    cmx_clear_error();
  }
  if (!pending0) cmx__error_reset_pending();
}

static void gpu_wait(cmx__stream* s, uint64_t seq) {
  cmx__gpu_stream* gs = s->backend;
  if (atomic_load_explicit(&s->completed, memory_order_acquire) >= seq) return;
  cmx__gpu_ctx_enter(gs->dev);
  pthread_mutex_lock(&gs->lock);
  /* seq may be handed out but still being submitted by another thread. */
  while (gs->last_recorded < seq && atomic_load(&s->completed) < seq)
    pthread_cond_wait(&gs->recorded, &gs->lock);
  pthread_mutex_unlock(&gs->lock);
  flush_until(gs, seq);
  pthread_mutex_lock(&gs->lock);
  if (gs->last_evented < seq) flush_locked(gs);
  while (atomic_load(&s->completed) < seq) {
    int k = 0;
    while (k < gs->count && gs->seq[(gs->head + k) % RING] < seq) k++;
    if (k == gs->count) break; /* retired meanwhile: finished */
    int i = (gs->head + k) % RING;
    CUevent ev = gs->ev[i];
    uint64_t target = gs->seq[i];
    /* Synchronise unlocked. Should the submitter retire and re-record this
     * event meanwhile, the wait covers later work too: longer, still
     * correct. */
    pthread_mutex_unlock(&gs->lock);
    CUresult r = cmx__cu.cuEventSynchronize(ev);
    pthread_mutex_lock(&gs->lock);
    report_async(gs, r);
    while (gs->count && gs->seq[gs->head] <= target)
      pop_oldest_locked(gs, false);
    advance_completed(s, target);
  }
  pthread_mutex_unlock(&gs->lock);
}

/* The recorded index error, once gs has no work in flight (a kernel still
 * running could be writing the record). */
static char* gpu_take_error(cmx__stream* s, cmx_status* st) {
  cmx__gpu_stream* gs = s->backend;
  /* the common case, unlocked: nothing recorded */
  if (!gs->index_error ||
      !((volatile cmx__gpu_index_error*)gs->index_error)->code)
    return NULL;
  if (cmx__gpu_ctx_enter(gs->dev) != CMX_OK) return NULL;
  stream_flush(gs);
  pthread_mutex_lock(&gs->lock);
  flush_locked(gs);
  while (gs->count && cmx__cu.cuEventQuery(gs->ev[gs->head]) == CUDA_SUCCESS)
    pop_oldest_locked(gs, false);
  char* msg = gs->count ? NULL : cmx__gpu_index_error_take(gs->index_error, st);
  pthread_mutex_unlock(&gs->lock);
  return msg;
}

/* The work submitted so far gets its event, and finished entries retire
 * (cmx__stream_done asks, e.g. for an array's is_available). */
static void gpu_poll(cmx__stream* s) {
  cmx__gpu_stream* gs = s->backend;
  if (cmx__gpu_ctx_enter(gs->dev) != CMX_OK) return;
  stream_flush(gs);
  pthread_mutex_lock(&gs->lock);
  flush_locked(gs);
  while (gs->count && cmx__cu.cuEventQuery(gs->ev[gs->head]) == CUDA_SUCCESS)
    pop_oldest_locked(gs, false);
  pthread_mutex_unlock(&gs->lock);
}

/* The GPU streams registered so far (streams are never unregistered, so
 * the list is read once under the lock and walked without it). */
static int streams_snapshot(cmx__gpu_stream*** out) {
  pthread_mutex_lock(&g_streams.lock);
  int n = g_streams.n;
  pthread_mutex_unlock(&g_streams.lock);
  *out = g_streams.list;
  return n;
}

void cmx__gpu_graphs_forget_all(void) {
  cmx__gpu_stream** list;
  int n = streams_snapshot(&list);
  for (int i = 0; i < n; i++) {
    cmx__gpu_stream* gs = list[i];
    if (cmx__gpu_ctx_enter(gs->dev) != CMX_OK) continue;
    stream_flush(gs);
    pthread_mutex_lock(&gs->block);
    cmx__gpu_batch_forget(gs->batch);
    pthread_mutex_unlock(&gs->block);
  }
}

void cmx__gpu_order_after_all(int dev, CUstream target) {
  cmx__gpu_stream** list;
  int n = streams_snapshot(&list);
  for (int i = 0; i < n; i++) {
    cmx__gpu_stream* gs = list[i];
    if (gs->dev != dev || gs->cu == target) continue;
    /* its batched work may use what target is about to free */
    stream_flush(gs);
    pthread_mutex_lock(&gs->lock);
    flush_locked(gs);
    if (gs->count) {
      int last = (gs->head + gs->count - 1) % RING;
      cmx__cu.cuStreamWaitEvent(target, gs->ev[last], 0);
    }
    pthread_mutex_unlock(&gs->lock);
  }
}

static void gpu_shutdown(cmx__stream* s) {
  cmx__gpu_stream* gs = s->backend;
  if (cmx__gpu_ctx_enter(gs->dev) != CMX_OK) return;
  stream_flush(gs);
  cmx__cu.cuStreamSynchronize(gs->cu);
  pthread_mutex_lock(&gs->block);
  cmx__gpu_batch_free(gs->batch);
  gs->batch = NULL;
  pthread_mutex_unlock(&gs->block);
  pthread_mutex_lock(&gs->lock);
  while (gs->count) pop_oldest_locked(gs, false);
  advance_completed(s, gs->last_recorded);
  if (gs->index_error) cmx__cu.cuMemFreeHost(gs->index_error);
  gs->index_error = NULL;
  pthread_mutex_unlock(&gs->lock);
}

/* The CUstream, its batched work issued: work the caller enqueues on it
 * comes after cmx's. */
static void* gpu_native(cmx__stream* s) {
  cmx__gpu_stream* gs = s->backend;
  if (cmx__gpu_ctx_enter(gs->dev) == CMX_OK) stream_flush(gs);
  return gs->cu;
}

static const cmx__stream_ops gpu_stream_ops = {.submit = gpu_submit,
                                               .wait = gpu_wait,
                                               .shutdown = gpu_shutdown,
                                               .native = gpu_native,
                                               .take_error = gpu_take_error,
                                               .poll = gpu_poll};

cmx__stream* cmx__gpu_stream_new(int device_index) {
  if (!cmx__gpu_device_get(device_index)) return NULL;
  if (cmx__gpu_ctx_enter(device_index) != CMX_OK) return NULL;
  cmx__gpu_stream* gs = calloc(1, sizeof *gs);
  if (!gs) return CMX__FAIL(CMX_ERR_MEMORY, "[new_stream] out of host memory");
  gs->dev = device_index;
  /* The index error record: portable, device-mapped host memory; with
   * unified addressing (every 64-bit platform CUDA runs on) its host
   * address is its device address. None: kernels record nothing. */
  void* rec = NULL;
  if (cmx__cu.cuMemHostAlloc && cmx__cu.cuMemFreeHost &&
      cmx__cu.cuMemHostAlloc(&rec, sizeof *gs->index_error, 0x3) ==
          CUDA_SUCCESS) {
    memset(rec, 0, sizeof *gs->index_error);
    gs->index_error = rec;
  }
  pthread_mutex_init(&gs->lock, NULL);
  pthread_mutex_init(&gs->block, NULL);
  pthread_cond_init(&gs->recorded, NULL);
  CUresult r = cmx__cu.cuStreamCreate(&gs->cu, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    if (gs->index_error) cmx__cu.cuMemFreeHost(gs->index_error);
    free(gs);
    cmx__cu_error(r, "new_stream", "creating a CUDA stream");
    return NULL;
  }
  pthread_mutex_lock(&g_streams.lock);
  cmx__stream* s = cmx__stream_register((cmx_device){CMX_GPU, device_index},
                                        &gpu_stream_ops, gs);
  if (s) {
    gs->s = s;
    g_streams.list[g_streams.n++] = gs;
  }
  pthread_mutex_unlock(&g_streams.lock);
  if (!s) {
    cmx__cu.cuStreamDestroy(gs->cu);
    if (gs->index_error) cmx__cu.cuMemFreeHost(gs->index_error);
    free(gs);
  }
  return s;
}
