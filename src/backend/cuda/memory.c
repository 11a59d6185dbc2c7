/* Device buffers: the cmx__device_hooks of the CUDA backend.
 *
 * A cmx__buffer may hold a host copy, a device copy, or both, with flags
 * saying which is current; data moves lazily when the other side reads it.
 * Device memory comes from plain stream-ordered allocations
 * (cuMemAllocAsync / cuMemFreeAsync on the device's default pool, or
 * cuMemAlloc / cuMemFree where pools are missing); never managed memory.
 *
 * Copies between host and device go through the device's copy stream and
 * are waited for before returning, so a moved buffer is usable from every
 * stream at once; the data a copy reads is final by then (a reader waits
 * for the producing task before asking for it).
 *
 * Flags and pointers of one buffer may be touched by several threads (two
 * GPU streams moving the same input, a CPU worker reading a GPU result), so
 * moves happen under a lock chosen by the buffer's address.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

/* core/memory.c: host bytes held by device backends count as active. */
void cmx__mem_account(size_t cap, int sign);

#define NLOCKS 64
static pthread_mutex_t g_locks[NLOCKS] = {[0 ... NLOCKS - 1] =
                                              PTHREAD_MUTEX_INITIALIZER};
static _Atomic size_t g_active, g_peak;

static pthread_mutex_t* buf_lock(const cmx__buffer* b) {
  return &g_locks[((uintptr_t)b >> 6) % NLOCKS];
}

size_t cmx__gpu_active_bytes(void) {
  return atomic_load(&g_active);
}
size_t cmx__gpu_peak_bytes(void) {
  return atomic_load(&g_peak);
}

static void count_bytes(size_t n, int sign) {
  if (sign < 0) {
    atomic_fetch_sub(&g_active, n);
    return;
  }
  size_t now = atomic_fetch_add(&g_active, n) + n;
  size_t peak = atomic_load(&g_peak);
  while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now)) {
  }
}

/* ---------------- the device buffer cache ----------------
 * Freed device buffers wait in per-device free lists by size class (the
 * host cache's classes, core/memory.c), each remembering the stream that
 * freed it after every stream's pending work: the same stream takes it
 * again in stream order; another stream first waits (on the device, not
 * the host) for an event recorded on the freeing stream, so no kernel
 * still reading the old data sees it overwritten. The event is recorded
 * only then (it covers the free and whatever that stream queued since):
 * the common case, a stream reusing its own frees, costs no driver call.
 * The cache is bounded by the cache limit (core keeps the figure); an
 * allocation that fails for lack of memory empties the device's cache and
 * tries once more.
 *
 * A free ordered on a stream whose batch (graph.c) still holds commands
 * that may use the memory carries that batch's ticket (stream.c): the
 * same stream may take the buffer again at once (its later commands come
 * after the batch), so frees inside a batch keep peak memory where eager
 * launches keep it; recording the entry's event or giving the memory back
 * to the driver first issues the batch (cmx__gpu_issue_ticket). */
#define MAX_CACHED_DEVICES 16
#define NUM_DEV_CLASSES 512

typedef struct centry {
  CUdeviceptr p;
  size_t cap;
  CUevent ev;      /* recorded on s once another stream needs the free done */
  CUstream s;      /* the stream the free is ordered on */
  bool marked;     /* ev recorded after the free */
  uint64_t ticket; /* the free comes after this batch of s (0: none) */
  struct centry* next;
} centry;

static struct {
  pthread_mutex_t lock;
  centry* lists[MAX_CACHED_DEVICES][NUM_DEV_CLASSES];
  centry* spare;                    /* entries (with their events) to reuse */
  size_t bytes[MAX_CACHED_DEVICES]; /* cached per device */
  uint64_t hits, misses;
} g_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

cmx__gpu_memory_stats cmx__gpu_memory_stats_get(void) {
  pthread_mutex_lock(&g_cache.lock);
  cmx__gpu_memory_stats st = {g_cache.hits, g_cache.misses};
  pthread_mutex_unlock(&g_cache.lock);
  return st;
}

