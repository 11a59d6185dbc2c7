/* Miscellaneous composite ops (MLX semantics): meshgrid, window functions,
 * atleast_*d, unstack, nan_to_num, isclose/allclose/array_equal, divmod.
 * Everything is written with the internal ops; no primitive of its own. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "ops/shape_internal.h"

/* A weak float scalar (gives way to a strongly typed float operand). */
static cmx_array weak_float(const char* op, double v) {
  cmx__scalar_value sv;
  sv.f = v;
  return cmx__own(cmx__scalar_node(op, sv, 2, CMX_FLOAT32, true));
}

/* ---------------- meshgrid ---------------- */
bool cmx__meshgrid(cmx_array* outs, const cmx_array* arrays, int n, bool sparse,
                   const char* indexing, cmx_stream s) {
  if (!indexing) indexing = "xy";
  bool xy = strcmp(indexing, "xy") == 0;
  if (!xy && strcmp(indexing, "ij") != 0) {
    cmx__error(CMX_ERR_VALUE,
               "[meshgrid] Invalid indexing value. Valid values are 'xy' "
               "and 'ij'.");
    return false;
  }
  if (n < 0 || n > CMX_MAX_NDIM || (n > 0 && !arrays)) {
    cmx__error(CMX_ERR_VALUE, "[meshgrid] Expected between 0 and %d arrays.",
               CMX_MAX_NDIM);
    return false;
  }
  int64_t full[CMX_MAX_NDIM];
  cmx_array flat[CMX_MAX_NDIM];
  for (int i = 0; i < n; i++) {
    if (!CMX__ARGS("meshgrid", arrays[i])) return false;
    int64_t m = arrays[i]->size;
    flat[i] = cmx__reshape(arrays[i], &m, 1, s);
    if (!flat[i]) return false;
  }
  /* Output axis of input i: "xy" swaps the first two. */
  int pos[CMX_MAX_NDIM];
  for (int i = 0; i < n; i++) pos[i] = i;
  if (xy && n >= 2) pos[0] = 1, pos[1] = 0;
  for (int i = 0; i < n; i++) full[pos[i]] = flat[i]->size;
  for (int i = 0; i < n; i++) {
    int64_t shp[CMX_MAX_NDIM];
    for (int d = 0; d < n; d++) shp[d] = 1;
    shp[pos[i]] = flat[i]->size;
    cmx_array r = cmx__reshape(flat[i], shp, n, s);
    if (!sparse) r = cmx__broadcast_to(r, full, n, s);
    if (!r) return false; /* the wrapper clears outs */
    outs[i] = r;
  }
  return true;
}

/* ---------------- window functions ----------------
 * Computed in double on the host (they are constants, as arange is) and
 * stored as float32, following NumPy's definitions over n = 1-m, 3-m, ..,
 * m-1. */
typedef double (*window_fn)(double x); /* x = n / (m - 1) in [-1, 1] */
static double w_bartlett(double x) {
  return x <= 0 ? 1 + x : 1 - x;
}
static double w_hanning(double x) {
  return 0.5 + 0.5 * cos(M_PI * x);
}
static double w_hamming(double x) {
  return 0.54 + 0.46 * cos(M_PI * x);
}
static double w_blackman(double x) {
  return 0.42 + 0.5 * cos(M_PI * x) + 0.08 * cos(2 * M_PI * x);
}
static cmx_array window(const char* op, int64_t m, window_fn f) {
  if (m < 1) m = 0;
  /* The buffer comes from the allocator first, so a length past the
   * memory limit fails at once instead of after computing it. */
  cmx_array r = cmx__node_new(op, &m, 1, CMX_FLOAT32);
  if (!r) return NULL;
  if (cmx_kernel_alloc(r) != CMX_OK) {
    cmx_array_release(r);
    return NULL;
  }
  float* v = cmx__node_ptr(r);
  for (int64_t i = 0; i < m; i++)
    v[i] = m == 1 ? 1.0f : (float)f((double)(1 - m + 2 * i) / (double)(m - 1));
  return cmx__own(r);
}
cmx_array cmx__bartlett(int64_t m, cmx_stream s) {
  (void)s;
  return window("bartlett", m, w_bartlett);
}
cmx_array cmx__hanning(int64_t m, cmx_stream s) {
  (void)s;
  return window("hanning", m, w_hanning);
}
cmx_array cmx__hamming(int64_t m, cmx_stream s) {
  (void)s;
  return window("hamming", m, w_hamming);
}
cmx_array cmx__blackman(int64_t m, cmx_stream s) {
  (void)s;
  return window("blackman", m, w_blackman);
}

