/* Helpers of the eval_gpu kernels: device pointers, output allocation with
 * donation, and the collapsed layouts that strided kernels take. */
#include <string.h>

#include "backend/cuda/gpu.h"
#include "core/layout.h"
#include "primitives/registry.h"

cmx_status cmx__gpu_ptr(cmx_array a, int dev, CUdeviceptr* out) {
  *out = 0;
  if (a->size == 0) return CMX_OK;
  cmx__buffer* b = a->buf;
  if (!b) return cmx__error(CMX_ERR_RUNTIME, "[gpu] array has no data");
  if (!cmx__buffer_dev_ready(b, dev)) {
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
  return b && in != out && !b->ext_release && in->size == out->size &&
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

void cmx__gpu_layout_from(cmx__gpu_layout* l, const int64_t* shape, int ndim,
                          const int64_t* const* strides, int n) {
  CMX__ASSERT(n >= 1 && n <= CMX__GPU_MAX_OPERANDS);
  int64_t* st[CMX__GPU_MAX_OPERANDS];
  for (int k = 0; k < n; k++) {
    st[k] = l->strides[k];
    memcpy(st[k], strides[k], (size_t)ndim * sizeof(int64_t));
  }
  memcpy(l->shape, shape, (size_t)ndim * sizeof(int64_t));
  l->narr = n;
  l->ndim = cmx__layout_collapse(l->shape, ndim, st, n);
}

void cmx__gpu_layout_make(cmx__gpu_layout* l, const cmx_array* arrays, int n) {
  const int64_t* st[CMX__GPU_MAX_OPERANDS];
  for (int k = 0; k < n; k++) {
    CMX__ASSERT(arrays[k]->ndim == arrays[0]->ndim);
    st[k] = CMX__STRIDES(arrays[k]);
  }
  cmx__gpu_layout_from(l, arrays[0]->dims, arrays[0]->ndim, st, n);
}

bool cmx__gpu_layout_fits_i32(const cmx__gpu_layout* l, int64_t size) {
  /* 2^30 leaves room for i + (threads in the grid) to stay below 2^31. */
  const int64_t lim = (int64_t)1 << 30;
  if (size >= lim) return false;
  for (int k = 0; k < l->narr; k++) {
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

void cmx__gpu_args_layout(cmx__gpu_args* a, const cmx__gpu_layout* l) {
  /* cmx_layout_n<narr>: int ndim; long long shape[32];
   * long long strides[narr][32] (8-byte aligned). */
  size_t size = 8 + sizeof l->shape + (size_t)l->narr * sizeof l->strides[0];
  _Alignas(8) unsigned char buf[8 + sizeof l->shape + sizeof l->strides];
  memset(buf, 0, 8);
  memcpy(buf, &l->ndim, sizeof l->ndim);
  memcpy(buf + 8, l->shape, sizeof l->shape);
  memcpy(buf + 8 + sizeof l->shape, l->strides,
         (size_t)l->narr * sizeof l->strides[0]);
  cmx__gpu_args_add(a, buf, size, 8);
}

int cmx__gpu_strided_kernel(const cmx__gpu_layout* l, bool i32) {
  return (i32 ? 0 : 4) + (l->ndim >= 1 && l->ndim <= 3 ? l->ndim - 1 : 3);
}

void cmx__gpu_args_count(cmx__gpu_args* a, bool i32, int64_t n) {
  if (i32) {
    int n32 = (int)n;
    CMX__GPU_ARG(a, n32);
  } else {
    long long n64 = n;
    CMX__GPU_ARG(a, n64);
  }
}

int cmx__gpu_args_strided(cmx__gpu_args* a, const cmx__gpu_layout* l,
                          int64_t n) {
  bool i32 = cmx__gpu_layout_fits_i32(l, n);
  cmx__gpu_args_count(a, i32, n);
  cmx__gpu_args_layout(a, l);
  return cmx__gpu_strided_kernel(l, i32);
}
