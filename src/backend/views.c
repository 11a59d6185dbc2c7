/* Kernels that only make their outputs views of their inputs: they set
 * strides and an offset into an input's buffer and touch no data, so they
 * run on any device and every backend's kernel table names them. */
#include "backend/views.h"

#include "primitives/shape.h"

/* Broadcast: stride 0 on new and size-1 dims. */
CMX__VIEW_KERNEL(cmx__view_broadcast) {
  (void)p;
  (void)nin, (void)nout;
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  int lead = o->ndim - a->ndim;
  for (int d = 0; d < o->ndim; d++) {
    int ad = d - lead;
    st[d] = (ad < 0 || a->dims[ad] == 1) ? 0 : CMX__STRIDES(a)[ad];
  }
  return cmx_kernel_set_view(o, a, 0, st);
}

CMX__VIEW_KERNEL(cmx__view_transpose) {
  (void)nin, (void)nout;
  const cmx__transpose_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  for (int d = 0; d < o->ndim; d++) st[d] = CMX__STRIDES(a)[q->perm[d]];
  return cmx_kernel_set_view(o, a, 0, st);
}

CMX__VIEW_KERNEL(cmx__view_squeeze) {
  (void)nin, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  int k = 0, j = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (k < q->naxes && q->axes[k] == d) {
      k++;
      continue;
    }
    st[j++] = CMX__STRIDES(a)[d];
  }
  return cmx_kernel_set_view(o, a, 0, st);
}

CMX__VIEW_KERNEL(cmx__view_expand_dims) {
  (void)nin, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  int k = q->naxes - 1, j = a->ndim - 1;
  /* From the back so an inserted dim can take the stride that keeps
   * row-major data row-major. */
  for (int d = o->ndim - 1; d >= 0; d--) {
    if (k >= 0 && q->axes[k] == d) {
      st[d] = d + 1 < o->ndim ? st[d + 1] * o->dims[d + 1] : 1;
      k--;
    } else {
      st[d] = CMX__STRIDES(a)[j--];
    }
  }
  return cmx_kernel_set_view(o, a, 0, st);
}

/* Slice: offset to the first element, strides scaled by the steps
 * (negative steps walk backwards). */
CMX__VIEW_KERNEL(cmx__view_slice) {
  (void)nin, (void)nout;
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM], off = 0;
  for (int d = 0; d < a->ndim; d++) {
    st[d] = CMX__STRIDES(a)[d] * q->step[d];
    off += q->start[d] * CMX__STRIDES(a)[d];
  }
  return cmx_kernel_set_view(o, a, o->size ? off : 0, st);
}

/* AsStrided: the op made the input contiguous and checked the bounds. */
CMX__VIEW_KERNEL(cmx__view_as_strided) {
  (void)nin, (void)nout;
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  return cmx_kernel_set_view(out[0], in[0], out[0]->size ? q->offset : 0,
                             q->strides);
}

/* Diagonal: the diagonal as the last axis, with stride st1 + st2. */
CMX__VIEW_KERNEL(cmx__view_diagonal) {
  (void)nin, (void)nout;
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const int64_t* st = CMX__STRIDES(a);
  int64_t ost[CMX_MAX_NDIM];
  int j = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != q->axis1 && d != q->axis2) ost[j++] = st[d];
  ost[j] = st[q->axis1] + st[q->axis2];
  int64_t off1 = q->offset < 0 ? -q->offset : 0;
  int64_t off2 = q->offset > 0 ? q->offset : 0;
  int64_t off = o->size ? off1 * st[q->axis1] + off2 * st[q->axis2] : 0;
  return cmx_kernel_set_view(o, a, off, ost);
}

/* StopGradient, Identity: the output is a view of the input. */
CMX__VIEW_KERNEL(cmx__view_identity) {
  (void)p;
  (void)nin;
  (void)nout;
  return cmx_kernel_set_view(out[0], in[0], 0, CMX__STRIDES(in[0]));
}

/* Depends: in = {inputs..., dependencies...}; output i is a view of input
 * i. The dependencies are only there so that the scheduler evaluates them
 * first; their data is never read. */
CMX__VIEW_KERNEL(cmx__view_depends) {
  (void)p;
  (void)nin;
  for (int i = 0; i < nout; i++) {
    cmx_status st = cmx_kernel_set_view(out[i], in[i], 0, CMX__STRIDES(in[i]));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

/* CustomTransforms: outputs are views of the function's outputs (the
 * inputs after the primals). */
CMX__VIEW_KERNEL(cmx__view_custom) {
  int n = nin - nout;
  (void)p;
  for (int i = 0; i < nout; i++) {
    cmx_status st =
        cmx_kernel_set_view(out[i], in[n + i], 0, CMX__STRIDES(in[n + i]));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

cmx_status cmx__view_dtype_try(cmx_array o, cmx_array a, bool* shared) {
  int64_t ib = (int64_t)cmx_dtype_size(a->dtype);
  int64_t ob = (int64_t)cmx_dtype_size(o->dtype);
  const int64_t* ast = CMX__STRIDES(a);
  int nd = a->ndim;
  *shared = false;
  if (ib != ob && a->size > 0) {
    if (a->dims[nd - 1] != 1 && ast[nd - 1] != 1) return CMX_OK;
    for (int d = 0; d < nd - 1; d++)
      if (a->dims[d] != 1 && (ast[d] * ib) % ob != 0) return CMX_OK;
    if ((a->offset * ib) % ob != 0) return CMX_OK;
  }
  int64_t st[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) st[d] = ib == ob ? ast[d] : ast[d] * ib / ob;
  if (nd && ib != ob) st[nd - 1] = 1;
  *shared = true;
  cmx_status s = cmx_kernel_set_view(o, a, a->offset * ib / ob - a->offset, st);
  if (s == CMX_OK) o->data_size = a->data_size * ib / ob;
  return s;
}
