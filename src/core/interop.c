/* Device memory shared with other libraries (cmx/interop.h). */
#include "cmx/interop.h"

#include <stdlib.h>

#include "core/internal.h"

/* Marks imported memory when the caller needs no callback. */
static void no_release(void* ctx) {
  (void)ctx;
}

static cmx_status check_gpu(cmx_device dev, const char* op) {
  if (dev.type != CMX_GPU || !cmx_is_available(dev))
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] device %s:%d is not an available "
                      "gpu",
                      op, dev.type == CMX_GPU ? "gpu" : "cpu", dev.index);
  if (!cmx__device_hooks)
    return cmx__error(CMX_ERR_RUNTIME, "[%s] no device backend is loaded", op);
  return CMX_OK;
}

cmx_status cmx_array_device_data(cmx_array a, cmx_device dev, void** out) {
  if (!a || !out)
    return cmx__error(CMX_ERR_VALUE, "[device_data] NULL argument");
  *out = NULL;
  cmx_status st = check_gpu(dev, "device_data");
  if (st == CMX_OK) st = cmx_array_eval(a);
  if (st != CMX_OK) return st;
  if (a->size == 0) return CMX_OK;
  if (!a->buf)
    return cmx__error(CMX_ERR_RUNTIME, "[device_data] array has no data");
  if (!cmx__buffer_dev_ready(a->buf, dev.index)) {
    st = cmx__device_hooks->to_device(a->buf, dev.index);
    if (st != CMX_OK) return st;
  }
  *out = (void*)(uintptr_t)(a->buf->dev +
                            (uint64_t)(a->offset *
                                       (int64_t)cmx_dtype_size(a->dtype)));
  return CMX_OK;
}

cmx_status cmx_array_data_device(cmx_array a, cmx_device* out) {
  if (!a || !out)
    return cmx__error(CMX_ERR_VALUE, "[data_device] NULL argument");
  *out = cmx_device_cpu();
  cmx_status st = cmx_array_eval(a);
  if (st != CMX_OK) return st;
  const cmx__buffer* b = a->buf;
  if (b && !b->host_valid && b->dev_valid)
    *out = (cmx_device){CMX_GPU, b->dev_index};
  return CMX_OK;
}

cmx_status cmx_array_from_device_memory(cmx_array* out, void* ptr,
                                        cmx_device dev, const int64_t* shape,
                                        int ndim, cmx_dtype dtype,
                                        void (*release)(void* ctx), void* ctx) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[from_device_memory] output is NULL");
  *out = NULL;
  cmx_status st = check_gpu(dev, "from_device_memory");
  if (st != CMX_OK) return st;
  cmx_array a = cmx__node_new("from_device_memory", shape, ndim, dtype);
  if (!a) return cmx_last_status();
  if (a->size > 0 && !ptr) {
    cmx_array_release(a);
    return cmx__error(CMX_ERR_VALUE,
                      "[from_device_memory] device pointer is NULL");
  }
  cmx__buffer* b = calloc(1, sizeof *b);
  if (!b) {
    cmx_array_release(a);
    return cmx__error(CMX_ERR_MEMORY, "[from_device_memory] out of memory");
  }
  atomic_init(&b->refcount, 1);
  b->size = (size_t)a->size * cmx_dtype_size(dtype);
  b->dev = (uint64_t)(uintptr_t)ptr;
  b->dev_index = dev.index;
  b->dev_valid = true;
  a->buf = b;
  /* Set last: a failure above must not call release. */
  b->ext_release = release ? release : no_release;
  b->ext_ctx = ctx;
  *out = a;
  return CMX_OK;
}

cmx_status cmx_stream_native_handle(cmx_stream s, void** out) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[stream_native_handle] out is NULL");
  *out = NULL;
  cmx__stream* st = cmx__stream_resolve(s, "stream_native_handle");
  if (!st) return cmx_last_status();
  if (st->ops->native) *out = st->ops->native(st);
  return CMX_OK;
}
