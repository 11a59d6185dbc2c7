/* Host buffers: a size-class cache, memory statistics and limits.
 *
 * Sizes round up to a size class (16-byte steps below 4 KiB, then eight
 * classes per power of two, so at most 12.5% is wasted). Freed buffers go to
 * their class's free list while the cache is under its limit.
 */
#include "cmx/memory.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/sched.h"

const cmx__device_memory_hooks* cmx__device_hooks = NULL;

#define NUM_CLASSES 512

static struct {
  pthread_mutex_t lock;
  /* active, peak and cache cover host and device bytes together; the
   * device's part of active and cache is kept apart too. */
  size_t active, peak, cache, limit, cache_limit;
  size_t dev_active, dev_cache;
  bool init;
  bool limit_set; /* a limit other than the default: it bounds GPUs too */
  /* Cached buffers (header and host block kept together), per size class,
   * linked through next_free. */
  cmx__buffer* free_lists[NUM_CLASSES];
} g_mem = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t phys_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  return (pages > 0 && psize > 0) ? (size_t)pages * (size_t)psize
                                  : ((size_t)1 << 34);
}

/* The default memory limit is the machine's physical memory, so absurd
 * sizes fail cleanly instead of being overcommitted. */
static void mem_init_locked(void) {
  if (g_mem.init) return;
  g_mem.limit = phys_memory();
  g_mem.cache_limit = g_mem.limit;
  g_mem.init = true;
}

/* Size classes: 64-byte steps up to 4 KiB (classes 0..63), then eight
 * classes per power of two. Capacities are multiples of 64 (the alignment). */
#define SMALL_CLASSES 64
static size_t class_capacity(int idx) {
  if (idx < SMALL_CLASSES) return (size_t)(idx + 1) * 64;
  int p = (idx - SMALL_CLASSES) / 8 + 12, k = (idx - SMALL_CLASSES) % 8 + 1;
  return ((size_t)1 << p) + (size_t)k * (((size_t)1 << p) / 8);
}

/* Size class index of a request (-1: too large to cache); *cap gets the
 * capacity to allocate. */
static int size_class(size_t bytes, size_t* cap);
int cmx__mem_size_class(size_t bytes, size_t* cap) {
  return size_class(bytes, cap);
}
static int size_class(size_t bytes, size_t* cap) {
  if (bytes <= 4096) {
    size_t c = bytes ? (bytes + 63) & ~(size_t)63 : 64;
    *cap = c;
    return (int)(c / 64) - 1;
  }
  int p = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^p < b */
  size_t base = (size_t)1 << p, step = base / 8;
  size_t k = (bytes - base + step - 1) / step; /* 1..8 */
  *cap = base + k * step;
  int idx = SMALL_CLASSES + (p - 12) * 8 + (int)(k - 1);
  return idx < NUM_CLASSES ? idx : -1;
}

/* Frees cached host buffers until at most target host bytes stay
 * cached. */
static void trim_cache_locked(size_t target) {
  target += g_mem.dev_cache; /* g_mem.cache counts device bytes too */
  for (int c = NUM_CLASSES - 1; c >= 0 && g_mem.cache > target; c--) {
    while (g_mem.free_lists[c] && g_mem.cache > target) {
      cmx__buffer* b = g_mem.free_lists[c];
      g_mem.free_lists[c] = b->next_free;
      g_mem.cache -= class_capacity(c);
      free(b->host);
      free(b);
    }
  }
}

void cmx__mem_fork(int phase) {
  if (phase == CMX__FORK_PREPARE)
    pthread_mutex_lock(&g_mem.lock);
  else
    pthread_mutex_unlock(&g_mem.lock);
}

/* Host blocks of CPU buffers: 64-byte aligned; from 4 MiB to 64 MiB also
 * 2 MiB-aligned and advised to use transparent huge pages. Steady runs
 * reuse cached blocks, and huge pages take TLB misses out of kernels that
 * stream them: without the hint the bench_sweep cases over 8 MB arrays
 * ([64x128x256] f32: scans, softmax, var) ran 7% slower by CPU time
 * (median of 57, 11 slower; with the hint up to 64 MiB: 1.005, none).
 * Above 64 MiB the hint is left out: with the usual THP setting
 * (defrag=madvise) the first touch of an advised block compacts memory for
 * its 2 MiB pages, which on a fragmented, loaded machine made the first run
 * of take [64x128x256] axis 2 (a fresh 128 MB output) 6.0-8.1 s against
 * 1.1-2.8 s without the hint or in the tree before it (0.75-1.0 s of
 * kernel time against 0.22-0.25, load ~20); its steady runs are the same
 * or faster without it (CPU time 0.94-1.03 of either). */