/* ---------------- atleast_*d ---------------- */
cmx_array cmx__atleast_1d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_1d", a)) return NULL;
  if (a->ndim >= 1) return cmx__ref(a);
  int64_t one = 1;
  return cmx__reshape(a, &one, 1, s);
}
cmx_array cmx__atleast_2d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_2d", a)) return NULL;
  if (a->ndim >= 2) return cmx__ref(a);
  int64_t shp[2] = {1, a->ndim == 1 ? a->dims[0] : 1};
  return cmx__reshape(a, shp, 2, s);
}
cmx_array cmx__atleast_3d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_3d", a)) return NULL;
  if (a->ndim >= 3) return cmx__ref(a);
  int64_t shp[3] = {1, 1, 1};
  if (a->ndim == 1) shp[1] = a->dims[0];
  if (a->ndim == 2) shp[0] = a->dims[0], shp[1] = a->dims[1];
  return cmx__reshape(a, shp, 3, s);
}

/* ---------------- unstack ---------------- */
bool cmx__unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s) {
  if (!CMX__ARGS("unstack", a)) return false;
  if (a->ndim == 0) {
    cmx__error(CMX_ERR_VALUE, "[unstack] No axis to unstack.");
    return false;
  }
  if (!cmx__norm_axis("unstack", &axis, a->ndim)) return false;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++)
    start[d] = 0, stop[d] = a->dims[d], step[d] = 1;
  for (int64_t i = 0; i < a->dims[axis]; i++) {
    start[axis] = i, stop[axis] = i + 1;
    outs[i] = cmx__squeeze(cmx__slice(a, start, stop, step, s), &axis, 1, s);
    if (!outs[i]) {
      for (int64_t j = 0; j < i; j++) outs[j] = NULL;
      return false;
    }
  }
  return true;
}

/* ---------------- nan_to_num ---------------- */
cmx_array cmx__nan_to_num(cmx_array a, double nan, const double* posinf,
                          const double* neginf, cmx_stream s) {
  if (!CMX__ARGS("nan_to_num", a)) return NULL;
  cmx_dtype dt = a->dtype;
  if (cmx_dtype_is_complex(dt)) {
    cmx__error(CMX_ERR_TYPE, "[nan_to_num] complex inputs are not supported.");
    return NULL;
  }
  if (!cmx_dtype_is_floating(dt)) return cmx__ref(a);
  double big = dt == CMX_FLOAT16    ? 65504.0
               : dt == CMX_BFLOAT16 ? 3.3895313892515355e38
               : dt == CMX_FLOAT32  ? (double)FLT_MAX
                                    : DBL_MAX;
  double pv = posinf ? *posinf : big, nv = neginf ? *neginf : -big;
  cmx_array r = cmx__where(cmx__isnan(a, s), cmx__scalar(nan, dt), a, s);
  r = cmx__where(cmx__isposinf(a, s), cmx__scalar(pv, dt), r, s);
  return cmx__where(cmx__isneginf(a, s), cmx__scalar(nv, dt), r, s);
}

/* ---------------- isclose / allclose / array_equal ---------------- */
cmx_array cmx__isclose(cmx_array a, cmx_array b, double rtol, double atol,
                       bool equal_nan, cmx_stream s) {
  if (!CMX__ARGS("isclose", a, b)) return NULL;
  /* |a - b| <= atol + rtol * |b|; infinities break the difference, so they
   * are close exactly when both are the same infinity. */
  cmx_array rhs = cmx__add(
      weak_float("isclose", atol),
      cmx__multiply(weak_float("isclose", rtol), cmx__abs(b, s), s), s);
  cmx_array out = cmx__less_equal(cmx__abs(cmx__subtract(a, b, s), s), rhs, s);
  cmx_array any_inf = cmx__logical_or(cmx__isinf(a, s), cmx__isinf(b, s), s);
  cmx_array both_inf = cmx__logical_or(
      cmx__logical_and(cmx__isposinf(a, s), cmx__isposinf(b, s), s),
      cmx__logical_and(cmx__isneginf(a, s), cmx__isneginf(b, s), s), s);
  out = cmx__logical_and(out, cmx__logical_not(any_inf, s), s);
  out = cmx__logical_or(out, both_inf, s);
  if (equal_nan)
    out = cmx__logical_or(
        out, cmx__logical_and(cmx__isnan(a, s), cmx__isnan(b, s), s), s);
  return out;
}
cmx_array cmx__allclose(cmx_array a, cmx_array b, double rtol, double atol,
                        bool equal_nan, cmx_stream s) {
  return cmx__all(cmx__isclose(a, b, rtol, atol, equal_nan, s), NULL, 0, false,
                  s);
}
cmx_array cmx__array_equal(cmx_array a, cmx_array b, bool equal_nan,
                           cmx_stream s) {
  if (!CMX__ARGS("array_equal", a, b)) return NULL;
  bool same = a->ndim == b->ndim;
  for (int d = 0; same && d < a->ndim; d++) same = a->dims[d] == b->dims[d];
  if (!same) return cmx__scalar(0, CMX_BOOL);
  cmx_array eq = cmx__equal(a, b, s);
  if (equal_nan)
    eq = cmx__logical_or(
        eq, cmx__logical_and(cmx__isnan(a, s), cmx__isnan(b, s), s), s);
  return cmx__all(eq, NULL, 0, false, s);
}

