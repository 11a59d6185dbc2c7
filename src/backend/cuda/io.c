/* The GPU kernel of Load: the file's bytes read on the host, piece by
 * piece, and copied up through the device's pinned staging ring
 * (staging.c), in the task stream's order. A piece is at most PIECE bytes,
 * so a large array never needs a host copy of its whole size. */
#include "primitives/io.h"

#include <stdlib.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"

#define PIECE ((size_t)64 << 20)

typedef struct {
  const cmx__load_params* q;
  CUdeviceptr dst;
  size_t bytes;
  int dev;
} load_ctx;

/* Reads and uploads the pieces on stream s; returns once the last piece's
 * host memory is no longer needed (its copy may still be queued). */
static cmx_status load_run(void* ctx, CUstream s) {
  load_ctx* c = ctx;
  size_t piece = c->bytes < PIECE ? c->bytes : PIECE;
  void* host = malloc(piece);
  if (!host)
    return cmx_kernel_error(CMX_ERR_MEMORY,
                            "[load] out of host memory (%zu bytes)", piece);
  cmx_status st = CMX_OK;
  for (size_t at = 0; st == CMX_OK && at < c->bytes; at += piece) {
    size_t n = c->bytes - at < piece ? c->bytes - at : piece;
    st = cmx__load_read(c->q, host, at, n);
    if (st == CMX_OK) st = cmx__gpu_stage_h2d(c->dev, c->dst + at, host, n, s);
  }
  free(host);
  return st;
}

cmx_status cmx__gpu_load(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)in, (void)nin, (void)nout;
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(out[0]);
  load_ctx c = {cmx_primitive_params(p), 0, cmx_array_nbytes(out[0]), dev};
  if (st != CMX_OK || !c.bytes) return st;
  st = cmx__gpu_ptr(out[0], dev, &c.dst);
  if (st == CMX_OK) st = cmx__gpu_call(cmx_primitive_name(p), load_run, &c);
  if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
  return st;
}
