/* Diagonals: diagonal (the Diagonal view primitive), diag (a vector
 * embedded with where() over an eye mask, or a matrix's diagonal). */
#include <string.h>

#include "ops/shape_internal.h"

/* ---------------- diagonal and diag ---------------- */
cmx_array cmx__diagonal(cmx_array a, int64_t offset, int axis1, int axis2,
                        cmx_stream s) {
  if (!CMX__ARGS("diagonal", a)) return NULL;
  if (a->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[diagonal] Array must have at least two dimensions, but "
                     "got %d dimensions.",
                     a->ndim);
  if (!cmx__norm_axis("diagonal", &axis1, a->ndim) ||
      !cmx__norm_axis("diagonal", &axis2, a->ndim))
    return NULL;
  if (axis1 == axis2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[diagonal] axis1 and axis2 cannot be the same axis");
  int64_t off1 = offset < 0 ? -offset : 0, off2 = offset > 0 ? offset : 0;
  int64_t n = a->dims[axis1] - off1, m = a->dims[axis2] - off2;
  int64_t k = n < m ? n : m;
  if (k < 0) k = 0;
  int64_t shape[CMX_MAX_NDIM];
  int nd = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != axis1 && d != axis2) shape[nd++] = a->dims[d];
  shape[nd++] = k;
  cmx__diagonal_params q;
  memset(&q, 0, sizeof q);
  q.offset = offset; /* an empty diagonal's view has offset 0 (kernel) */
  q.axis1 = axis1;
  q.axis2 = axis2;
  return cmx__apply(&cmx__vt_Diagonal, &q, sizeof q, s, &a, 1, shape, nd,
                    a->dtype);
}

cmx_array cmx__diag_embed(cmx_array c, int64_t n1, int64_t n2, int64_t offset,
                          cmx_stream s) {
  if (!CMX__ARGS("diag", c)) return NULL;
  int64_t shape[CMX_MAX_NDIM + 1];
  int nd = c->ndim - 1;
  if (nd < 0 || nd + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[diag] Invalid diagonal rank %d.",
                     c->ndim);
  memcpy(shape, c->dims, (size_t)nd * sizeof *shape);
  shape[nd] = n1, shape[nd + 1] = n2;
  int64_t k = c->dims[nd], off1 = offset < 0 ? -offset : 0;
  if (k == 0 || n1 == 0 || n2 == 0)
    return cmx__zeros(shape, nd + 2, c->dtype, s);
  /* c's entry t belongs at row off1 + t: pad to n1 rows, put each row's
   * value on every column, keep the offset diagonal. where() (not a
   * product) leaves the rest exactly zero even next to inf or NaN. */
  int last = nd;
  int64_t lo = off1, hi = n1 - off1 - k;
  cmx_array rows = cmx__pad(c, &last, &lo, &hi, 1, NULL, CMX_PAD_CONSTANT, s);
  int ax = nd + 1;
  cmx_array cols = cmx__expand_dims(rows, &ax, 1, s);
  cmx_array mask = cmx__eye(n1, n2, offset, CMX_BOOL, s);
  return cmx__where(mask, cols, cmx__scalar(0, c->dtype), s);
}

cmx_array cmx__diag(cmx_array a, int64_t k, cmx_stream s) {
  if (!CMX__ARGS("diag", a)) return NULL;
  if (a->ndim == 2) return cmx__diagonal(a, k, 0, 1, s);
  if (a->ndim != 1)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[diag] array must be 1-D or 2-D, got array with %d "
                     "dimensions.",
                     a->ndim);
  int64_t ak = k < 0 ? -k : k, n = a->dims[0] + ak;
  return cmx__diag_embed(a, n, n, k, s);
}

/* ---------------- public wrappers ---------------- */
cmx_status cmx_diagonal(cmx_array* out, cmx_array a, int offset, int axis1,
                        int axis2, cmx_stream s) {
  CMX__PUBLIC(out, "diagonal", cmx__diagonal(a, offset, axis1, axis2, s));
}
cmx_status cmx_diag(cmx_array* out, cmx_array a, int k, cmx_stream s) {
  CMX__PUBLIC(out, "diag", cmx__diag(a, k, s));
}