/* ---------------- divmod ---------------- */
bool cmx__divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("divmod", a, b)) return false;
  outs[0] = cmx__floor_divide(a, b, s);
  outs[1] = outs[0] ? cmx__remainder(a, b, s) : NULL;
  return outs[1] != NULL;
}

/* ---------------- public wrappers ---------------- */
cmx_status cmx_meshgrid(cmx_array* outs, const cmx_array* arrays, int n,
                        bool sparse, const char* indexing, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[meshgrid] output pointer is NULL");
  for (int i = 0; i < n; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__meshgrid(outs, arrays, n, sparse, indexing, s);
  return cmx__scope_exit_multi(mark, ok, outs, n > 0 ? n : 0);
}
cmx_status cmx_bartlett(cmx_array* out, int64_t m, cmx_stream s) {
  CMX__PUBLIC(out, "bartlett", cmx__bartlett(m, s));
}
cmx_status cmx_hanning(cmx_array* out, int64_t m, cmx_stream s) {
  CMX__PUBLIC(out, "hanning", cmx__hanning(m, s));
}
cmx_status cmx_hamming(cmx_array* out, int64_t m, cmx_stream s) {
  CMX__PUBLIC(out, "hamming", cmx__hamming(m, s));
}
cmx_status cmx_blackman(cmx_array* out, int64_t m, cmx_stream s) {
  CMX__PUBLIC(out, "blackman", cmx__blackman(m, s));
}
cmx_status cmx_atleast_1d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_1d", cmx__atleast_1d(a, s));
}
cmx_status cmx_atleast_2d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_2d", cmx__atleast_2d(a, s));
}
cmx_status cmx_atleast_3d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_3d", cmx__atleast_3d(a, s));
}
cmx_status cmx_unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[unstack] output pointer is NULL");
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__unstack(outs, a, axis, s);
  int n = 0;
  if (ok) {
    int ax = axis;
    cmx__norm_axis("unstack", &ax, a->ndim);
    n = (int)a->dims[ax];
  }
  return cmx__scope_exit_multi(mark, ok, outs, n);
}
cmx_status cmx_nan_to_num(cmx_array* out, cmx_array a, double nan,
                          const double* posinf, const double* neginf,
                          cmx_stream s) {
  CMX__PUBLIC(out, "nan_to_num", cmx__nan_to_num(a, nan, posinf, neginf, s));
}
cmx_status cmx_isclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                       double atol, bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "isclose", cmx__isclose(a, b, rtol, atol, equal_nan, s));
}
cmx_status cmx_allclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                        double atol, bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "allclose", cmx__allclose(a, b, rtol, atol, equal_nan, s));
}
cmx_status cmx_array_equal(cmx_array* out, cmx_array a, cmx_array b,
                           bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "array_equal", cmx__array_equal(a, b, equal_nan, s));
}
cmx_status cmx_divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[divmod] output pointer is NULL");
  outs[0] = outs[1] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__divmod(outs, a, b, s);
  return cmx__scope_exit_multi(mark, ok, outs, 2);
}

/* ---------------- depends ---------------- */
bool cmx__depends(cmx_array* outs, const cmx_array* inputs, int n,
                  const cmx_array* deps, int m, cmx_stream s) {
  if (n < 0 || m < 0 || (n > 0 && !inputs) || (m > 0 && !deps)) {
    cmx__error(CMX_ERR_VALUE, "[depends] invalid array lists");
    return false;
  }
  if (n == 0) return true;
  cmx_array* all = malloc((size_t)(n + m) * sizeof(cmx_array));
  const int64_t** shapes = malloc((size_t)n * sizeof(int64_t*));
  int* ndims = malloc((size_t)n * sizeof(int));
  cmx_dtype* dts = malloc((size_t)n * sizeof(cmx_dtype));
  bool ok = all && shapes && ndims && dts;
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[depends] out of memory");
  for (int i = 0; ok && i < n + m; i++) {
    all[i] = i < n ? inputs[i] : deps[i - n];
    ok = CMX__ARGS("depends", all[i]);
  }
  for (int i = 0; ok && i < n; i++)
    shapes[i] = inputs[i]->dims, ndims[i] = inputs[i]->ndim,
    dts[i] = inputs[i]->dtype;
  if (ok)
    ok = cmx__apply_n(&cmx__vt_Depends, NULL, 0, s, all, n + m, outs, n, shapes,
                      ndims, dts) == CMX_OK;
  free(all), free(shapes), free(ndims), free(dts);
  return ok;
}
cmx_status cmx_depends(cmx_array* outs, const cmx_array* inputs, int n,
                       const cmx_array* dependencies, int m, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[depends] output pointer is NULL");
  for (int i = 0; i < n; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__depends(outs, inputs, n, dependencies, m, s);
  return cmx__scope_exit_multi(mark, ok, outs, n > 0 ? n : 0);
}