/* The class and capacity of a device request of bytes (> 0). */
static int dev_class(size_t bytes, size_t* cap) {
  int c = cmx__mem_size_class(bytes, cap);
  if (c >= NUM_DEV_CLASSES || *cap < bytes) c = -1;
  if (c < 0) *cap = bytes;
  return c;
}

/* A cached buffer of class c on dev, or NULL. */
static centry* cache_take(int dev, int c) {
  if (c < 0 || dev >= MAX_CACHED_DEVICES) return NULL;
  pthread_mutex_lock(&g_cache.lock);
  centry* e = g_cache.lists[dev][c];
  if (e) {
    g_cache.lists[dev][c] = e->next;
    g_cache.bytes[dev] -= e->cap;
    g_cache.hits++;
  } else {
    g_cache.misses++;
  }
  pthread_mutex_unlock(&g_cache.lock);
  if (e) cmx__mem_device_cache_sub(e->cap);
  return e;
}

static void entry_recycle(centry* e) {
  pthread_mutex_lock(&g_cache.lock);
  e->next = g_cache.spare;
  g_cache.spare = e;
  pthread_mutex_unlock(&g_cache.lock);
}

/* Records e's event after its free (on its stream) if not done yet;
 * false when the event cannot be recorded (then e's stream is waited
 * for). */
static bool entry_mark(centry* e) {
  if (e->marked) return true;
  cmx__gpu_issue_ticket(e->s, e->ticket); /* the free, on the device */
  e->ticket = 0;
  if (cmx__cu.cuEventRecord(e->ev, e->s) == CUDA_SUCCESS) {
    e->marked = true;
    return true;
  }
  cmx__cu.cuStreamSynchronize(e->s);
  return false;
}

/* Gives e's memory back to the driver, after its free (dev's context is
 * current). */
static void entry_release(int dev, centry* e) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!entry_mark(e)) {
    if (d && d->pools)
      cmx__cu.cuMemFreeAsync(e->p, e->s);
    else if (d)
      cmx__cu.cuMemFree(e->p);
    entry_recycle(e);
    return;
  }
  if (d && d->pools) {
    cmx__cu.cuStreamWaitEvent(d->free_stream, e->ev, 0);
    cmx__cu.cuMemFreeAsync(e->p, d->free_stream);
  } else if (d) {
    cmx__cu.cuEventSynchronize(e->ev);
    cmx__cu.cuMemFree(e->p);
  }
  entry_recycle(e);
}

/* Frees cached buffers of dev (every device when dev < 0) until the
 * device cache holds at most target bytes (largest classes first). */
static void cache_trim(int dev, size_t target) {
  int n = cmx__gpu_count();
  for (int k = 0; k < n && k < MAX_CACHED_DEVICES; k++) {
    if (dev >= 0 && k != dev) continue;
    pthread_mutex_lock(&g_cache.lock);
    bool any = g_cache.bytes[k] > 0;
    pthread_mutex_unlock(&g_cache.lock);
    /* (a device never used has nothing cached: its context stays unmade) */
    if (!any || cmx__gpu_ctx_enter(k) != CMX_OK) continue;
    for (int c = NUM_DEV_CLASSES - 1; c >= 0; c--) {
      for (;;) {
        if (cmx__mem_device_cached() <= target) return;
        pthread_mutex_lock(&g_cache.lock);
        centry* e = g_cache.lists[k][c];
        if (e) {
          g_cache.lists[k][c] = e->next;
          g_cache.bytes[k] -= e->cap;
        }
        pthread_mutex_unlock(&g_cache.lock);
        if (!e) break;
        cmx__mem_device_cache_sub(e->cap);
        entry_release(k, e);
      }
    }
  }
}

static void hook_trim_cache(size_t target) {
  if (cmx__gpu_count() > 0) cache_trim(-1, target);
}

/* Puts p (capacity cap, class c) in dev's cache, its free ordered on s
 * (after every stream's pending work, and after s's batch `ticket`);
 * false when it does not fit the cache (or cannot be tracked): the caller
 * frees it. */
