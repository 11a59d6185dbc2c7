/* GPU kernels of the shape primitives that may have to move data: Reshape
 * and Contiguous are views when the input's layout allows (decided as on
 * the CPU, once the input exists) and row-major copies on the device
 * otherwise. The pure views (Broadcast, Transpose, ...) share the CPU's
 * kernels, which only set strides. */
#include "primitives/shape.h"

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

static cmx_status copy_out(const cmx_primitive* p, cmx_array o, cmx_array a) {
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK) return st;
  return cmx__gpu_copy_rowmajor(o, a, cmx_primitive_stream(p).device.index,
                                cmx_primitive_name(p));
}

cmx_status cmx__gpu_reshape(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  if (cmx__reshape_strides(a->dims, CMX__STRIDES(a), a->ndim, o->dims, o->ndim,
                           st))
    return cmx_kernel_set_view(o, a, 0, st);
  return copy_out(p, o, a);
}

cmx_status cmx__gpu_contiguous(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__contiguous_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  if ((a->flags & CMX__FLAG_ROW_CONTIG) ||
      (q->allow_col_major && (a->flags & CMX__FLAG_COL_CONTIG)))
    return cmx_kernel_set_view(o, a, 0, CMX__STRIDES(a));
  return copy_out(p, o, a);
}