#define HUGE_PAGE ((size_t)2 << 20)
static void* huge_alloc(size_t capacity) {
  size_t rounded = (capacity + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  void* p = aligned_alloc(HUGE_PAGE, rounded);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}
static void* host_alloc(size_t capacity) {
  if (capacity < 2 * HUGE_PAGE || capacity > 32 * HUGE_PAGE)
    return aligned_alloc(64, capacity);
  return huge_alloc(capacity);
}

/* Host copies of device buffers (cmx__host_alloc_raw): large blocks are
 * aligned to 2 MiB and advised to use transparent huge pages whatever
 * their size, so that a device->host copy into a new block faults it in
 * 2 MiB at a time (what that copy mostly spent its time on: 1.8 GB/s into
 * a fresh buffer on the H100 host before). */
void* cmx__host_alloc_raw(size_t capacity) {
  if (capacity < 2 * HUGE_PAGE) return aligned_alloc(64, capacity);
  return huge_alloc(capacity);
}

static void buffer_init(cmx__buffer* b, size_t bytes, size_t cap, void* p) {
  atomic_init(&b->refcount, 1);
  b->size = bytes;
  b->capacity = cap;
  b->host = p;
  b->dev = 0;
  b->dev_index = -1;
  b->host_valid = true;
  b->dev_valid = false;
  b->next_free = NULL;
  b->ext_release = NULL;
  b->ext_ctx = NULL;
  b->dev_writer = NULL;
  b->dev_writer_ticket = 0;
}

cmx__buffer* cmx__buffer_alloc(size_t bytes) {
  size_t cap;
  int cls = size_class(bytes, &cap);
  if (cap < bytes) /* overflow of the rounding */
    return CMX__FAIL(CMX_ERR_MEMORY, "[malloc] cannot allocate %zu bytes",
                     bytes);
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  if (cls >= 0 && g_mem.free_lists[cls]) {
    cmx__buffer* b = g_mem.free_lists[cls];
    g_mem.free_lists[cls] = b->next_free;
    g_mem.cache -= cap;
    g_mem.active += cap;
    if (g_mem.active > g_mem.peak) g_mem.peak = g_mem.active;
    pthread_mutex_unlock(&g_mem.lock);
    buffer_init(b, bytes, cap, b->host);
    return b;
  }
  /* The limit bounds host bytes (device bytes have their own check). */
  size_t host = g_mem.active - g_mem.dev_active;
  if (host + cap > g_mem.limit && g_mem.cache > g_mem.dev_cache)
    trim_cache_locked(0);
  if (host + cap > g_mem.limit) {
    size_t active = host, limit = g_mem.limit;
    pthread_mutex_unlock(&g_mem.lock);
    return CMX__FAIL(CMX_ERR_MEMORY,
                     "[malloc] allocating %zu bytes would exceed the memory "
                     "limit of %zu bytes (%zu in use)",
                     bytes, limit, active);
  }
  g_mem.active += cap;
  if (g_mem.active > g_mem.peak) g_mem.peak = g_mem.active;
  pthread_mutex_unlock(&g_mem.lock);
  cmx__buffer* b = malloc(sizeof *b);
  void* p = b ? host_alloc(cap) : NULL;
  if (!p) {
    /* Out of memory: give back the cache and try once more. */
    pthread_mutex_lock(&g_mem.lock);
    trim_cache_locked(0);
    pthread_mutex_unlock(&g_mem.lock);
    if (!b) b = malloc(sizeof *b);
    if (b) p = host_alloc(cap);
    if (!p) {
      free(b);
      pthread_mutex_lock(&g_mem.lock);
      g_mem.active -= cap;
      pthread_mutex_unlock(&g_mem.lock);
      return CMX__FAIL(CMX_ERR_MEMORY,
                       "[malloc] out of host memory allocating %zu bytes",
                       bytes);
    }
  }
  buffer_init(b, bytes, cap, p);
  return b;
}

cmx__buffer* cmx__buffer_retain(cmx__buffer* b) {
  if (b) atomic_fetch_add_explicit(&b->refcount, 1, memory_order_relaxed);
  return b;
}

void cmx__buffer_release(cmx__buffer* b) {
  if (!b) return;
  if (atomic_fetch_sub_explicit(&b->refcount, 1, memory_order_acq_rel) != 1)
    return;
  if (b->dev && cmx__device_hooks) cmx__device_hooks->free_device(b);
  if (b->ext_release) b->ext_release(b->ext_ctx);
  if (b->host) {
    size_t cap;
    int cls = size_class(b->capacity, &cap);
    pthread_mutex_lock(&g_mem.lock);
    g_mem.active -= b->capacity;
    if (cls >= 0 && cap == b->capacity &&
        g_mem.cache - g_mem.dev_cache + cap <= g_mem.cache_limit) {
      b->next_free = g_mem.free_lists[cls];
      g_mem.free_lists[cls] = b;
      g_mem.cache += cap;
      pthread_mutex_unlock(&g_mem.lock);
      return;
    }
    pthread_mutex_unlock(&g_mem.lock);
    free(b->host);
  }
  free(b);
}

cmx_status cmx__buffer_to_host(cmx__buffer* b) {
  if (b->host_valid) return CMX_OK;
  if (!cmx__device_hooks)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[eval] data is on a device but no device backend is "
                      "loaded");
  return cmx__device_hooks->to_host(b);
}

