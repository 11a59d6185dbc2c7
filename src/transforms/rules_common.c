/* Helpers shared by the transform rules (see rules.h). */
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

cmx_array cmx__rule_keep(cmx_array a) {
  return cmx_array_retain(a);
}

cmx_stream cmx__rule_stream(const cmx_primitive* p) {
  return cmx_primitive_stream(p);
}

cmx_array cmx__sum_to_shape(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s) {
  if (!a) return NULL;
  if (a->ndim == ndim && !memcmp(a->dims, shape, (size_t)ndim * 8)) return a;
  /* Leading axes a has beyond shape, then axes where shape has 1. */
  int lead = a->ndim - ndim;
  if (lead < 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[vjp] cannot sum to a larger shape");
  int axes[CMX_MAX_NDIM], n = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d < lead || (shape[d - lead] == 1 && a->dims[d] != 1)) axes[n++] = d;
  cmx_array r = n ? cmx__sum(a, axes, n, true, s) : a;
  return cmx__reshape(r, shape, ndim, s);
}

cmx_array cmx__batch_front(cmx_array a, int axis, int64_t B, cmx_stream s) {
  if (!a) return NULL;
  if (axis >= 0) return axis == 0 ? a : cmx__moveaxis(a, axis, 0, s);
  if (a->ndim + 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[vmap] too many dimensions");
  int zero = 0;
  cmx_array e = cmx__expand_dims(a, &zero, 1, s);
  if (!e) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, e->dims, (size_t)e->ndim * sizeof *shape);
  shape[0] = B;
  return cmx__broadcast_to(e, shape, e->ndim, s);
}

int64_t cmx__batch_size(const cmx_array* in, const int* axes, int nin) {
  for (int i = 0; i < nin; i++)
    if (axes[i] >= 0) return in[i]->dims[axes[i]];
  return 1;
}

cmx_array cmx__rule_as_like(cmx_array x, cmx_array like, cmx_stream s) {
  if (!x || !like) return NULL;
  return x->dtype == like->dtype ? x : cmx__astype(x, like->dtype, s);
}
