/* Helpers kernels use to allocate, donate and view output buffers. */
#include <string.h>

#include "core/internal.h"

bool cmx__can_donate(cmx_array out, cmx_array in) {
  size_t obytes = (size_t)out->size * cmx_dtype_size(out->dtype);
  size_t ibytes = (size_t)in->size * cmx_dtype_size(in->dtype);
  /* Memory owned elsewhere (imported) is shared: never written. */
  return in->buf && in != out && !in->buf->ext_release &&
         atomic_load_explicit(&in->refcount, memory_order_acquire) == 1 &&
         atomic_load_explicit(&in->buf->refcount, memory_order_acquire) == 1 &&
         (in->flags & CMX__FLAG_ROW_CONTIG) && in->offset == 0 &&
         ibytes == obytes && in->buf->size >= obytes;
}

static bool on_gpu(cmx_array out) {
  cmx__stream* s = cmx__stream_get(out->stream);
  return s && s->device.type == CMX_GPU;
}

cmx_status cmx_kernel_alloc(cmx_array out) {
  size_t bytes = (size_t)out->size * cmx_dtype_size(out->dtype);
  if (on_gpu(out)) {
    if (!cmx__device_hooks || !cmx__device_hooks->alloc_device)
      return cmx__error(CMX_ERR_RUNTIME, "[malloc] no device backend");
    out->buf = cmx__device_hooks->alloc_device(bytes, 0);
  } else {
    out->buf = cmx__buffer_alloc(bytes);
  }
  if (!out->buf) return cmx_last_status();
  out->offset = 0;
  out->data_size = out->size;
  cmx__node_set_row_major(out);
  return CMX_OK;
}

cmx_status cmx_kernel_alloc_donate(cmx_array out, cmx_array in, bool* donated) {
  if (donated) *donated = false;
  if (!cmx__can_donate(out, in)) return cmx_kernel_alloc(out);
  out->buf = cmx__buffer_retain(in->buf);
  out->offset = 0;
  out->data_size = out->size;
  cmx__node_set_row_major(out);
  /* A CPU kernel writes the host copy: a device copy goes stale. */
  if (!on_gpu(out)) out->buf->dev_valid = false;
  if (donated) *donated = true;
  return CMX_OK;
}

cmx_status cmx_kernel_set_view(cmx_array out, cmx_array src, int64_t offset,
                               const int64_t* strides) {
  if (!src->buf && src->size > 0)
    return cmx__error(CMX_ERR_RUNTIME, "[view] source has no data");
  out->buf = cmx__buffer_retain(src->buf);
  out->offset = src->offset + offset;
  out->data_size = src->data_size - offset;
  if (out->ndim)
    memcpy(CMX__STRIDES(out), strides, (size_t)out->ndim * sizeof(int64_t));
  cmx__node_update_flags(out);
  return CMX_OK;
}

void* cmx_kernel_data(cmx_array a) {
  return a->buf ? cmx__node_ptr(a) : NULL;
}

uint64_t cmx_kernel_device_ptr(cmx_array a) {
  if (!a->buf || !cmx__device_hooks) return 0;
  cmx__stream* s = cmx__stream_get(a->stream);
  int dev = s && s->device.type == CMX_GPU ? s->device.index : 0;
  if (!cmx__buffer_dev_ready(a->buf, dev) &&
      cmx__device_hooks->to_device(a->buf, dev) != CMX_OK)
    return 0;
  return a->buf->dev +
         (uint64_t)(a->offset * (int64_t)cmx_dtype_size(a->dtype));
}

void cmx_kernel_mark_device_written(cmx_array a) {
  if (!a->buf) return;
  a->buf->dev_valid = true;
  a->buf->host_valid = false;
}

void cmx_parallel_for(int64_t n, int64_t grain,
                      void (*fn)(void* ctx, int64_t begin, int64_t end),
                      void* ctx) {
  cmx__parallel_for(n, grain, fn, ctx);
}

int cmx_parallel_threads(void) {
  return cmx__pool_threads();
}