static bool cache_put(int dev, int c, CUdeviceptr p, size_t cap, CUstream s,
                      uint64_t ticket) {
  if (c < 0 || dev >= MAX_CACHED_DEVICES) return false;
  if (!cmx__mem_device_cache_add(cap)) return false;
  pthread_mutex_lock(&g_cache.lock);
  centry* e = g_cache.spare;
  if (e) g_cache.spare = e->next;
  pthread_mutex_unlock(&g_cache.lock);
  if (!e) {
    e = calloc(1, sizeof *e);
    if (e && cmx__cu.cuEventCreate(&e->ev, CU_EVENT_DISABLE_TIMING) !=
                 CUDA_SUCCESS) {
      free(e);
      e = NULL;
    }
  }
  if (!e) {
    cmx__mem_device_cache_sub(cap);
    return false;
  }
  e->p = p;
  e->cap = cap;
  e->s = s;
  e->marked = false;
  e->ticket = ticket;
  pthread_mutex_lock(&g_cache.lock);
  e->next = g_cache.lists[dev][c];
  g_cache.lists[dev][c] = e;
  g_cache.bytes[dev] += cap;
  pthread_mutex_unlock(&g_cache.lock);
  return true;
}

/* The out-of-memory error of an allocation for op. */
static cmx_status oom_error(const char* op, size_t bytes, int dev, CUresult r) {
  size_t free_b = 0, total = 0;
  cmx__cu.cuMemGetInfo(&free_b, &total);
  const cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) {
    char what[128];
    snprintf(what, sizeof what, "allocating %zu bytes on gpu:%d", bytes, dev);
    return cmx__cu_error(r, op, what);
  }
  return cmx__error(CMX_ERR_MEMORY,
                    "[%s] out of device memory: allocating %zu bytes on "
                    "gpu:%d (%s) failed; cmx holds %zu bytes there, the card "
                    "has %zu of %zu bytes free",
                    op, bytes, dev, d ? d->name : "?", cmx__gpu_active_bytes(),
                    free_b, total);
}

/* Allocates bytes (> 0) on device dev for op, ordered on stream s: from
 * the cache (s then waits for the buffer's free event), else from the
 * driver. Out of memory, it empties dev's cache, waits for the device
 * (frees in flight return their memory) and tries once more. *cap_out
 * The free finds the capacity again from the size. */
static cmx_status dev_alloc(int dev, size_t bytes, CUstream s, const char* op,
                            CUdeviceptr* out) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  size_t cap;
  int c = dev_class(bytes, &cap);
  cmx_status st = cmx__mem_device_reserve(cap, op, bytes);
  if (st != CMX_OK) return st;
  centry* e = cache_take(dev, c);
  if (e) {
    CUresult r = CUDA_SUCCESS;
    /* the same stream reuses it in stream order, even inside its batch */
    if (e->s != s)
      r = entry_mark(e) ? cmx__cu.cuStreamWaitEvent(s, e->ev, 0)
                        : CUDA_SUCCESS; /* (its stream was waited for) */
    if (r != CUDA_SUCCESS) {            /* cannot order: give it back instead */
      entry_release(dev, e);
    } else {
      *out = e->p;
      entry_recycle(e);
      count_bytes(cap, +1);
      return CMX_OK;
    }
  }
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  for (int attempt = 0; attempt < 2 && r == CUDA_ERROR_OUT_OF_MEMORY;
       attempt++) {
    if (attempt) {
      cache_trim(dev, 0);
      cmx__cu.cuCtxSynchronize();
    }
    r = d->pools ? cmx__cu.cuMemAllocAsync(out, cap, s)
                 : cmx__cu.cuMemAlloc(out, cap);
  }
  if (r != CUDA_SUCCESS) {
    cmx__mem_device_unreserve(cap);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && d->pool && cmx__cu.cuMemPoolTrimTo) {
      /* Whatever the failed attempt left reserved goes back to the card. */
      cmx__cu.cuCtxSynchronize();
      cmx__cu.cuMemPoolTrimTo(d->pool, 0);
    }
    return oom_error(op, bytes, dev, r);
  }
  count_bytes(cap, +1);
  return CMX_OK;
}

