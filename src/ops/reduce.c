/* Reductions: sum, prod, min, max, mean, all, any, logsumexp, var, std,
 * argmin, argmax, softmax.
 *
 * Dtypes follow MLX: sum and prod give int32/uint32 for integers up to 32
 * bits (int64/uint64 stay) and int32 for bool; min and max keep the dtype;
 * all and any give bool; mean, var, std, logsumexp and softmax give float32
 * for integer and bool inputs (floating inputs keep theirs); argmin and
 * argmax give uint32.
 *
 * Empty reductions: sum gives 0, prod 1, all true, any false, mean / var /
 * std NaN; min, max, argmin and argmax over an empty axis are errors, as
 * logsumexp of an empty array (MLX). An empty but non-NULL axes list
 * reduces nothing (the result is the input converted to the result dtype).
 */
#include "primitives/reduce.h"

#include <string.h>

#include "ops/ops_internal.h"

/* MLX's accumulation dtype of sum and prod. */
static cmx_dtype sum_dtype(cmx_dtype t) {
  if (t == CMX_BOOL) return CMX_INT32;
  if (cmx_dtype_is_integer(t)) {
    bool small = cmx_dtype_size(t) <= 4;
    if (cmx_dtype_is_signed(t)) return small ? CMX_INT32 : CMX_INT64;
    return small ? CMX_UINT32 : CMX_UINT64;
  }
  return t;
}

/* Floating dtypes stay, integers and bool become float32. */
static cmx_dtype at_least_float(cmx_dtype t) {
  return cmx_dtype_is_inexact(t) ? t : cmx_dtype_promote(t, CMX_FLOAT32);
}

/* Validated reduction axes and the result shape. */
typedef struct {
  int naxes;
  int axes[CMX_MAX_NDIM];
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
  int64_t count; /* elements reduced into each output */
} red_shape;

static bool reduce_shape(const char* op, cmx_array a, const int* axes,
                         int naxes, bool keepdims, red_shape* r) {
  r->naxes = cmx__norm_axes(op, axes, naxes, a->ndim, r->axes);
  if (r->naxes < 0) return false;
  bool isred[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < r->naxes; i++) isred[r->axes[i]] = true;
  r->ndim = 0;
  r->count = 1;
  for (int d = 0; d < a->ndim; d++) {
    if (isred[d]) r->count *= a->dims[d];
    if (!isred[d])
      r->shape[r->ndim++] = a->dims[d];
    else if (keepdims)
      r->shape[r->ndim++] = 1;
  }
  return true;
}

/* A weak scalar as a strongly typed array of its dtype: a reduction's
 * result is an array, not a Python-scalar-like value (a itself
 * otherwise). */
static cmx_array strong(cmx_array a) {
  return a && a->weak ? cmx__own(cmx__weak_cast(a, a->dtype)) : a;
}

static void fill_axes(int32_t* dst, int32_t* n, const red_shape* r) {
  *n = r->naxes;
  for (int i = 0; i < r->naxes; i++) dst[i] = r->axes[i];
}

static cmx_array reduce(const char* op, int kind, cmx_array a, const int* axes,
                        int naxes, bool keepdims, cmx_stream s) {
  if (!CMX__ARGS(op, a) || !(a = strong(a))) return NULL;
  red_shape r;
  if (!reduce_shape(op, a, axes, naxes, keepdims, &r)) return NULL;
  cmx_dtype dt;
  switch (kind) {
    case CMX__RED_SUM:
    case CMX__RED_PROD:
      dt = sum_dtype(a->dtype);
      break;
    case CMX__RED_MEAN:
      dt = at_least_float(a->dtype);
      break;
    case CMX__RED_AND:
    case CMX__RED_OR:
      dt = CMX_BOOL;
      break;
    default:
      dt = a->dtype;
  }
  if (r.count == 0 && (kind == CMX__RED_MIN || kind == CMX__RED_MAX))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Cannot %s reduce zero size array.",
                     op, op);
  if (r.naxes == 0) return cmx__as_dtype(a, dt, s);
  cmx__reduce_params q;
  memset(&q, 0, sizeof q);
  q.kind = kind;
  fill_axes(q.axes, &q.naxes, &r);
  q.keepdims = keepdims;
  return cmx__apply(&cmx__vt_Reduce, &q, sizeof q, s, &a, 1, r.shape, r.ndim,
                    dt);
}

