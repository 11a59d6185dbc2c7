/* Creation ops: ranges, filled arrays, triangular matrices, coordinate
 * grids (meshgrid) and window functions. */
#include "primitives/creation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/shape_internal.h"

static cmx_dtype or_float32(cmx_dtype dt) {
  return dt == CMX_DTYPE_AUTO ? CMX_FLOAT32 : dt;
}

static bool check_dtype(const char* op, cmx_dtype dt) {
  if (cmx_dtype_valid((int)dt)) return true;
  cmx__error(CMX_ERR_TYPE, "[%s] invalid dtype %d", op, (int)dt);
  return false;
}

/* MLX's size rule: ceil((stop - start) / step), at least 0, at most
 * INT_MAX. Integer dtypes take T(start) + i * (T(start + step) -
 * T(start)) as MLX computes them; other dtypes start + i * step in double,
 * rounded once. */
cmx_array cmx__arange(double start, double stop, double step, cmx_dtype dt,
                      cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("arange", dt)) return NULL;
  if (dt == CMX_BOOL)
    return CMX__FAIL(CMX_ERR_VALUE, "[arange] bool not supported for arange.");
  if (isnan(start) || isnan(stop) || isnan(step) || isinf(start) || isinf(stop))
    return CMX__FAIL(CMX_ERR_VALUE, "[arange] Cannot compute length.");
  if (step == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[arange] Cannot compute length with a step of 0.");
  int64_t size;
  if (isinf(step)) {
    size = (step > 0 && start < stop) || (step < 0 && start > stop) ? 1 : 0;
  } else {
    double real = ceil((stop - start) / step);
    if (real > 2147483647.0)
      return CMX__FAIL(CMX_ERR_VALUE, "[arange] Maximum size exceeded.");
    size = real > 0 ? (int64_t)real : 0;
  }
  cmx__range_params q;
  memset(&q, 0, sizeof q);
  q.start = start;
  q.step = isinf(step) ? 0 : step;
  q.stop = stop;
  q.num = size;
  q.dtype = dt;
  return cmx__apply(&cmx__vt_Arange, &q, sizeof q, s, NULL, 0, &size, 1, dt);
}

cmx_array cmx__linspace(double start, double stop, int64_t num, cmx_dtype dt,
                        cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("linspace", dt)) return NULL;
  if (num < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linspace] number of samples, %lld, must be "
                     "non-negative.",
                     (long long)num);
  cmx__range_params q;
  memset(&q, 0, sizeof q);
  q.start = start;
  q.stop = num > 1 ? stop : start;
  q.step = num > 1 ? (stop - start) / (double)(num - 1) : 0;
  q.num = num;
  q.dtype = dt;
  return cmx__apply(&cmx__vt_Linspace, &q, sizeof q, s, NULL, 0, &num, 1, dt);
}

cmx_array cmx__full(const int64_t* shape, int ndim, cmx_array vals,
                    cmx_dtype dt, cmx_stream s) {
  if (!CMX__ARGS("full", vals)) return NULL;
  if (!cmx__check_shape_arg("full", shape, ndim, false)) return NULL;
  if (dt == CMX_DTYPE_AUTO) dt = cmx__result_type(&vals, 1);
  if (!check_dtype("full", dt)) return NULL;
  cmx_array b = cmx__broadcast_to(cmx__as_dtype(vals, dt, s), shape, ndim, s);
  if (!b) return NULL;
  return cmx__apply(&cmx__vt_Full, NULL, 0, s, &b, 1, shape, ndim, dt);
}

cmx_array cmx__zeros(const int64_t* shape, int ndim, cmx_dtype dt,
                     cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("zeros", dt)) return NULL;
  if (!cmx__check_shape_arg("zeros", shape, ndim, false)) return NULL;
  return cmx__full(shape, ndim, cmx__scalar(0, dt), dt, s);
}

cmx_array cmx__ones(const int64_t* shape, int ndim, cmx_dtype dt,
                    cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("ones", dt)) return NULL;
  if (!cmx__check_shape_arg("ones", shape, ndim, false)) return NULL;
  return cmx__full(shape, ndim, cmx__scalar(1, dt), dt, s);
}

cmx_array cmx__full_like(cmx_array a, cmx_array vals, cmx_dtype dt,
                         cmx_stream s) {
  if (!CMX__ARGS("full_like", a, vals)) return NULL;
  return cmx__full(a->dims, a->ndim, vals, dt == CMX_DTYPE_AUTO ? a->dtype : dt,
                   s);
}

cmx_array cmx__zeros_like(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("zeros_like", a)) return NULL;
  return cmx__zeros(a->dims, a->ndim, a->dtype, s);
}

cmx_array cmx__ones_like(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("ones_like", a)) return NULL;
  return cmx__ones(a->dims, a->ndim, a->dtype, s);
}

