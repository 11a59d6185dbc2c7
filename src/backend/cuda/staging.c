/* Host<->device copies through a ring of page-locked (pinned) staging
 * chunks per device.
 *
 * The DMA engines copy from pinned memory at the bus's speed, while a copy
 * from pageable memory goes through the driver's own small bounce buffers
 * and runs far slower. Each device has CHUNKS chunks of CHUNK bytes
 * (cuMemHostAlloc, made at the first copy); a copy moves through them in
 * pieces, the CPU filling (or draining) one chunk while the DMA engine
 * moves another, each chunk's last DMA marked by an event that its next
 * use waits for. Without the pinned entry points, or when the chunks
 * cannot be made, copies go straight from pageable memory.
 *
 * The CPU's side of each piece is spread over the thread pool (a single
 * thread copies, and faults in fresh pages, far slower than the bus).
 * One copy at a time uses a device's ring (a lock per device).
 *
 * With CMX_GPU_D2H_REGISTER=1, a device->host copy of at least
 * REGISTER_MIN bytes instead page-locks its destination
 * (cuMemHostRegister) and has the DMA engine write there directly: no
 * CPU copy at all, at the price of pinning (and faulting in) the pages;
 * if registering fails the ring is used. Off by default: on an H100 host
 * (bench_gpu, 256 MB into a fresh buffer) it ran at 2.1 GB/s against the
 * ring's 6.6 to 9.6 GB/s, pinning fresh pages costing far more than the
 * copy it saves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

#define CHUNKS 4
#define CHUNK ((size_t)8 << 20)
#define MAX_RING_DEVICES 16

typedef struct ring {
  pthread_mutex_t lock;
  bool tried, ok;
  void* buf[CHUNKS];
  CUevent ev[CHUNKS];
  bool pending[CHUNKS]; /* ev recorded after the chunk's last DMA */
} ring;

static ring g_rings[MAX_RING_DEVICES] = {
    [0 ... MAX_RING_DEVICES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}};
#define REGISTER_MIN ((size_t)16 << 20)

static _Atomic uint64_t g_staged, g_direct, g_registered;

cmx__gpu_staging_stats cmx__gpu_staging_stats_get(void) {
  return (cmx__gpu_staging_stats){atomic_load(&g_staged),
                                  atomic_load(&g_direct),
                                  atomic_load(&g_registered)};
}

/* Device to host straight into dst, page-locked for the copy: false when
 * that is off or dst cannot be registered (*e then untouched). Read each
 * time, so a process can compare both ways. */
static bool d2h_registered(void* dst, CUdeviceptr src, size_t bytes, CUstream s,
                           CUresult* e) {
  const char* on = getenv("CMX_GPU_D2H_REGISTER");
  if (!on || strcmp(on, "1") != 0 || bytes < REGISTER_MIN ||
      !cmx__cu.cuMemHostRegister || !cmx__cu.cuMemHostUnregister)
    return false;
  if (cmx__cu.cuMemHostRegister(dst, bytes, 0) != CUDA_SUCCESS) return false;
  *e = cmx__cu.cuMemcpyDtoHAsync(dst, src, bytes, s);
  CUresult w = cmx__cu.cuStreamSynchronize(s);
  if (*e == CUDA_SUCCESS) *e = w;
  cmx__cu.cuMemHostUnregister(dst);
  atomic_fetch_add(&g_registered, 1);
  return true;
}

/* Makes r's chunks (lock held, dev's context current); false when pinned
 * memory is unavailable. */
static bool ring_ready(ring* r) {
  if (r->tried) return r->ok;
  r->tried = true;
  if (!cmx__cu.cuMemHostAlloc || !cmx__cu.cuMemFreeHost) return false;
  for (int i = 0; i < CHUNKS; i++) {
    if (cmx__cu.cuMemHostAlloc(&r->buf[i], CHUNK, 0) != CUDA_SUCCESS ||
        cmx__cu.cuEventCreate(&r->ev[i], CU_EVENT_DISABLE_TIMING) !=
            CUDA_SUCCESS) {
      for (int k = 0; k <= i; k++) {
        if (r->buf[k]) cmx__cu.cuMemFreeHost(r->buf[k]);
        if (r->ev[k]) cmx__cu.cuEventDestroy(r->ev[k]);
        r->buf[k] = NULL;
        r->ev[k] = NULL;
      }
      return false;
    }
  }
  r->ok = true;
  return true;
}

/* Waits until chunk i's last DMA is done. */
static CUresult chunk_wait(ring* r, int i) {
  if (!r->pending[i]) return CUDA_SUCCESS;
  r->pending[i] = false;
  return cmx__cu.cuEventSynchronize(r->ev[i]);
}

static CUresult chunk_mark(ring* r, int i, CUstream s) {
  CUresult e = cmx__cu.cuEventRecord(r->ev[i], s);
  r->pending[i] = e == CUDA_SUCCESS;
  return e;
}