/* Frees p (a buffer of bytes) on device dev, ordered on stream target
 * (NULL: the device's free stream) after every other stream's pending
 * work, which may still read p, and after target's batch `ticket`. It
 * goes to the cache when that has room. */
static void free_on(int dev, CUdeviceptr p, size_t bytes, CUstream target,
                    uint64_t ticket) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  size_t cap;
  int c = dev_class(bytes, &cap);
  count_bytes(cap, -1);
  cmx__mem_device_unreserve(cap);
  if (!target) target = d->free_stream;
  cmx__gpu_order_after_all(dev, target);
  if (cache_put(dev, c, p, cap, target, ticket)) return;
  cmx__gpu_issue_ticket(target, ticket); /* the batch may still use p */
  if (d->pools) {
    cmx__cu.cuMemFreeAsync(p, target);
  } else {
    cmx__cu.cuCtxSynchronize(); /* cuMemFree does not order after work */
    cmx__cu.cuMemFree(p);
  }
}

/* Frees p (a buffer of bytes) on device dev: on the current task's stream
 * when the freeing thread runs one of dev's tasks (after that stream's
 * batched launches: see cmx__gpu_free_ticket), else on the device's free
 * stream. */
static void dev_free(int dev, CUdeviceptr p, size_t bytes) {
  if (cmx__gpu_ctx_enter(dev) != CMX_OK) return; /* no device: nothing to do */
  int cur_dev = -1;
  CUstream cur = cmx__gpu_current_stream(&cur_dev);
  if (cur && cur_dev == dev)
    free_on(dev, p, bytes, cur, cmx__gpu_free_ticket(dev, cur));
  else
    free_on(dev, p, bytes, NULL, 0);
}

static cmx_status order_after_writer(cmx__buffer* b);

static cmx_status to_host_locked(cmx__buffer* b) {
  if (b->host_valid) return CMX_OK;
  cmx_status st = CMX_OK;
  if (!b->host) {
    size_t cap = (b->size + 63) & ~(size_t)63;
    if (cap == 0) cap = 64;
    void* p = cmx__host_alloc_raw(cap);
    if (!p)
      return cmx__error(CMX_ERR_MEMORY,
                        "[gpu] out of host memory copying %zu bytes from the "
                        "device",
                        b->size);
    cmx__mem_account(cap, +1);
    b->host = p;
    b->capacity = cap;
  }
  if (b->dev_valid && b->size) {
    st = cmx__gpu_ctx_enter(b->dev_index);
    if (st == CMX_OK) st = order_after_writer(b);
    if (st != CMX_OK) return st;
    cmx__gpu_device* d = cmx__gpu_device_get(b->dev_index);
    st = cmx__gpu_stage_d2h(b->dev_index, b->host, b->dev, b->size,
                            d->copy_stream);
    if (st != CMX_OK) return st;
  }
  b->host_valid = true;
  return CMX_OK;
}

static cmx_status hook_to_host(cmx__buffer* b) {
  pthread_mutex_lock(buf_lock(b));
  cmx_status st = to_host_locked(b);
  pthread_mutex_unlock(buf_lock(b));
  return st;
}

/* Small uploads. A host buffer of one 1, 2, 4 or 8-byte element (a
 * Python scalar, a step's offset) that a GPU task reads gets its device
 * copy from a launch on that task's stream, the value a launch argument
 * (cmx__gpu_put_value): batched with the task's kernels, and no host wait.
 * A copy instead goes through the copy stream, which the host then waits
 * for (10-20 us; an eager LeNet step makes 53 of them). The put's stream
 * and batch ticket stay in b->dev_writer(_ticket) for the readers that
 * are not in that stream's order: order_after_writer. Not while a
 * recorder takes the thread's commands (it could replay the put). */