cmx_array cmx__eye(int64_t n, int64_t m, int64_t k, cmx_dtype dt,
                   cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("eye", dt)) return NULL;
  if (m < 0) m = n;
  if (n < 0 || m < 0) /* as MLX: 0 rows or columns make an empty matrix */
    return CMX__FAIL(CMX_ERR_VALUE, "[eye] N and M must be positive integers.");
  cmx__diag_params q = {.k = k, .n = n, .m = m, .dtype = dt};
  return cmx__apply(&cmx__vt_Eye, &q, sizeof q, s, NULL, 0, (int64_t[]){n, m},
                    2, dt);
}

cmx_array cmx__tri(int64_t n, int64_t m, int64_t k, cmx_dtype dt,
                   cmx_stream s) {
  dt = or_float32(dt);
  if (!check_dtype("tri", dt)) return NULL;
  if (m < 0) m = n;
  if (n < 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[tri] N must be non-negative, got %lld.",
                     (long long)n);
  cmx__diag_params q = {.k = k, .n = n, .m = m, .dtype = dt};
  return cmx__apply(&cmx__vt_Tri, &q, sizeof q, s, NULL, 0, (int64_t[]){n, m},
                    2, dt);
}

static cmx_array tril_triu(const char* op, const cmx_primitive_vtable* vt,
                           cmx_array a, int64_t k, cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  if (a->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] array must be at least 2-D", op);
  cmx__diag_params q = {.k = k};
  return cmx__apply(vt, &q, sizeof q, s, &a, 1, a->dims, a->ndim, a->dtype);
}

cmx_array cmx__tril(cmx_array a, int64_t k, cmx_stream s) {
  return tril_triu("tril", &cmx__vt_Tril, a, k, s);
}

cmx_array cmx__triu(cmx_array a, int64_t k, cmx_stream s) {
  return tril_triu("triu", &cmx__vt_Triu, a, k, s);
}

/* ---------------- public wrappers ---------------- */

cmx_status cmx_arange(cmx_array* out, double start, double stop, double step,
                      cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "arange", cmx__arange(start, stop, step, dtype, s));
}
cmx_status cmx_linspace(cmx_array* out, double start, double stop, int64_t num,
                        cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "linspace", cmx__linspace(start, stop, num, dtype, s));
}
cmx_status cmx_full(cmx_array* out, const int64_t* shape, int ndim,
                    cmx_array vals, cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "full", cmx__full(shape, ndim, vals, dtype, s));
}
cmx_status cmx_zeros(cmx_array* out, const int64_t* shape, int ndim,
                     cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "zeros", cmx__zeros(shape, ndim, dtype, s));
}
cmx_status cmx_ones(cmx_array* out, const int64_t* shape, int ndim,
                    cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "ones", cmx__ones(shape, ndim, dtype, s));
}
cmx_status cmx_zeros_like(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "zeros_like", cmx__zeros_like(a, s));
}
cmx_status cmx_ones_like(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "ones_like", cmx__ones_like(a, s));
}
cmx_status cmx_full_like(cmx_array* out, cmx_array a, cmx_array vals,
                         cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "full_like", cmx__full_like(a, vals, dtype, s));
}
cmx_status cmx_eye(cmx_array* out, int64_t n, int64_t m, int64_t k,
                   cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "eye", cmx__eye(n, m, k, dtype, s));
}
cmx_status cmx_identity(cmx_array* out, int64_t n, cmx_dtype dtype,
                        cmx_stream s) {
  CMX__PUBLIC(out, "identity", cmx__eye(n, n, 0, dtype, s));
}
cmx_status cmx_tri(cmx_array* out, int64_t n, int64_t m, int64_t k,
                   cmx_dtype dtype, cmx_stream s) {
  CMX__PUBLIC(out, "tri", cmx__tri(n, m, k, dtype, s));
}
cmx_status cmx_tril(cmx_array* out, cmx_array a, int64_t k, cmx_stream s) {
  CMX__PUBLIC(out, "tril", cmx__tril(a, k, s));
}
cmx_status cmx_triu(cmx_array* out, cmx_array a, int64_t k, cmx_stream s) {
  CMX__PUBLIC(out, "triu", cmx__triu(a, k, s));
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
  /* The grid's size in bytes checked here, so the error names meshgrid. */
  int64_t span = 1;
  for (int i = 0; i < n; i++)
    if ((int64_t)cmx_dtype_size(flat[i]->dtype) > span)
      span = (int64_t)cmx_dtype_size(flat[i]->dtype);
  for (int i = 0; !sparse && i < n; i++)
    if (full[i] > 0 && __builtin_mul_overflow(span, full[i], &span)) {
      cmx__error(CMX_ERR_VALUE,
                 "[meshgrid] shape is too large (size overflows)");
      return false;
    }
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

/* public wrappers of meshgrid and the windows */
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
