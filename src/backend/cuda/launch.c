/* Helpers of the eval_gpu kernels: device pointers, output allocation with
 * donation, layout collapsing, and launching on the task's stream. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "core/layout.h"
#include "primitives/registry.h"

#define THREADS 256
#define BLOCKS_PER_SM                                \
  16 /* grid-stride loops: enough blocks to fill the \
        device several times over, no more */

cmx_status cmx__gpu_ptr(cmx_array a, int dev, CUdeviceptr* out) {
  *out = 0;
  if (a->size == 0) return CMX_OK;
  cmx__buffer* b = a->buf;
  if (!b) return cmx__error(CMX_ERR_RUNTIME, "[gpu] array has no data");
  if (!(b->dev_valid && b->dev_index == dev)) {
    cmx_status st = cmx__device_hooks->to_device(b, dev);
    if (st != CMX_OK) return st;
  }
  *out = b->dev + (CUdeviceptr)(a->offset * (int64_t)cmx_dtype_size(a->dtype));
  return CMX_OK;
}

/* cmx__can_donate, counting the references the submitting thread holds to
 * keep the task's buffers alive (gpu_submit). */
static bool can_donate(cmx_array out, cmx_array in, int dev) {
  cmx__buffer* b = in->buf;
  size_t bytes = (size_t)out->size * cmx_dtype_size(out->dtype);
  return b && in != out && in->size == out->size &&
         cmx_dtype_size(in->dtype) == cmx_dtype_size(out->dtype) &&
         atomic_load_explicit(&in->refcount, memory_order_acquire) == 1 &&
         atomic_load_explicit(&b->refcount, memory_order_acquire) ==
             1 + cmx__gpu_task_holds(b) &&
         (in->flags & CMX__FLAG_ROW_CONTIG) && in->offset == 0 &&
         b->size >= bytes && b->dev_valid && b->dev_index == dev;
}

cmx_status cmx__gpu_alloc_out(cmx_array out, const cmx_array* cands, int n,
                              int dev, int* donated) {
  if (donated) *donated = -1;
  for (int i = 0; i < n && out->size > 0; i++) {
    if (!can_donate(out, cands[i], dev)) continue;
    out->buf = cmx__buffer_retain(cands[i]->buf);
    out->offset = 0;
    out->data_size = out->size;
    cmx__node_set_row_major(out);
    CUstream s = cmx__gpu_current_stream(NULL);
    if (s) cmx__gpu_order_after_all(dev, s);
    if (donated) *donated = i;
    return CMX_OK;
  }
  return cmx_kernel_alloc(out);
}

void cmx__gpu_collapse(const cmx_array* arrays, int n, cmx__gpu_layout* l) {
  CMX__ASSERT(n >= 1 && n <= 3);
  cmx_array o = arrays[0];
  memcpy(l->shape, o->dims, (size_t)o->ndim * sizeof(int64_t));
  for (int k = 0; k < n; k++) {
    CMX__ASSERT(arrays[k]->ndim == o->ndim);
    memcpy(l->strides[k], CMX__STRIDES(arrays[k]),
           (size_t)o->ndim * sizeof(int64_t));
  }
  l->ndim = cmx__layout_collapse(
      l->shape, o->ndim,
      (int64_t* const[]){l->strides[0], l->strides[1], l->strides[2]}, n);
  for (int k = n; k < 3; k++)
    for (int d = 0; d < l->ndim; d++) l->strides[k][d] = 0;
}

bool cmx__gpu_layout_fits_i32(const cmx__gpu_layout* l, int narr,
                              int64_t size) {
  /* 2^30 leaves room for i + (threads in the grid) to stay below 2^31. */
  const int64_t lim = (int64_t)1 << 30;
  if (size >= lim) return false;
  for (int k = 1; k < narr; k++) {
    int64_t reach = 0;
    for (int d = 0; d < l->ndim; d++) {
      int64_t s = l->strides[k][d] < 0 ? -l->strides[k][d] : l->strides[k][d];
      if (s >= lim) return false;
      reach += (l->shape[d] - 1) * s;
      if (reach >= lim) return false;
    }
  }
  return true;
}

cmx_status cmx__gpu_launch(const char* op, CUfunction f, int64_t work,
                           void** args) {
  int dev = -1;
  CUstream s = cmx__gpu_current_stream(&dev);
  if (!s)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] a gpu kernel can only run on a gpu stream", op);
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  int64_t blocks = (work + THREADS - 1) / THREADS;
  int64_t cap = (int64_t)d->sm_count * BLOCKS_PER_SM;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  CUresult r = cmx__cu.cuLaunchKernel(f, (unsigned)blocks, 1, 1, THREADS, 1, 1,
                                      0, s, args, NULL);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "launching its gpu kernel");
    return cmx__cu_error(r, op, what);
  }
  return CMX_OK;
}

int cmx__gpu_variants(cmx__gpu_variant* out, int cap) {
  int n = 0;
  for (int id = 0; id < CMX__NUM_PRIMITIVES; id++)
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
      char pre[512];
      if (!cmx__gpu_binary_prelude(id, (cmx_dtype)dt, pre, sizeof pre))
        continue;
      if (n < cap) {
        out[n].file = "binary";
        snprintf(out[n].prelude, sizeof out[n].prelude, "%s", pre);
        snprintf(out[n].name, sizeof out[n].name, "binary_%s_%s",
                 cmx__all_primitives[id]->name, cmx_dtype_name((cmx_dtype)dt));
      }
      n++;
    }
  for (size_t size = 1; size <= 8; size *= 2) {
    if (n < cap) {
      out[n].file = "copy";
      cmx__gpu_copy_prelude(size, out[n].prelude, sizeof out[n].prelude);
      snprintf(out[n].name, sizeof out[n].name, "copy_%zu", size);
    }
    n++;
  }
  return n;
}
