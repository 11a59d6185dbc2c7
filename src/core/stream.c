/* Devices and streams: the global stream table, per-thread defaults, and
 * resolution of stream-or-device values. */
#include <stdlib.h>

#include "core/backend.h"
#include "core/sched.h"

static struct {
  pthread_mutex_t lock;
  /* Entries are written once, before count is published, and never freed,
   * so lookups read them without the lock. */
  _Atomic(cmx__stream*) table[CMX__MAX_STREAMS];
  _Atomic int count;
  /* The process-wide default stream per device type: set once (under the
   * lock), then read without it on every op. */
  _Atomic int default_index[2];
} g_streams = {.lock = PTHREAD_MUTEX_INITIALIZER, .default_index = {-1, -1}};

static _Thread_local int tl_default_stream[2] CMX__TLS_FAST = {-1, -1};
/* -1: process default */
static _Thread_local int tl_default_device CMX__TLS_FAST = -1;

cmx_device cmx_device_cpu(void) {
  return (cmx_device){CMX_CPU, 0};
}
cmx_device cmx_device_gpu(void) {
  return (cmx_device){CMX_GPU, 0};
}
cmx_stream cmx_stream_on(cmx_device dev) {
  return (cmx_stream){-1, dev};
}
bool cmx_device_equal(cmx_device a, cmx_device b) {
  return a.type == b.type && a.index == b.index;
}
bool cmx_stream_equal(cmx_stream a, cmx_stream b) {
  return a.index == b.index && cmx_device_equal(a.device, b.device);
}

/* The number of devices of a backend with device queries (the GPU). */
static int backend_devices(cmx_device_type type) {
  const cmx__backend* b = cmx__backend_get(type);
  return b && b->device_count ? b->device_count() : 0;
}

/* Why a device backend has no device, for messages. */
static const char* backend_reason(cmx_device_type type) {
  const cmx__backend* b = cmx__backend_get(type);
  if (!b || !b->unavailable_reason) return "no backend for this device";
  return b->unavailable_reason();
}

int cmx_device_count(cmx_device_type type) {
  if (type == CMX_CPU) return 1;
  if (type == CMX_GPU) return backend_devices(CMX_GPU);
  return 0;
}

bool cmx_is_available(cmx_device dev) {
  if (dev.type == CMX_CPU) return dev.index == 0;
  if (dev.type == CMX_GPU)
    return dev.index >= 0 && dev.index < cmx_device_count(CMX_GPU);
  return false;
}

/* Whether the GPU is the default device when one is present and
 * CMX_DEFAULT_DEVICE is unset: yes, as in MLX (CMX_DEFAULT_DEVICE=cpu keeps
 * the CPU). Without a GPU (no driver, or no card) the CPU is the default
 * either way. */
#define CMX__GPU_DEFAULT_WHEN_PRESENT true

/* The process default device type, once known (-1 before): the
 * environment is read once and the GPU count is fixed when the driver
 * loads, so it never changes; every op asks. */
static _Atomic int g_default_type = -1;

cmx_device cmx_default_device(void) {
  int t = tl_default_device;
  if (t < 0) t = atomic_load_explicit(&g_default_type, memory_order_relaxed);
  if (t < 0) {
    int env = cmx__env_get()->default_gpu;
    bool want = env < 0 ? CMX__GPU_DEFAULT_WHEN_PRESENT : env == 1;
    t = want && backend_devices(CMX_GPU) ? 1 : 0;
    atomic_store_explicit(&g_default_type, t, memory_order_relaxed);
  }
  return (cmx_device){(cmx_device_type)t, 0};
}

static cmx_status check_device(cmx_device dev, const char* op) {
  if (dev.type != CMX_CPU && dev.type != CMX_GPU)
    return cmx__error(CMX_ERR_VALUE, "[%s] unknown device type %d", op,
                      (int)dev.type);
  if (!cmx_is_available(dev)) {
    const char* why = dev.type == CMX_GPU ? backend_reason(CMX_GPU) : "";
    return cmx__error(CMX_ERR_VALUE, "[%s] device %s:%d is not available%s%s",
                      op, dev.type == CMX_GPU ? "gpu" : "cpu", dev.index,
                      *why ? ": " : "", why);
  }
  return CMX_OK;
}

cmx_status cmx_set_default_device(cmx_device dev) {
  cmx_status st = check_device(dev, "set_default_device");
  if (st != CMX_OK) return st;
  tl_default_device = (int)dev.type;
  return CMX_OK;
}

void cmx__streams_fork(int phase) {
  if (phase == CMX__FORK_PREPARE)
    pthread_mutex_lock(&g_streams.lock);
  else
    pthread_mutex_unlock(&g_streams.lock);
}

cmx__stream* cmx__stream_register(cmx_device dev, const cmx__stream_ops* ops,
                                  void* backend) {
  cmx__stream* s = calloc(1, sizeof *s);
  if (!s) return CMX__FAIL(CMX_ERR_MEMORY, "[new_stream] out of host memory");
  pthread_mutex_lock(&g_streams.lock);
  if (atomic_load(&g_streams.count) == CMX__MAX_STREAMS) {
    pthread_mutex_unlock(&g_streams.lock);
    free(s);
    return CMX__FAIL(CMX_ERR_RUNTIME, "[new_stream] at most %d streams",
                     CMX__MAX_STREAMS);
  }
  int idx = atomic_load(&g_streams.count);
  s->index = idx;
  s->device = dev;
  s->ops = ops;
  s->backend = backend;
  atomic_init(&s->completed, 0);
  atomic_store(&g_streams.table[idx], s);
  atomic_store(&g_streams.count, idx + 1);
  pthread_mutex_unlock(&g_streams.lock);
  return s;
}

