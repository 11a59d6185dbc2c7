/* Scan ops: cumsum, cumprod, cummax, cummin, logcumsumexp (the Scan
 * primitive), and diff. */
#include "primitives/scan.h"

#include "ops/ops_internal.h"

/* logcumsumexp of complex a (MLX computes it; the Scan kernel is real):
 * log of the running sum of exp, with the axis' largest real part (where
 * finite) taken out before exp and added back after log. */
static cmx_array complex_logcumsumexp(cmx_array a, int ax, bool reverse,
                                      bool inclusive, cmx_stream s) {
  cmx_array m =
      cmx__stop_gradient(cmx__max(cmx__real(a, s), &ax, 1, true, s), s);
  m = cmx__where(cmx__isfinite(m, s), m, cmx__scalar(0.0, CMX_FLOAT32), s);
  cmx_array c = cmx__cumsum(cmx__exp(cmx__subtract(a, m, s), s), &ax, reverse,
                            inclusive, s);
  return cmx__add(cmx__log(c, s), m, s);
}

static cmx_array scan(const char* op, cmx__scan_kind kind, cmx_array a,
                      const int* axis, bool reverse, bool inclusive,
                      cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  int ax = 0;
  if (!axis) {
    int64_t n = a->size;
    a = a->ndim == 1 ? a : cmx__reshape(a, &n, 1, s);
    if (!a) return NULL;
  } else {
    ax = *axis;
    if (ax < -a->ndim || ax >= a->ndim)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[%s] Axis %d is out of bounds for array with %d "
                       "dimensions.",
                       op, ax, a->ndim);
    if (ax < 0) ax += a->ndim;
  }
  cmx_dtype dt = a->dtype;
  if (kind == CMX__SCAN_SUM && dt == CMX_BOOL) dt = CMX_INT32;
  if (kind == CMX__SCAN_LOGADDEXP) {
    if (cmx_dtype_is_complex(dt))
      return complex_logcumsumexp(a, ax, reverse, inclusive, s);
    if (!cmx_dtype_is_inexact(dt)) dt = CMX_FLOAT32;
  }
  a = cmx__as_dtype(a, dt, s);
  if (!a) return NULL;
  cmx__scan_params q = {kind, ax, reverse, inclusive};
  return cmx__apply(&cmx__vt_Scan, &q, sizeof q, s, &a, 1, a->dims, a->ndim,
                    dt);
}

#define SCAN_OP(name, kind)                                               \
  cmx_array cmx__##name(cmx_array a, const int* axis, bool reverse,       \
                        bool inclusive, cmx_stream s) {                   \
    return scan(#name, kind, a, axis, reverse, inclusive, s);             \
  }                                                                       \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const int* axis,     \
                        bool reverse, bool inclusive, cmx_stream s) {     \
    CMX__PUBLIC(out, #name, cmx__##name(a, axis, reverse, inclusive, s)); \
  }
SCAN_OP(cumsum, CMX__SCAN_SUM)
SCAN_OP(cumprod, CMX__SCAN_PROD)
SCAN_OP(cummax, CMX__SCAN_MAX)
SCAN_OP(cummin, CMX__SCAN_MIN)
SCAN_OP(logcumsumexp, CMX__SCAN_LOGADDEXP)

/* NumPy's diff: a[1:] - a[:-1] along axis, n times (not_equal for bool,
 * as NumPy). An axis that runs out stays empty. */
cmx_array cmx__diff(cmx_array a, int n, int axis, cmx_stream s) {
  if (!CMX__ARGS("diff", a)) return NULL;
  if (a->ndim == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[diff] diff requires input that is at least one "
                     "dimensional.");
  if (n < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[diff] order must be non-negative but got %d.", n);
  if (!cmx__norm_axis("diff", &axis, a->ndim)) return NULL;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int i = 0; i < n && a && a->dims[axis] > 0; i++) {
    for (int d = 0; d < a->ndim; d++) {
      start[d] = 0;
      stop[d] = a->dims[d];
    }
    int64_t len = a->dims[axis];
    start[axis] = 1;
    cmx_array hi = cmx__slice(a, start, stop, NULL, s);
    start[axis] = 0;
    stop[axis] = len - 1;
    cmx_array lo = cmx__slice(a, start, stop, NULL, s);
    a = a->dtype == CMX_BOOL ? cmx__not_equal(hi, lo, s)
                             : cmx__subtract(hi, lo, s);
  }
  return a;
}

cmx_status cmx_diff(cmx_array* out, cmx_array a, int n, int axis,
                    cmx_stream s) {
  CMX__PUBLIC(out, "diff", cmx__diff(a, n, axis, s));
}
