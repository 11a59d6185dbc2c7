/* mx.linalg functions composed from the factorizations and ordinary ops:
 * norm, cross, pinv, cholesky_inv, det, slogdet. Their gradients come from
 * the pieces' rules. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/linalg_internal.h"
#include "ops/shape_internal.h"

/* ---------------- cholesky_inv ---------------- */
/* (L L^T)^-1 = L^-T L^-1; (U^T U)^-1 = U^-1 U^-T. */
cmx_array cmx__linalg_cholesky_inv(cmx_array l, bool upper, cmx_stream s) {
  cmx_array li = cmx__linalg_tri_inv(l, upper, s);
  if (!li) return NULL;
  return upper ? cmx__matmul(li, cmx__mT(li, s), s)
               : cmx__matmul(cmx__mT(li, s), li, s);
}

/* ---------------- pinv ---------------- */
cmx_array cmx__linalg_pinv(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("linalg::pinv", a)) return NULL;
  if (a->ndim >= 2 && a->dtype != CMX_FLOAT32 && a->dtype != CMX_FLOAT64)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::pinv] Arrays must have type float32 or "
                     "float64. Received array with type %s.",
                     cmx_dtype_name(a->dtype));
  cmx_array usv[3];
  if (!cmx__linalg_svd(usv, a, true, s)) return NULL;
  int64_t m = a->dims[a->ndim - 2], n = a->dims[a->ndim - 1];
  int64_t k = m < n ? m : n;
  cmx_dtype dt = a->dtype;
  double eps = dt == CMX_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
  int last = -1;
  cmx_array sv = usv[1];
  cmx_array cutoff =
      cmx__multiply(cmx__max(sv, &last, 1, true, s),
                    cmx__scalar((double)(m > n ? m : n) * eps, dt), s);
  cmx_array keep = cmx__greater(sv, cutoff, s);
  /* 1/s where kept; the other branch divides by 1 so its gradient is 0. */
  cmx_array sinv = cmx__where(
      keep, cmx__reciprocal(cmx__where(keep, sv, cmx__scalar(1, dt), s), s),
      cmx__scalar(0, dt), s);
  int64_t st[CMX_MAX_NDIM], su[CMX_MAX_NDIM], sp[CMX_MAX_NDIM],
      one[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++)
    st[d] = 0, su[d] = a->dims[d], sp[d] = a->dims[d], one[d] = 1;
  su[a->ndim - 1] = k; /* U[..., :, :k] */
  cmx_array uk = cmx__slice(usv[0], st, su, one, s);
  sp[a->ndim - 2] = k; /* Vt[..., :k, :] */
  cmx_array vk = cmx__slice(usv[2], st, sp, one, s);
  return cmx__matmul(cmx__mT(vk, s),
                     cmx__multiply(cmx__expand_dims(sinv, (int[]){-1}, 1, s),
                                   cmx__mT(uk, s), s),
                     s);
}

/* ---------------- det, slogdet ---------------- */
/* The LU's diagonal and the permutation's sign (+-1), of a float copy. */
static bool lu_parts(const char* op, cmx_array a, cmx_array* diag,
                     cmx_array* sign, cmx_stream s) {
  if (!CMX__ARGS(op, a)) return false;
  if (a->ndim < 2 || a->dims[a->ndim - 1] != a->dims[a->ndim - 2]) {
    cmx__error(CMX_ERR_VALUE,
               "[linalg::%s] Expected a stack of square matrices.", op);
    return false;
  }
  cmx_dtype dt = a->dtype == CMX_FLOAT64 ? CMX_FLOAT64 : CMX_FLOAT32;
  if (cmx_dtype_is_complex(a->dtype)) {
    cmx__error(CMX_ERR_NOT_IMPLEMENTED,
               "[linalg::%s] complex64 input is not supported yet.", op);
    return false;
  }
  cmx_array f[3];
  if (!cmx__linalg_luf(f, cmx__as_dtype(a, dt, s), op, s)) return false;
  int64_t n = a->dims[a->ndim - 1];
  *diag = cmx__diagonal(f[0], 0, -2, -1, s);
  int last = -1;
  cmx_array swaps = cmx__sum(
      cmx__not_equal(f[1], cmx__arange(0, (double)n, 1, CMX_UINT32, s), s),
      &last, 1, false, s);
  cmx_array odd = cmx__remainder(cmx__astype(swaps, CMX_INT32, s),
                                 cmx__scalar(2, CMX_INT32), s);
  *sign = cmx__subtract(
      cmx__scalar(1, dt),
      cmx__multiply(cmx__astype(odd, dt, s), cmx__scalar(2, dt), s), s);
  return *diag && *sign;
}

cmx_array cmx__linalg_det(cmx_array a, cmx_stream s) {
  cmx_array d, sg;
  if (!lu_parts("det", a, &d, &sg, s)) return NULL;
  int last = -1;
  return cmx__multiply(sg, cmx__prod(d, &last, 1, false, s), s);
}