/* Device backends account the host copies they create through these. */
void cmx__mem_account(size_t cap, int sign);
void cmx__mem_account(size_t cap, int sign) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  if (sign > 0) {
    g_mem.active += cap;
    if (g_mem.active > g_mem.peak) g_mem.peak = g_mem.active;
  } else {
    g_mem.active -= cap;
  }
  pthread_mutex_unlock(&g_mem.lock);
}

size_t cmx_get_active_memory(void) {
  pthread_mutex_lock(&g_mem.lock);
  size_t v = g_mem.active;
  pthread_mutex_unlock(&g_mem.lock);
  return v;
}
size_t cmx_get_peak_memory(void) {
  pthread_mutex_lock(&g_mem.lock);
  size_t v = g_mem.peak;
  pthread_mutex_unlock(&g_mem.lock);
  return v;
}
void cmx_reset_peak_memory(void) {
  pthread_mutex_lock(&g_mem.lock);
  g_mem.peak = g_mem.active;
  pthread_mutex_unlock(&g_mem.lock);
}
size_t cmx_get_cache_memory(void) {
  pthread_mutex_lock(&g_mem.lock);
  size_t v = g_mem.cache;
  pthread_mutex_unlock(&g_mem.lock);
  return v;
}
cmx_status cmx_set_memory_limit(size_t limit, size_t* previous) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  if (previous) *previous = g_mem.limit;
  g_mem.limit = limit; /* as given, 0 too (MLX: the limit in bytes) */
  /* A limit other than the default (the host's memory) bounds GPU bytes
   * too; the default leaves each GPU to its own memory. */
  g_mem.limit_set = limit != phys_memory();
  pthread_mutex_unlock(&g_mem.lock);
  return CMX_OK;
}
size_t cmx_get_memory_limit(void) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  size_t v = g_mem.limit;
  pthread_mutex_unlock(&g_mem.lock);
  return v;
}
cmx_status cmx_set_cache_limit(size_t limit, size_t* previous) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  if (previous) *previous = g_mem.cache_limit;
  g_mem.cache_limit = limit;
  trim_cache_locked(limit);
  pthread_mutex_unlock(&g_mem.lock);
  if (cmx__device_hooks && cmx__device_hooks->trim_cache)
    cmx__device_hooks->trim_cache(limit);
  return CMX_OK;
}
void cmx_clear_cache(void) {
  pthread_mutex_lock(&g_mem.lock);
  trim_cache_locked(0);
  pthread_mutex_unlock(&g_mem.lock);
  if (cmx__device_hooks && cmx__device_hooks->trim_cache)
    cmx__device_hooks->trim_cache(0);
}

/* ---------------- device bytes (device backends) ---------------- */

cmx_status cmx__mem_device_reserve(size_t cap, const char* op, size_t bytes) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  if (g_mem.limit_set && g_mem.dev_active + cap > g_mem.limit) {
    size_t limit = g_mem.limit, used = g_mem.dev_active;
    pthread_mutex_unlock(&g_mem.lock);
    return cmx__error(CMX_ERR_MEMORY,
                      "[%s] allocating %zu bytes of device memory would "
                      "exceed the memory limit of %zu bytes (%zu in use)",
                      op, bytes, limit, used);
  }
  g_mem.dev_active += cap;
  g_mem.active += cap;
  if (g_mem.active > g_mem.peak) g_mem.peak = g_mem.active;
  pthread_mutex_unlock(&g_mem.lock);
  return CMX_OK;
}

/* Takes cap off a device figure and the total it is part of. */
static void sub_locked(size_t* part, size_t* total, size_t cap) {
  pthread_mutex_lock(&g_mem.lock);
  *part -= cap;
  *total -= cap;
  pthread_mutex_unlock(&g_mem.lock);
}

void cmx__mem_device_unreserve(size_t cap) {
  sub_locked(&g_mem.dev_active, &g_mem.active, cap);
}

bool cmx__mem_device_cache_add(size_t cap) {
  pthread_mutex_lock(&g_mem.lock);
  mem_init_locked();
  bool ok = g_mem.dev_cache + cap <= g_mem.cache_limit;
  if (ok) {
    g_mem.dev_cache += cap;
    g_mem.cache += cap;
  }
  pthread_mutex_unlock(&g_mem.lock);
  return ok;
}

void cmx__mem_device_cache_sub(size_t cap) {
  sub_locked(&g_mem.dev_cache, &g_mem.cache, cap);
}

static size_t read_locked(const size_t* field) {
  pthread_mutex_lock(&g_mem.lock);
  size_t v = *field;
  pthread_mutex_unlock(&g_mem.lock);
  return v;
}
size_t cmx__mem_device_cached(void) {
  return read_locked(&g_mem.dev_cache);
}
size_t cmx__mem_device_active(void) {
  return read_locked(&g_mem.dev_active);
}
