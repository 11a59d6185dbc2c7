/* CPU kernels of shape primitives.
 *
 * The pure views (Broadcast, Transpose, Squeeze, ExpandDims, Slice,
 * AsStrided, Diagonal) run on any device: backend/views.c. Reshape,
 * Contiguous and View are views when the input's layout allows and copies
 * otherwise, decided here because strides are only known once the input
 * exists. SliceUpdate, Concatenate and Pad write fresh buffers. */
#include "primitives/shape.h"

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/shape_copy.h"
#include "backend/views.h"

#define UNUSED_ARGS \
  (void)nin;        \
  (void)nout

/* Reshape: a view when the input's strides can express the new shape,
 * else a row-major copy. */
CMX__KERNEL(cmx__cpu_reshape) {
  (void)p;
  UNUSED_ARGS;
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  if (cmx__reshape_strides(a->dims, CMX__STRIDES(a), a->ndim, o->dims, o->ndim,
                           st))
    return cmx_kernel_set_view(o, a, 0, st);
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  cmx__cpu_copy_rowmajor(cmx_kernel_data(o), a);
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_contiguous) {
  UNUSED_ARGS;
  const cmx__contiguous_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  if ((a->flags & CMX__FLAG_ROW_CONTIG) ||
      (q->allow_col_major && (a->flags & CMX__FLAG_COL_CONTIG)))
    return cmx_kernel_set_view(o, a, 0, CMX__STRIDES(a));
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  cmx__cpu_copy_rowmajor(cmx_kernel_data(o), a);
  return CMX_OK;
}

/* View: reinterprets bytes. Shares the buffer when every output element
 * lies whole at an element boundary of the output dtype; otherwise copies
 * the input row-major first. */
CMX__KERNEL(cmx__cpu_view) {
  (void)p;
  UNUSED_ARGS;
  bool shared;
  cmx_status s = cmx__view_dtype_try(out[0], in[0], &shared);
  if (s != CMX_OK || shared) return s;
  s = cmx_kernel_alloc(out[0]);
  if (s != CMX_OK) return s;
  cmx__cpu_copy_rowmajor(cmx_kernel_data(out[0]), in[0]);
  return CMX_OK;
}

/* SliceUpdate: out = src (donated when possible) with the region written
 * from the update, which the op broadcast to the region's shape. */
CMX__KERNEL(cmx__cpu_slice_update) {
  UNUSED_ARGS;
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array src = in[0], upd = in[1], o = out[0];
  bool donated;
  cmx_status s = cmx_kernel_alloc_donate(o, src, &donated);
  if (s != CMX_OK) return s;
  if (!donated) cmx__cpu_copy_rowmajor(cmx_kernel_data(o), src);
  if (upd->size == 0) return CMX_OK;
  const int64_t* ost = CMX__STRIDES(o);
  int64_t rst[CMX_MAX_NDIM], off = 0;
  for (int d = 0; d < o->ndim; d++) {
    rst[d] = ost[d] * q->step[d];
    off += q->start[d] * ost[d];
  }
  int64_t isz = (int64_t)cmx_dtype_size(o->dtype);
  cmx__cpu_strided_copy((char*)cmx_kernel_data(o) + off * isz, rst,
                        cmx_kernel_data(upd), CMX__STRIDES(upd), upd->dims,
                        upd->ndim, (size_t)isz);
  return CMX_OK;
}

/* Concatenate: each input is copied into its band of the output. */
CMX__KERNEL(cmx__cpu_concatenate) {
  (void)nout;
  const cmx__concat_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  if (o->size == 0) return CMX_OK;
  int64_t isz = (int64_t)cmx_dtype_size(o->dtype);
  const int64_t* ost = CMX__STRIDES(o);
  char* base = cmx_kernel_data(o);
  int64_t pos = 0;
  for (int i = 0; i < nin; i++) {
    cmx_array a = in[i];
    if (a->size)
      cmx__cpu_strided_copy(base + pos * ost[q->axis] * isz, ost,
                            cmx_kernel_data(a), CMX__STRIDES(a), a->dims,
                            a->ndim, (size_t)isz);
    pos += a->dims[q->axis];
  }
  return CMX_OK;
}

/* Pad (constant): fill with the value, then copy the input inside. */
CMX__KERNEL(cmx__cpu_pad) {
  UNUSED_ARGS;
  const cmx__pad_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], val = in[1], o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  if (o->size == 0) return CMX_OK;
  size_t isz = cmx_dtype_size(o->dtype);
  char* base = cmx_kernel_data(o);
  cmx__cpu_fill(base, o->size, cmx_kernel_data(val), isz);
  if (a->size == 0) return CMX_OK;
  const int64_t* ost = CMX__STRIDES(o);
  int64_t off = 0;
  for (int d = 0; d < o->ndim; d++) off += q->low[d] * ost[d];
  cmx__cpu_strided_copy(base + off * (int64_t)isz, ost, cmx_kernel_data(a),
                        CMX__STRIDES(a), a->dims, a->ndim, isz);
  return CMX_OK;
}