bool cmx__linalg_slogdet(cmx_array* outs, cmx_array a, cmx_stream s) {
  cmx_array d, sg;
  if (!lu_parts("slogdet", a, &d, &sg, s)) return false;
  int last = -1;
  outs[0] =
      cmx__multiply(sg, cmx__prod(cmx__sign(d, s), &last, 1, false, s), s);
  outs[1] = cmx__sum(cmx__log(cmx__abs(d, s), s), &last, 1, false, s);
  return outs[0] && outs[1];
}

/* ---------------- cross ---------------- */
static cmx_array component(cmx_array a, int axis, int64_t i, cmx_stream s) {
  int64_t st[CMX_MAX_NDIM], sp[CMX_MAX_NDIM], one[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) st[d] = 0, sp[d] = a->dims[d], one[d] = 1;
  st[axis] = i, sp[axis] = i + 1;
  return cmx__slice(a, st, sp, one, s);
}

cmx_array cmx__linalg_cross(cmx_array a, cmx_array b, int axis, cmx_stream s) {
  if (!CMX__ARGS("linalg::cross", a, b)) return NULL;
  cmx_array ab[2];
  if (a->ndim != b->ndim)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::cross] Inputs must have the same number of "
                     "dimensions.");
  int ax = axis;
  if (!cmx__norm_axis("linalg::cross", &ax, a->ndim)) return NULL;
  int64_t da = a->dims[ax], db = b->dims[ax];
  if ((da != 2 && da != 3) || (db != 2 && db != 3))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::cross] The specified axis must have size 2 "
                     "or 3.");
  cmx_array ins[2] = {a, b};
  cmx_array x[2][3];
  for (int t = 0; t < 2; t++) {
    cmx_array v = ins[t];
    for (int i = 0; i < 3; i++)
      x[t][i] = i < v->dims[ax] ? component(v, ax, i, s)
                                : cmx__zeros_like(component(v, ax, 0, s), s);
  }
  cmx_array c[3];
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    ab[0] = cmx__multiply(x[0][j], x[1][k], s);
    ab[1] = cmx__multiply(x[0][k], x[1][j], s);
    c[i] = cmx__subtract(ab[0], ab[1], s);
  }
  return cmx__concatenate(c, 3, ax, s);
}

/* ---------------- norm ---------------- */
static cmx_array vector_norm(cmx_array x, double ord, int ax, bool keep,
                             cmx_stream s) {
  cmx_array ab = cmx__abs(x, s);
  if (!ab) return NULL; /* its dtype is read below (a GPU stream and no GPU) */
  if (isinf(ord))
    return ord > 0 ? cmx__max(ab, &ax, 1, keep, s)
                   : cmx__min(ab, &ax, 1, keep, s);
  if (ord == 0)
    return cmx__astype(cmx__sum(cmx__not_equal(x, cmx__scalar(0, x->dtype), s),
                                &ax, 1, keep, s),
                       ab->dtype, s);
  if (ord == 1) return cmx__sum(ab, &ax, 1, keep, s);
  if (ord == 2)
    return cmx__sqrt(cmx__sum(cmx__square(ab, s), &ax, 1, keep, s), s);
  cmx_dtype dt = ab->dtype;
  return cmx__power(
      cmx__sum(cmx__power(ab, cmx__scalar(ord, dt), s), &ax, 1, keep, s),
      cmx__scalar(1.0 / ord, dt), s);
}

/* Singular values of the (r, c) planes, reduced by max/min/sum. */
static cmx_array sv_norm(cmx_array x, int r, int c, int which, bool keep,
                         cmx_stream s) {
  int perm[CMX_MAX_NDIM], np = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != r && d != c) perm[np++] = d;
  perm[np++] = r;
  perm[np++] = c;
  cmx_array sv;
  if (!cmx__linalg_svd(&sv, cmx__transpose(x, perm, np, s), false, s))
    return NULL;
  int last = -1;
  cmx_array v = which > 0   ? cmx__max(sv, &last, 1, false, s)
                : which < 0 ? cmx__min(sv, &last, 1, false, s)
                            : cmx__sum(sv, &last, 1, false, s);
  if (!keep) return v;
  int ex[2] = {r < c ? r : c, r < c ? c : r};
  return cmx__expand_dims(v, ex, 2, s);
}

