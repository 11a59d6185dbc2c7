/* Products and contractions: tensordot, inner, outer, vecdot, kron, and
 * trace (the contraction of a plane).
 * Contractions are reduced to one 2-d product: a transposed to (free,
 * contracted) and b to (contracted, free), both flattened to matrices.
 * Inexact dtypes use matmul (BLAS); integers and bool, which matmul does
 * not take, use a broadcast multiply and sum of the same matrices. */
#include <string.h>

#include "ops/ops_internal.h"

/* a (M, K) @ b (K, N) for any dtype after promotion. */
static cmx_array mat_product(cmx_array a, cmx_array b, cmx_stream s) {
  if (!a || !b) return NULL; /* an operand's reshape failed */
  cmx_array ab[2] = {a, b};
  cmx_dtype dt = cmx__result_type(ab, 2);
  if (cmx_dtype_is_inexact(dt)) return cmx__matmul(a, b, s);
  int64_t sa[3] = {a->dims[0], a->dims[1], 1};
  int64_t sb[3] = {1, b->dims[0], b->dims[1]};
  int ax = 1;
  /* sum widens integers; a product keeps the operands' dtype (wrapping). */
  return cmx__astype(cmx__sum(cmx__multiply(cmx__reshape(a, sa, 3, s),
                                            cmx__reshape(b, sb, 3, s), s),
                              &ax, 1, false, s),
                     dt, s);
}

cmx_array cmx__tensordot_axes(cmx_array a, cmx_array b, const int* axes_a,
                              const int* axes_b, int n, cmx_stream s) {
  if (!CMX__ARGS("tensordot", a, b)) return NULL;
  if (n < 0 || n > a->ndim || n > b->ndim || (n > 0 && (!axes_a || !axes_b)))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[tensordot] Invalid number of contracted axes %d for "
                     "arrays of dimension %d and %d.",
                     n, a->ndim, b->ndim);
  bool used_a[CMX_MAX_NDIM] = {0}, used_b[CMX_MAX_NDIM] = {0};
  int ca[CMX_MAX_NDIM], cb[CMX_MAX_NDIM];
  int64_t k = 1;
  for (int i = 0; i < n; i++) {
    ca[i] = axes_a[i], cb[i] = axes_b[i];
    if (!cmx__norm_axis("tensordot", &ca[i], a->ndim) ||
        !cmx__norm_axis("tensordot", &cb[i], b->ndim))
      return NULL;
    if (used_a[ca[i]] || used_b[cb[i]])
      return CMX__FAIL(CMX_ERR_VALUE, "[tensordot] Repeated contraction axis.");
    used_a[ca[i]] = used_b[cb[i]] = true;
    if (a->dims[ca[i]] != b->dims[cb[i]])
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[tensordot] Contracted axis %d of a (size %lld) does "
                       "not match axis %d of b (size %lld).",
                       ca[i], (long long)a->dims[ca[i]], cb[i],
                       (long long)b->dims[cb[i]]);
    k *= a->dims[ca[i]];
  }
  int perm_a[CMX_MAX_NDIM], perm_b[CMX_MAX_NDIM], np = 0, nf = 0;
  int64_t out_shape[2 * CMX_MAX_NDIM], m = 1, nn = 1;
  for (int d = 0; d < a->ndim; d++)
    if (!used_a[d])
      perm_a[np++] = d, out_shape[nf++] = a->dims[d], m *= a->dims[d];
  for (int i = 0; i < n; i++) perm_a[np++] = ca[i];
  np = 0;
  for (int i = 0; i < n; i++) perm_b[np++] = cb[i];
  for (int d = 0; d < b->ndim; d++)
    if (!used_b[d])
      perm_b[np++] = d, out_shape[nf++] = b->dims[d], nn *= b->dims[d];
  if (nf > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[tensordot] Result would have %d dimensions (max %d).",
                     nf, CMX_MAX_NDIM);
  int64_t sa[2] = {m, k}, sb[2] = {k, nn};
  cmx_array a2 = cmx__reshape(cmx__transpose(a, perm_a, a->ndim, s), sa, 2, s);
  cmx_array b2 = cmx__reshape(cmx__transpose(b, perm_b, b->ndim, s), sb, 2, s);
  return cmx__reshape(mat_product(a2, b2, s), out_shape, nf, s);
}

cmx_array cmx__tensordot(cmx_array a, cmx_array b, int axes, cmx_stream s) {
  if (!CMX__ARGS("tensordot", a, b)) return NULL;
  if (axes < 0 || axes > a->ndim || axes > b->ndim)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[tensordot] Invalid number of contracted axes %d for "
                     "arrays of dimension %d and %d.",
                     axes, a->ndim, b->ndim);
  int ca[CMX_MAX_NDIM], cb[CMX_MAX_NDIM];
  for (int i = 0; i < axes; i++) ca[i] = a->ndim - axes + i, cb[i] = i;
  return cmx__tensordot_axes(a, b, ca, cb, axes, s);
}

cmx_array cmx__inner(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("inner", a, b)) return NULL;
  if (a->ndim == 0 || b->ndim == 0) return cmx__multiply(a, b, s);
  if (a->dims[a->ndim - 1] != b->dims[b->ndim - 1])
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[inner] Last dimension of a (%lld) and b (%lld) must "
                     "match.",
                     (long long)a->dims[a->ndim - 1],
                     (long long)b->dims[b->ndim - 1]);
  int la = -1, lb = -1;
  return cmx__tensordot_axes(a, b, &la, &lb, 1, s);
}

