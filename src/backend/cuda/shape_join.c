/* GPU kernels of the shape primitives that write fresh buffers from
 * others: View (a view when the layout allows, as on the CPU), SliceUpdate,
 * Concatenate and Pad. All of them move bytes through the copy family
 * (cmx__gpu_copy_strided): row-major copies, bands and strided regions of
 * the output, fills. */
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "backend/views.h"
#include "primitives/shape.h"

#define NAME(p) cmx_primitive_name(p)
#define DEV(p) cmx_primitive_stream(p).device.index

cmx_status cmx__gpu_view(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  bool shared;
  cmx_status s = cmx__view_dtype_try(out[0], in[0], &shared);
  if (s != CMX_OK || shared) return s;
  /* in's bytes row-major, read as out's elements */
  s = cmx_kernel_alloc(out[0]);
  if (s != CMX_OK) return s;
  return cmx__gpu_copy_rowmajor(out[0], in[0], DEV(p), NAME(p));
}

/* Copies a (any layout) into the region of o (row-major, on the device)
 * starting at element `at` with element strides dst_st. */
static cmx_status copy_into(const cmx_primitive* p, cmx_array o, int64_t at,
                            const int64_t* dst_st, cmx_array a) {
  if (a->size == 0) return CMX_OK;
  CUdeviceptr po, pa;
  cmx_status st = cmx__gpu_ptr(o, DEV(p), &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(a, DEV(p), &pa);
  if (st != CMX_OK) return st;
  size_t isz = cmx_dtype_size(o->dtype);
  return cmx__gpu_copy_strided(NAME(p), DEV(p),
                               po + (CUdeviceptr)(at * (int64_t)isz), dst_st,
                               pa, CMX__STRIDES(a), a->dims, a->ndim, isz);
}

cmx_status cmx__gpu_slice_update(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array src = in[0], upd = in[1], o = out[0];
  if (o->size == 0) return cmx_kernel_alloc(o);
  int donated;
  CUdeviceptr ps;
  cmx_status st = cmx__gpu_ptr(src, DEV(p), &ps);
  if (st == CMX_OK) st = cmx__gpu_alloc_out(o, in, 1, DEV(p), &donated);
  if (st == CMX_OK && donated != 0)
    st = cmx__gpu_copy_rowmajor(o, src, DEV(p), NAME(p));
  if (st != CMX_OK) return st;
  /* the region: start[d] on each axis, every step[d]-th element */
  const int64_t* ost = CMX__STRIDES(o);
  int64_t rst[CMX_MAX_NDIM], at = 0;
  for (int d = 0; d < o->ndim; d++) {
    rst[d] = ost[d] * q->step[d];
    at += q->start[d] * ost[d];
  }
  st = copy_into(p, o, at, rst, upd);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

cmx_status cmx__gpu_concatenate(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout) {
  (void)nout;
  const cmx__concat_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  const int64_t* ost = CMX__STRIDES(o);
  int64_t pos = 0;
  for (int i = 0; i < nin && st == CMX_OK; i++) {
    st = copy_into(p, o, pos * ost[q->axis], ost, in[i]);
    pos += in[i]->dims[q->axis];
  }
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

cmx_status cmx__gpu_pad(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__pad_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], val = in[1], o = out[0];
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr po, pv;
  st = cmx__gpu_ptr(o, DEV(p), &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(val, DEV(p), &pv);
  if (st != CMX_OK) return st;
  const int64_t* ost = CMX__STRIDES(o);
  size_t isz = cmx_dtype_size(o->dtype);
  /* The value on the border, each element written once: on each axis d,
   * the slabs before and after a's extent, within a's extent on the axes
   * before d. Then a inside. */
  int64_t zero[CMX_MAX_NDIM] = {0}, shape[CMX_MAX_NDIM], at = 0;
  memcpy(shape, o->dims, (size_t)o->ndim * sizeof(int64_t));
  for (int d = 0; d < o->ndim && st == CMX_OK; d++) {
    for (int side = 0; side < 2 && st == CMX_OK; side++) {
      int64_t ext = side ? q->high[d] : q->low[d], keep = shape[d];
      int64_t from = side ? at + (q->low[d] + a->dims[d]) * ost[d] : at;
      shape[d] = ext;
      st = cmx__gpu_copy_strided(NAME(p), DEV(p),
                                 po + (CUdeviceptr)(from * (int64_t)isz), ost,
                                 pv, zero, shape, o->ndim, isz);
      shape[d] = keep;
    }
    shape[d] = a->dims[d];
    at += q->low[d] * ost[d];
  }
  if (st == CMX_OK) st = copy_into(p, o, at, ost, a);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