static _Atomic uint64_t g_puts;
enum { ORDER_DEVICES = 16 }; /* devices with an ordering event */
uint64_t cmx__gpu_small_puts(void) {
  return atomic_load(&g_puts);
}

static bool small_put(cmx__buffer* b, int dev, cmx_status* st) {
  int cur_dev = -1;
  CUstream cur = cmx__gpu_current_stream(&cur_dev);
  if (!cur || cur_dev != dev || b->dev || !b->host_valid || b->ext_release ||
      (b->size != 1 && b->size != 2 && b->size != 4 && b->size != 8) ||
      cmx__gpu_recording())
    return false;
  const char* op = cmx__gpu_current_op();
  CUdeviceptr p;
  *st = dev_alloc(dev, b->size, cur, op, &p);
  if (*st != CMX_OK) return true;
  *st = cmx__gpu_put_value(op, dev, p, b->host, b->size);
  if (*st != CMX_OK) {
    dev_free(dev, p, b->size);
    return true;
  }
  /* the writer before dev_valid: a reader that sees the copy valid
   * without the lock (cmx__gpu_ptr) then sees the writer too */
  b->dev_writer_ticket = cmx__gpu_free_ticket(dev, cur);
  b->dev_writer = cur;
  b->dev = p;
  b->dev_index = dev;
  atomic_thread_fence(memory_order_release);
  b->dev_valid = true;
  atomic_fetch_add(&g_puts, 1);
  return true;
}

/* Makes whoever reads b's device copy now come after the put that made
 * it (b->dev_writer): nothing on that stream itself; the running task's
 * stream waits for an event recorded on the writer stream once the put's
 * batch is issued; the host (no task) waits for the writer stream, after
 * which nobody needs ordering. Buffer lock held. */
static cmx_status order_after_writer(cmx__buffer* b) {
  CUstream w = (CUstream)b->dev_writer;
  if (!w) return CMX_OK;
  int cur_dev = -1;
  CUstream cur = cmx__gpu_current_stream(&cur_dev);
  if (cur == w) return CMX_OK;
  cmx_status st = cmx__gpu_ctx_enter(b->dev_index);
  if (st != CMX_OK) return st;
  cmx__gpu_issue_ticket(w, b->dev_writer_ticket);
  CUresult r;
  if (cur) {
    /* one event a device, recorded and waited for under a lock: a wait
     * takes the event's record of the moment, so reuse is safe */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static CUevent evs[ORDER_DEVICES];
    const int dev = b->dev_index;
    if (dev < 0 || dev >= ORDER_DEVICES) {
      r = cmx__cu.cuStreamSynchronize(w); /* beyond the table: wait */
    } else {
      pthread_mutex_lock(&lock);
      r = evs[dev] ? CUDA_SUCCESS
                   : cmx__cu.cuEventCreate(&evs[dev], CU_EVENT_DISABLE_TIMING);
      if (r == CUDA_SUCCESS) r = cmx__cu.cuEventRecord(evs[dev], w);
      if (r == CUDA_SUCCESS) r = cmx__cu.cuStreamWaitEvent(cur, evs[dev], 0);
      pthread_mutex_unlock(&lock);
    }
  } else {
    r = cmx__cu.cuStreamSynchronize(w);
    if (r == CUDA_SUCCESS) b->dev_writer = NULL;
  }
  return r == CUDA_SUCCESS
             ? CMX_OK
             : cmx__cu_error(r, "gpu", "ordering after a small upload");
}