cmx_array cmx__outer(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("outer", a, b)) return NULL;
  int64_t sa[2] = {a->size, 1}, sb[1] = {b->size};
  return cmx__multiply(cmx__reshape(a, sa, 2, s), cmx__reshape(b, sb, 1, s), s);
}

cmx_array cmx__vecdot(cmx_array a, cmx_array b, int axis, cmx_stream s) {
  if (!CMX__ARGS("vecdot", a, b)) return NULL;
  int64_t shp[CMX_MAX_NDIM];
  int nd;
  if (!cmx__broadcast_shape("vecdot", a->dims, a->ndim, b->dims, b->ndim, shp,
                            &nd))
    return NULL;
  int ax = axis;
  if (!cmx__norm_axis("vecdot", &ax, nd)) return NULL;
  /* MLX: the axis (counted in the broadcast shape) must index both
   * inputs' own shapes, with the same size there */
  if (ax >= a->ndim || ax >= b->ndim)
    return CMX__FAIL(CMX_ERR_VALUE, "[vecdot] axis is out of bounds.");
  if (a->dims[ax] != b->dims[ax])
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[vecdot] a and b must have the same size along axis.");
  axis = ax;
  cmx_array ca = cmx_dtype_is_complex(a->dtype) ? cmx__conjugate(a, s) : a;
  return cmx__sum(cmx__multiply(ca, b, s), &axis, 1, false, s);
}

cmx_array cmx__kron(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("kron", a, b)) return NULL;
  if (a->ndim == 0 || b->ndim == 0) return cmx__multiply(a, b, s);
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  if (2 * nd > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[kron] Inputs of dimension %d are not supported (max "
                     "%d).",
                     nd, CMX_MAX_NDIM / 2);
  /* a as (a0, 1, a1, 1, ..), b as (1, b0, 1, b1, ..): the product's
   * element (i0, j0, i1, j1, ..) is a[i] * b[j], and merging each pair
   * gives the Kronecker layout. */
  int64_t sa[CMX_MAX_NDIM], sb[CMX_MAX_NDIM], so[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) {
    int da = d - (nd - a->ndim), db = d - (nd - b->ndim);
    int64_t ea = da < 0 ? 1 : a->dims[da], eb = db < 0 ? 1 : b->dims[db];
    sa[2 * d] = ea, sa[2 * d + 1] = 1;
    sb[2 * d] = 1, sb[2 * d + 1] = eb;
    so[d] = ea * eb;
  }
  return cmx__reshape(cmx__multiply(cmx__reshape(a, sa, 2 * nd, s),
                                    cmx__reshape(b, sb, 2 * nd, s), s),
                      so, nd, s);
}

cmx_array cmx__trace(cmx_array a, int offset, int axis1, int axis2,
                     const cmx_dtype* dtype, cmx_stream s) {
  if (!CMX__ARGS("trace", a)) return NULL;
  if (a->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[trace] Array must have at least two dimensions but "
                     "has %d.",
                     a->ndim);
  if (!cmx__norm_axis("trace", &axis1, a->ndim) ||
      !cmx__norm_axis("trace", &axis2, a->ndim))
    return NULL;
  if (axis1 == axis2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[trace] axis1 and axis2 cannot be the same axis.");
  cmx_array src = dtype ? cmx__astype(a, *dtype, s) : a;
  if (!src) return NULL;
  cmx_dtype dt = src->dtype;
  /* The (axis1, axis2) plane last, masked to its offset diagonal, summed. */
  int perm[CMX_MAX_NDIM], np = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != axis1 && d != axis2) perm[np++] = d;
  perm[np++] = axis1, perm[np++] = axis2;
  cmx_array t = cmx__transpose(src, perm, a->ndim, s);
  cmx_array mask =
      cmx__eye(a->dims[axis1], a->dims[axis2], offset, CMX_BOOL, s);
  int axes[2] = {a->ndim - 2, a->ndim - 1};
  cmx_array r =
      cmx__sum(cmx__where(mask, t, cmx__scalar(0, dt), s), axes, 2, false, s);
  /* An explicit dtype is the result's too (sum would widen integers). */
  return dtype && r && r->dtype != dt ? cmx__astype(r, dt, s) : r;
}

cmx_status cmx_tensordot(cmx_array* out, cmx_array a, cmx_array b, int axes,
                         cmx_stream s) {
  CMX__PUBLIC(out, "tensordot", cmx__tensordot(a, b, axes, s));
}
cmx_status cmx_tensordot_axes(cmx_array* out, cmx_array a, cmx_array b,
                              const int* axes_a, const int* axes_b, int n,
                              cmx_stream s) {
  CMX__PUBLIC(out, "tensordot",
              cmx__tensordot_axes(a, b, axes_a, axes_b, n, s));
}
cmx_status cmx_inner(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s) {
  CMX__PUBLIC(out, "inner", cmx__inner(a, b, s));
}
cmx_status cmx_outer(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s) {
  CMX__PUBLIC(out, "outer", cmx__outer(a, b, s));
}
cmx_status cmx_vecdot(cmx_array* out, cmx_array a, cmx_array b, int axis,
                      cmx_stream s) {
  CMX__PUBLIC(out, "vecdot", cmx__vecdot(a, b, axis, s));
}
cmx_status cmx_kron(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s) {
  CMX__PUBLIC(out, "kron", cmx__kron(a, b, s));
}
cmx_status cmx_trace(cmx_array* out, cmx_array a, int offset, int axis1,
                     int axis2, const cmx_dtype* dtype, cmx_stream s) {
  CMX__PUBLIC(out, "trace", cmx__trace(a, offset, axis1, axis2, dtype, s));
}