#define DEFINE_REDUCE(name, kind)                                      \
  cmx_array cmx__##name(cmx_array a, const int* axes, int naxes,       \
                        bool keepdims, cmx_stream s) {                 \
    return reduce(#name, kind, a, axes, naxes, keepdims, s);           \
  }                                                                    \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const int* axes,  \
                        int naxes, bool keepdims, cmx_stream s) {      \
    CMX__PUBLIC(out, #name, cmx__##name(a, axes, naxes, keepdims, s)); \
  }
DEFINE_REDUCE(sum, CMX__RED_SUM)
DEFINE_REDUCE(prod, CMX__RED_PROD)
DEFINE_REDUCE(min, CMX__RED_MIN)
DEFINE_REDUCE(max, CMX__RED_MAX)
DEFINE_REDUCE(mean, CMX__RED_MEAN)
DEFINE_REDUCE(all, CMX__RED_AND)
DEFINE_REDUCE(any, CMX__RED_OR)

/* ---------------- fused floating reductions ---------------- */

/* The input converted to its floating result dtype; complex inputs are a
 * TypeError unless allowed. */
static cmx_array float_input(const char* op, cmx_array a, bool allow_complex,
                             cmx_stream s) {
  if (!allow_complex && cmx_dtype_is_complex(a->dtype))
    return CMX__FAIL(CMX_ERR_TYPE, "[%s] not supported for dtype %s.", op,
                     cmx_dtype_name(a->dtype));
  return cmx__as_dtype(a, at_least_float(a->dtype), s);
}

/* log(sum(exp(a))) of complex a as a composite: the largest real part
 * (where finite) is taken out before exp and added back after log. */
static cmx_array complex_logsumexp(cmx_array a, const red_shape* r,
                                   bool keepdims, cmx_stream s) {
  int32_t ax[CMX_MAX_NDIM], nax;
  fill_axes(ax, &nax, r);
  cmx_array re = cmx__real(a, s);
  cmx_array m = cmx__stop_gradient(cmx__max(re, ax, nax, true, s), s);
  m = cmx__where(cmx__isfinite(m, s), m, cmx__scalar(0.0, CMX_FLOAT32), s);
  cmx_array sum =
      cmx__sum(cmx__exp(cmx__subtract(a, m, s), s), ax, nax, keepdims, s);
  if (!keepdims) m = cmx__squeeze(m, ax, nax, s);
  return cmx__add(cmx__log(sum, s), m, s);
}

cmx_array cmx__logsumexp(cmx_array a, const int* axes, int naxes, bool keepdims,
                         cmx_stream s) {
  if (!CMX__ARGS("logsumexp", a) || !(a = strong(a))) return NULL;
  if (a->ndim == 0 && axes && naxes > 0) /* MLX checks this first */
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[logsumexp] Received non-empty axes for array with 0 "
                     "dimensions.");
  red_shape r;
  if (!reduce_shape("logsumexp", a, axes, naxes, keepdims, &r)) return NULL;
  if (a->size == 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[logsumexp] Received empty array.");
  if (cmx_dtype_is_complex(a->dtype))
    return complex_logsumexp(a, &r, keepdims, s);
  cmx_array x = float_input("logsumexp", a, false, s);
  if (!x) return NULL;
  cmx__axes_params q;
  memset(&q, 0, sizeof q);
  fill_axes(q.axes, &q.naxes, &r);
  q.keepdims = keepdims;
  return cmx__apply(&cmx__vt_LogSumExp, &q, sizeof q, s, &x, 1, r.shape, r.ndim,
                    x->dtype);
}

cmx_status cmx_logsumexp(cmx_array* out, cmx_array a, const int* axes,
                         int naxes, bool keepdims, cmx_stream s) {
  CMX__PUBLIC(out, "logsumexp", cmx__logsumexp(a, axes, naxes, keepdims, s));
}

static cmx_array var_std(const char* op, cmx_array a, const int* axes,
                         int naxes, bool keepdims, int ddof, bool sq,
                         cmx_stream s) {
  if (!CMX__ARGS(op, a) || !(a = strong(a))) return NULL;
  red_shape r;
  if (!reduce_shape(op, a, axes, naxes, keepdims, &r)) return NULL;
  if (cmx_dtype_is_complex(a->dtype)) {
    /* MLX: the mean squared modulus of the deviations, a real result;
     * |x - mean|^2 splits into the real and imaginary parts' squares. */
    cmx_array v = cmx__add(
        var_std(op, cmx__real(a, s), axes, naxes, keepdims, ddof, false, s),
        var_std(op, cmx__imag(a, s), axes, naxes, keepdims, ddof, false, s), s);
    return sq ? cmx__sqrt(v, s) : v;
  }
  cmx_array x = float_input(op, a, false, s);
  if (!x) return NULL;
  cmx__axes_params q;
  memset(&q, 0, sizeof q);
  fill_axes(q.axes, &q.naxes, &r);
  q.ddof = ddof;
  q.sqrt = sq;
  q.keepdims = keepdims;
  return cmx__apply(&cmx__vt_Var, &q, sizeof q, s, &x, 1, r.shape, r.ndim,
                    x->dtype);
}

cmx_array cmx__var(cmx_array a, const int* axes, int naxes, bool keepdims,
                   int ddof, cmx_stream s) {
  return var_std("var", a, axes, naxes, keepdims, ddof, false, s);
}

cmx_array cmx__std(cmx_array a, const int* axes, int naxes, bool keepdims,
                   int ddof, cmx_stream s) {
  return var_std("std", a, axes, naxes, keepdims, ddof, true, s);
}

cmx_status cmx_var(cmx_array* out, cmx_array a, const int* axes, int naxes,
                   bool keepdims, int ddof, cmx_stream s) {
  CMX__PUBLIC(out, "var", cmx__var(a, axes, naxes, keepdims, ddof, s));
}

cmx_status cmx_std(cmx_array* out, cmx_array a, const int* axes, int naxes,
                   bool keepdims, int ddof, cmx_stream s) {
  CMX__PUBLIC(out, "std", cmx__std(a, axes, naxes, keepdims, ddof, s));
}

cmx_array cmx__softmax(cmx_array a, const int* axes, int naxes, bool precise,
                       cmx_stream s) {
  if (!CMX__ARGS("softmax", a) || !(a = strong(a))) return NULL;
  red_shape r;
  if (!reduce_shape("softmax", a, axes, naxes, true, &r)) return NULL;
  cmx_array x = float_input("softmax", a, false, s);
  if (!x || x->size == 0) return x;
  cmx__axes_params q;
  memset(&q, 0, sizeof q);
  fill_axes(q.axes, &q.naxes, &r);
  q.precise = precise;
  return cmx__apply(&cmx__vt_Softmax, &q, sizeof q, s, &x, 1, x->dims, x->ndim,
                    x->dtype);
}

cmx_status cmx_softmax(cmx_array* out, cmx_array a, const int* axes, int naxes,
                       bool precise, cmx_stream s) {
  CMX__PUBLIC(out, "softmax", cmx__softmax(a, axes, naxes, precise, s));
}

/* ---------------- argmin / argmax ---------------- */

static cmx_array arg_reduce(const char* op, int kind, cmx_array a,
                            const int* axis, bool keepdims, cmx_stream s) {
  if (!CMX__ARGS(op, a) || !(a = strong(a))) return NULL;
  if (a->size == 0) /* MLX checks this before the axis */
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Cannot %s reduce zero size array.",
                     op, op);
  int ax = -1;
  int64_t shape[CMX_MAX_NDIM];
  int nd = 0;
  if (axis) {
    ax = *axis;
    if (!cmx__norm_axis(op, &ax, a->ndim)) return NULL;
    for (int d = 0; d < a->ndim; d++)
      if (d != ax)
        shape[nd++] = a->dims[d];
      else if (keepdims)
        shape[nd++] = 1;
  } else {
    if (keepdims)
      for (int d = 0; d < a->ndim; d++) shape[nd++] = 1;
  }
  cmx__argreduce_params q;
  memset(&q, 0, sizeof q);
  q.kind = kind;
  q.axis = ax;
  q.keepdims = keepdims;
  return cmx__apply(&cmx__vt_ArgReduce, &q, sizeof q, s, &a, 1, shape, nd,
                    CMX_UINT32);
}

cmx_array cmx__argmin(cmx_array a, const int* axis, bool keepdims,
                      cmx_stream s) {
  return arg_reduce("argmin", CMX__ARG_MIN, a, axis, keepdims, s);
}

cmx_array cmx__argmax(cmx_array a, const int* axis, bool keepdims,
                      cmx_stream s) {
  return arg_reduce("argmax", CMX__ARG_MAX, a, axis, keepdims, s);
}

cmx_status cmx_argmin(cmx_array* out, cmx_array a, const int* axis,
                      bool keepdims, cmx_stream s) {
  CMX__PUBLIC(out, "argmin", cmx__argmin(a, axis, keepdims, s));
}

cmx_status cmx_argmax(cmx_array* out, cmx_array a, const int* axis,
                      bool keepdims, cmx_stream s) {
  CMX__PUBLIC(out, "argmax", cmx__argmax(a, axis, keepdims, s));
}