static cmx_status to_device_locked(cmx__buffer* b, int dev) {
  if (b->dev_valid && b->dev_index == dev) return order_after_writer(b);
  if (b->ext_release && b->dev_index != dev)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] data imported on gpu:%d cannot be used on gpu:%d; "
                      "copy it first",
                      cmx__gpu_current_op(), b->dev_index, dev);
  cmx_status st;
  if (b->dev_valid) { /* current on another device: stage through host */
    st = to_host_locked(b);
    if (st != CMX_OK) return st;
  }
  if (small_put(b, dev, &st)) return st;
  if (b->dev && b->dev_index != dev) {
    dev_free(b->dev_index, b->dev, b->size);
    b->dev = 0;
    b->dev_writer = NULL;
  }
  b->dev_valid = false;
  st = cmx__gpu_ctx_enter(dev);
  if (st != CMX_OK) return st;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (b->size) {
    if (!b->dev) {
      CUdeviceptr p;
      st = dev_alloc(dev, b->size, d->copy_stream, cmx__gpu_current_op(), &p);
      if (st != CMX_OK) return st;
      b->dev = p;
    } else {
      /* A stale copy being refreshed may still be read by queued work. */
      cmx__gpu_order_after_all(dev, d->copy_stream);
    }
    if (b->host_valid)
      st = cmx__gpu_stage_h2d(dev, b->dev, b->host, b->size, d->copy_stream);
    /* Also makes a fresh allocation usable on every stream. */
    CUresult r = cmx__cu.cuStreamSynchronize(d->copy_stream);
    if (st != CMX_OK) return st;
    if (r != CUDA_SUCCESS)
      return cmx__cu_error(r, "gpu", "copying data to the device");
  }
  b->dev_index = dev;
  b->dev_valid = true;
  return CMX_OK;
}

static cmx_status hook_to_device(cmx__buffer* b, int dev) {
  pthread_mutex_lock(buf_lock(b));
  cmx_status st = to_device_locked(b, dev);
  pthread_mutex_unlock(buf_lock(b));
  return st;
}

/* Called by the last release of b (nobody else can touch it). Memory
 * owned elsewhere is waited for (every stream's queued work, which may
 * read it) before core hands it back to its owner. */
static void hook_free_device(cmx__buffer* b) {
  if (b->dev && b->ext_release) {
    if (cmx__gpu_ctx_enter(b->dev_index) == CMX_OK) {
      cmx__gpu_device* d = cmx__gpu_device_get(b->dev_index);
      cmx__gpu_order_after_all(b->dev_index, d->free_stream);
      cmx__cu.cuStreamSynchronize(d->free_stream);
    }
  } else if (b->dev) {
    dev_free(b->dev_index, b->dev, b->size);
  }
  b->dev = 0;
  b->dev_valid = false;
  b->dev_writer = NULL;
}

/* A kernel's output: device memory only, ordered on the running task's
 * stream (whose device wins over `dev`, which the core passes as 0). */
static cmx__buffer* hook_alloc_device(size_t bytes, int dev) {
  int cur_dev = -1;
  CUstream s = cmx__gpu_current_stream(&cur_dev);
  if (s) dev = cur_dev;
  if (cmx__gpu_ctx_enter(dev) != CMX_OK) return NULL;
  cmx__buffer* b = calloc(1, sizeof *b);
  if (!b) return CMX__FAIL(CMX_ERR_MEMORY, "[gpu] out of host memory");
  atomic_init(&b->refcount, 1);
  b->size = bytes;
  b->dev_index = dev;
  b->dev_valid = true;
  if (bytes) {
    cmx__gpu_device* d = cmx__gpu_device_get(dev);
    CUdeviceptr p = 0;
    cmx_status st = dev_alloc(dev, bytes, s ? s : d->copy_stream,
                              cmx__gpu_current_op(), &p);
    b->dev = p;
    if (st == CMX_OK && !s) {
      CUresult r = cmx__cu.cuStreamSynchronize(d->copy_stream);
      if (r != CUDA_SUCCESS) {
        dev_free(dev, p, bytes);
        st = cmx__cu_error(r, "gpu", "allocating device memory");
      }
    }
    if (st != CMX_OK) {
      free(b);
      return NULL;
    }
  }
  return b;
}

const cmx__device_memory_hooks cmx__cuda_memory_hooks = {
    .to_host = hook_to_host,
    .to_device = hook_to_device,
    .free_device = hook_free_device,
    .alloc_device = hook_alloc_device,
    .trim_cache = hook_trim_cache};