static cmx__stream* new_stream(cmx_device dev) {
  if (dev.type != CMX_CPU) {
    const cmx__backend* b = cmx__backend_get(dev.type);
    if (!b || !b->stream_new)
      return CMX__FAIL(CMX_ERR_VALUE, "[new_stream] no backend for device %d",
                       (int)dev.type);
    return b->stream_new(dev.index);
  }
  cmx__stream* s = cmx__stream_register(dev, &cmx__cpu_stream_ops, NULL);
  if (!s) return NULL;
  s->backend = cmx__cpu_worker_new(s);
  if (!s->backend) return NULL; /* stays registered but unused */
  return s;
}

cmx__stream* cmx__stream_get(int index) {
  if (index < 0 ||
      index >= atomic_load_explicit(&g_streams.count, memory_order_acquire))
    return NULL;
  return atomic_load_explicit(&g_streams.table[index], memory_order_acquire);
}

static cmx__stream* default_stream_of(cmx_device dev) {
  int t = (int)dev.type;
  if (tl_default_stream[t] >= 0) return cmx__stream_get(tl_default_stream[t]);
  int idx =
      atomic_load_explicit(&g_streams.default_index[t], memory_order_acquire);
  if (idx >= 0) return cmx__stream_get(idx);
  /* Create outside the lock (a new stream registers itself). */
  cmx__stream* s = new_stream(dev);
  if (!s || !s->backend) return NULL;
  pthread_mutex_lock(&g_streams.lock);
  if (atomic_load(&g_streams.default_index[t]) < 0)
    atomic_store(&g_streams.default_index[t], s->index);
  idx = atomic_load(&g_streams.default_index[t]);
  pthread_mutex_unlock(&g_streams.lock);
  return cmx__stream_get(idx);
}

cmx__stream* cmx__stream_resolve(cmx_stream s, const char* op) {
  if (s.index >= 0) {
    cmx__stream* st = cmx__stream_get(s.index);
    if (!st || !st->backend)
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] unknown stream %d", op, s.index);
    return st;
  }
  /* The default device is available (checked when it was chosen or
   * set): only a device named here is checked. */
  if (s.device.index < 0) return default_stream_of(cmx_default_device());
  if (check_device(s.device, op) != CMX_OK) return NULL;
  return default_stream_of(s.device);
}

cmx_status cmx_stream_resolve(cmx_stream* out, cmx_stream s) {
  cmx__stream* st = cmx__stream_resolve(s, "stream");
  if (!st) return cmx_last_status();
  if (out) *out = (cmx_stream){st->index, st->device};
  return CMX_OK;
}

cmx_status cmx_default_stream(cmx_stream* out, cmx_device dev) {
  return cmx_stream_resolve(out, cmx_stream_on(dev));
}

cmx_status cmx_set_default_stream(cmx_stream s) {
  cmx__stream* st = cmx__stream_resolve(s, "set_default_stream");
  if (!st) return cmx_last_status();
  tl_default_stream[st->device.type] = st->index;
  return CMX_OK;
}

cmx_status cmx_new_stream(cmx_stream* out, cmx_device dev) {
  cmx_status st = check_device(dev, "new_stream");
  if (st != CMX_OK) return st;
  cmx__stream* s = new_stream(dev);
  if (!s || !s->backend) return cmx_last_status();
  if (out) *out = (cmx_stream){s->index, s->device};
  return CMX_OK;
}

bool cmx__stream_done(int index, uint64_t seq) {
  cmx__stream* s = cmx__stream_get(index);
  if (!s || atomic_load_explicit(&s->completed, memory_order_acquire) >= seq)
    return true;
  if (!s->ops->poll) return false;
  s->ops->poll(s);
  return atomic_load_explicit(&s->completed, memory_order_acquire) >= seq;
}

void cmx__stream_wait(int index, uint64_t seq) {
  cmx__stream* s = cmx__stream_get(index);
  if (!s || atomic_load_explicit(&s->completed, memory_order_acquire) >= seq)
    return;
  s->ops->wait(s, seq);
}

/* The last seq handed out on a stream (read under the eval lock). */
uint64_t cmx__stream_last_seq(cmx__stream* s);

cmx_status cmx_synchronize(cmx_stream s) {
  cmx__stream* st = cmx__stream_resolve(s, "synchronize");
  if (!st) return cmx_last_status();
  st->ops->wait(st, cmx__stream_last_seq(st));
  return CMX_OK;
}

cmx_status cmx_synchronize_all(void) {
  for (int i = 0; i < CMX__MAX_STREAMS; i++) {
    cmx__stream* st = cmx__stream_get(i);
    if (!st) break;
    if (st->backend) st->ops->wait(st, cmx__stream_last_seq(st));
  }
  return CMX_OK;
}
