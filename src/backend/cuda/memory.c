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

/* Allocates bytes (> 0) on device dev, ordered on stream s. After an
 * out-of-memory failure it waits for the device (frees still in flight
 * return their memory to the pool) and tries once more. */
static cmx_status dev_alloc(int dev, size_t bytes, CUstream s,
                            CUdeviceptr* out) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  for (int attempt = 0; attempt < 2 && r == CUDA_ERROR_OUT_OF_MEMORY;
       attempt++) {
    if (attempt) cmx__cu.cuCtxSynchronize();
    r = d->pools ? cmx__cu.cuMemAllocAsync(out, bytes, s)
                 : cmx__cu.cuMemAlloc(out, bytes);
  }
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "allocating %zu bytes on gpu:%d", bytes, dev);
    return cmx__cu_error(r, "gpu", what);
  }
  count_bytes(bytes, +1);
  return CMX_OK;
}

/* Frees p (bytes long) on device dev. Stream-ordered: on the current task's
 * stream when the freeing thread runs one of dev's tasks, else on the
 * device's free stream; either way after the pending work of every other
 * stream, which may still read p. */
static void dev_free(int dev, CUdeviceptr p, size_t bytes) {
  if (cmx__gpu_ctx_enter(dev) != CMX_OK) return; /* no device: nothing to do */
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (d->pools) {
    int cur_dev = -1;
    CUstream cur = cmx__gpu_current_stream(&cur_dev);
    CUstream target = cur && cur_dev == dev ? cur : d->free_stream;
    cmx__gpu_order_after_all(dev, target);
    cmx__cu.cuMemFreeAsync(p, target);
  } else {
    cmx__cu.cuCtxSynchronize(); /* cuMemFree does not order after work */
    cmx__cu.cuMemFree(p);
  }
  count_bytes(bytes, -1);
}

static cmx_status to_host_locked(cmx__buffer* b) {
  if (b->host_valid) return CMX_OK;
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
    cmx_status st = cmx__gpu_ctx_enter(b->dev_index);
    if (st != CMX_OK) return st;
    cmx__gpu_device* d = cmx__gpu_device_get(b->dev_index);
    CUresult r =
        cmx__cu.cuMemcpyDtoHAsync(b->host, b->dev, b->size, d->copy_stream);
    if (r == CUDA_SUCCESS) r = cmx__cu.cuStreamSynchronize(d->copy_stream);
    if (r != CUDA_SUCCESS)
      return cmx__cu_error(r, "gpu", "copying data to the host");
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

static cmx_status to_device_locked(cmx__buffer* b, int dev) {
  if (b->dev_valid && b->dev_index == dev) return CMX_OK;
  cmx_status st;
  if (b->dev_valid) { /* current on another device: stage through host */
    st = to_host_locked(b);
    if (st != CMX_OK) return st;
  }
  if (b->dev && b->dev_index != dev) {
    dev_free(b->dev_index, b->dev, b->size);
    b->dev = 0;
  }
  b->dev_valid = false;
  st = cmx__gpu_ctx_enter(dev);
  if (st != CMX_OK) return st;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (b->size) {
    if (!b->dev) {
      CUdeviceptr p;
      st = dev_alloc(dev, b->size, d->copy_stream, &p);
      if (st != CMX_OK) return st;
      b->dev = p;
    } else {
      /* A stale copy being refreshed may still be read by queued work. */
      cmx__gpu_order_after_all(dev, d->copy_stream);
    }
    CUresult r = CUDA_SUCCESS;
    if (b->host_valid)
      r = cmx__cu.cuMemcpyHtoDAsync(b->dev, b->host, b->size, d->copy_stream);
    /* Also makes a fresh allocation usable on every stream. */
    if (r == CUDA_SUCCESS) r = cmx__cu.cuStreamSynchronize(d->copy_stream);
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

/* Called by the last release of b (nobody else can touch it). */
static void hook_free_device(cmx__buffer* b) {
  if (b->dev) dev_free(b->dev_index, b->dev, b->size);
  b->dev = 0;
  b->dev_valid = false;
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
    cmx_status st = dev_alloc(dev, bytes, s ? s : d->copy_stream, &p);
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
    .alloc_device = hook_alloc_device};