/* memcpy of n bytes, spread over the thread pool in 1 MiB pieces: one
 * thread copies (and faults in fresh pages) at well under the bus's
 * speed. */
typedef struct {
  char* dst;
  const char* src;
} copy_job;

#define PIECE ((int64_t)1 << 20)

static void copy_range(void* ctx, int64_t begin, int64_t end) {
  copy_job* j = ctx;
  memcpy(j->dst + begin * PIECE, j->src + begin * PIECE,
         (size_t)((end - begin) * PIECE));
}

static void par_memcpy(void* dst, const void* src, size_t n) {
  int64_t pieces = (int64_t)(n / (size_t)PIECE);
  size_t tail = n - (size_t)pieces * (size_t)PIECE;
  copy_job j = {dst, src};
  if (pieces) cmx__parallel_for(pieces, 1, copy_range, &j);
  if (tail)
    memcpy((char*)dst + (size_t)pieces * (size_t)PIECE,
           (const char*)src + (size_t)pieces * (size_t)PIECE, tail);
}

static ring* ring_of(int dev) {
  return dev >= 0 && dev < MAX_RING_DEVICES ? &g_rings[dev] : NULL;
}

/* Host to device through the ring (lock held, chunks ready). */
static CUresult ring_h2d(ring* r, CUdeviceptr dst, const void* src,
                         size_t bytes, CUstream s) {
  CUresult e = CUDA_SUCCESS;
  size_t done = 0;
  for (int i = 0; e == CUDA_SUCCESS && done < bytes; i = (i + 1) % CHUNKS) {
    size_t n = bytes - done < CHUNK ? bytes - done : CHUNK;
    e = chunk_wait(r, i);
    if (e != CUDA_SUCCESS) break;
    par_memcpy(r->buf[i], (const char*)src + done, n);
    e = cmx__cu.cuMemcpyHtoDAsync(dst + done, r->buf[i], n, s);
    if (e == CUDA_SUCCESS) e = chunk_mark(r, i, s);
    done += n;
  }
  return e;
}

/* Device to host through the ring: up to CHUNKS pieces in flight, piece k
 * in chunk k % CHUNKS, each drained (waited for, copied out) before its
 * chunk is refilled. */
static CUresult ring_d2h(ring* r, void* dst, CUdeviceptr src, size_t bytes,
                         CUstream s) {
  CUresult e = CUDA_SUCCESS;
  size_t npieces = (bytes + CHUNK - 1) / CHUNK, issued = 0;
  for (size_t k = 0; e == CUDA_SUCCESS && k < npieces; k++) {
    while (e == CUDA_SUCCESS && issued < npieces && issued < k + CHUNKS) {
      int i = (int)(issued % CHUNKS);
      size_t off = issued * CHUNK;
      size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
      e = chunk_wait(r, i); /* an earlier copy's DMA from this chunk */
      if (e == CUDA_SUCCESS)
        e = cmx__cu.cuMemcpyDtoHAsync(r->buf[i], src + off, n, s);
      if (e == CUDA_SUCCESS) e = chunk_mark(r, i, s);
      issued++;
    }
    if (e != CUDA_SUCCESS) break;
    int i = (int)(k % CHUNKS);
    size_t off = k * CHUNK;
    size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
    e = chunk_wait(r, i);
    if (e == CUDA_SUCCESS) par_memcpy((char*)dst + off, r->buf[i], n);
  }
  return e;
}

/* A copy either way: through dev's ring, else directly (pageable memory:
 * waited for, as the host side must stay put until it is done). */
static cmx_status stage(int dev, bool up, CUdeviceptr d, void* h, size_t bytes,
                        CUstream s) {
  CUresult e;
  if (!up && d2h_registered(h, d, bytes, s, &e)) goto done;
  ring* r = ring_of(dev);
  if (r) pthread_mutex_lock(&r->lock);
  if (r && ring_ready(r)) {
    atomic_fetch_add(&g_staged, 1);
    e = up ? ring_h2d(r, d, h, bytes, s) : ring_d2h(r, h, d, bytes, s);
  } else {
    atomic_fetch_add(&g_direct, 1);
    e = up ? cmx__cu.cuMemcpyHtoDAsync(d, h, bytes, s)
           : cmx__cu.cuMemcpyDtoHAsync(h, d, bytes, s);
    if (e == CUDA_SUCCESS) e = cmx__cu.cuStreamSynchronize(s);
  }
  if (r) pthread_mutex_unlock(&r->lock);
done:
  if (e == CUDA_SUCCESS) return CMX_OK;
  return cmx__cu_error(
      e, "gpu", up ? "copying data to the device" : "copying data to the host");
}

cmx_status cmx__gpu_stage_h2d(int dev, CUdeviceptr dst, const void* src,
                              size_t bytes, CUstream s) {
  return stage(dev, true, dst, (void*)src, bytes, s);
}

cmx_status cmx__gpu_stage_d2h(int dev, void* dst, CUdeviceptr src, size_t bytes,
                              CUstream s) {
  return stage(dev, false, src, dst, bytes, s);
}