static cmx_array matrix_norm(cmx_array x, double ord, const char* str, int r,
                             int c, bool keep, cmx_stream s) {
  int rc[2] = {r, c};
  if (str && strcmp(str, "fro") == 0)
    return cmx__sqrt(cmx__sum(cmx__square(cmx__abs(x, s), s), rc, 2, keep, s),
                     s);
  if (str && strcmp(str, "nuc") == 0) return sv_norm(x, r, c, 0, keep, s);
  if (str)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::norm] Invalid ord value '%s' for matrix norm.",
                     str);
  if (ord == 2 || ord == -2) return sv_norm(x, r, c, ord > 0 ? 1 : -1, keep, s);
  int sum_ax, red_ax;
  if (ord == 1 || ord == -1)
    sum_ax = r, red_ax = c;
  else if (isinf(ord))
    sum_ax = c, red_ax = r;
  else
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::norm] Invalid ord %g for matrix norm.", ord);
  cmx_array t = cmx__sum(cmx__abs(x, s), &sum_ax, 1, true, s);
  t = ord > 0 ? cmx__max(t, &red_ax, 1, true, s)
              : cmx__min(t, &red_ax, 1, true, s);
  return keep ? t : cmx__squeeze(t, rc, 2, s);
}

cmx_array cmx__linalg_norm(cmx_array a, const double* ord, const char* ord_str,
                           const int* axes, int naxes, bool keepdims,
                           cmx_stream s) {
  if (!CMX__ARGS("linalg::norm", a)) return NULL;
  cmx_array x = a;
  if (!cmx_dtype_is_inexact(x->dtype)) x = cmx__astype(x, CMX_FLOAT32, s);
  if (!x) return NULL;
  bool given = ord || ord_str;
  int ax[2], nax = naxes;
  if (!axes) {
    if (!given) { /* 2-norm of everything */
      cmx_array sq = cmx__square(cmx__abs(x, s), s);
      return cmx__sqrt(cmx__sum(sq, NULL, x->ndim, keepdims, s), s);
    }
    if (x->ndim > 2)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[linalg::norm] Received too many axes for norm.");
    nax = x->ndim;
    ax[0] = 0, ax[1] = 1;
  } else {
    if (naxes < 1 || naxes > 2)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[linalg::norm] Received too many axes for norm.");
    for (int i = 0; i < naxes; i++) {
      ax[i] = axes[i];
      if (!cmx__norm_axis("linalg::norm", &ax[i], x->ndim)) return NULL;
    }
    if (naxes == 2 && ax[0] == ax[1])
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[linalg::norm] Duplicate axes detected in reduction.");
  }
  if (nax == 1) {
    if (ord_str)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[linalg::norm] Norm '%s' only supported for matrices,"
                       " but received 1 axis/axes.",
                       ord_str);
    return vector_norm(x, ord ? *ord : 2.0, ax[0], keepdims, s);
  }
  if (nax != 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::norm] Received too many axes for norm.");
  return matrix_norm(x, ord ? *ord : 0,
                     ord_str ? ord_str : (ord ? NULL : "fro"), ax[0], ax[1],
                     keepdims, s);
}

/* ---------------- public wrappers ---------------- */
cmx_status cmx_linalg_norm(cmx_array* out, cmx_array a, const double* ord,
                           const int* axes, int naxes, bool keepdims,
                           cmx_stream s) {
  CMX__PUBLIC(out, "linalg::norm",
              cmx__linalg_norm(a, ord, NULL, axes, naxes, keepdims, s));
}
cmx_status cmx_linalg_norm_str(cmx_array* out, cmx_array a, const char* ord,
                               const int* axes, int naxes, bool keepdims,
                               cmx_stream s) {
  if (!ord)
    return cmx__error(CMX_ERR_VALUE, "[linalg::norm] ord string is NULL");
  CMX__PUBLIC(out, "linalg::norm",
              cmx__linalg_norm(a, NULL, ord, axes, naxes, keepdims, s));
}
cmx_status cmx_linalg_cholesky_inv(cmx_array* out, cmx_array l, bool upper,
                                   cmx_stream s) {
  CMX__PUBLIC(out, "linalg::cholesky_inv",
              cmx__linalg_cholesky_inv(l, upper, s));
}
cmx_status cmx_linalg_pinv(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "linalg::pinv", cmx__linalg_pinv(a, s));
}
cmx_status cmx_linalg_cross(cmx_array* out, cmx_array a, cmx_array b, int axis,
                            cmx_stream s) {
  CMX__PUBLIC(out, "linalg::cross", cmx__linalg_cross(a, b, axis, s));
}
cmx_status cmx_linalg_det(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "linalg::det", cmx__linalg_det(a, s));
}
cmx_status cmx_linalg_slogdet(cmx_array* sign, cmx_array* logabsdet,
                              cmx_array a, cmx_stream s) {
  if (!sign || !logabsdet)
    return cmx__error(CMX_ERR_VALUE,
                      "[linalg::slogdet] output pointer is NULL");
  *sign = *logabsdet = NULL;
  cmx_array o[2] = {NULL, NULL};
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx_status st =
      cmx__scope_exit_multi(mark, cmx__linalg_slogdet(o, a, s), o, 2);
  *sign = o[0];
  *logabsdet = o[1];
  return st;
}
