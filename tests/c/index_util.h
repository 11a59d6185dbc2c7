/* Helpers of the indexing tests: random index arrays, broadcast reads of
 * host tensors, and a plain double-precision model of every scatter
 * reduction (rounded to the dtype after each step, as the kernels store).
 *
 *   int64_t v = iu_bload(&idx, pos, bshape, bnd);  // idx broadcast to bshape
 *   iu_combine(IU_ADD, dt, &want.re[k], &want.im[k], u.re[j], u.im[j]);
 */
#ifndef CMX_TEST_INDEX_UTIL_H
#define CMX_TEST_INDEX_UTIL_H

#include "shape_util.h"

enum { IU_NONE = 0, IU_ADD, IU_PROD, IU_MAX, IU_MIN, IU_NUM_MODES };
static const char* const iu_mode_names[] = {"none", "add", "prod", "max",
                                            "min"};

/* Uniform integer in [lo, hi]. */
static inline int64_t iu_rand(uint64_t* rng, int64_t lo, int64_t hi) {
  return lo + (int64_t)(h_rand_u64(rng) % (uint64_t)(hi - lo + 1));
}

/* The element of t (shape right-aligned against bshape, size-1 dims
 * broadcast) at multi-index pos of bshape, as an integer. */
static inline int64_t iu_bload_pos(const h_tensor* t, const int64_t* pos,
                                   int bnd) {
  int64_t k = 0;
  for (int d = 0; d < t->ndim; d++) {
    int bd = d + (bnd - t->ndim);
    k = k * t->shape[d] + (t->shape[d] == 1 ? 0 : pos[bd]);
  }
  return k;
}
static inline int64_t iu_bload(const h_tensor* t, const int64_t* pos, int bnd) {
  return (int64_t)t->re[iu_bload_pos(t, pos, bnd)];
}

static inline bool iu_isnan(double re, double im) {
  return re != re || im != im;
}

/* x (re, im) = x OP y, in double, rounded to dt. */
static inline void iu_combine(int mode, cmx_dtype dt, double* xr, double* xi,
                              double yr, double yi) {
  bool cplx = dt == CMX_COMPLEX64, b = dt == CMX_BOOL;
  double r = *xr, i = cplx ? *xi : 0;
  switch (mode) {
    case IU_NONE:
      r = yr, i = yi;
      break;
    case IU_ADD:
      if (b)
        r = (r != 0) || (yr != 0);
      else
        r += yr, i += yi;
      break;
    case IU_PROD:
      if (b)
        r = (r != 0) && (yr != 0);
      else if (cplx) {
        double nr = r * yr - i * yi, ni = r * yi + i * yr;
        r = nr, i = ni;
      } else
        r *= yr;
      break;
    case IU_MAX:
    case IU_MIN: {
      bool mx = mode == IU_MAX;
      if (b) {
        r = mx ? ((r != 0) || (yr != 0)) : ((r != 0) && (yr != 0));
      } else if (iu_isnan(r, i)) {
      } else if (iu_isnan(yr, yi)) {
        r = yr, i = yi;
      } else {
        bool gt = yr > r || (yr == r && yi > i);
        bool lt = yr < r || (yr == r && yi < i);
        if (mx ? gt : lt) r = yr, i = yi;
      }
      break;
    }
  }
  *xr = h_round_to(r, dt);
  if (cplx) *xi = h_round_to(i, dt);
}

/* A fresh copy of t. */
static inline h_tensor iu_copy(const h_tensor* t) {
  h_tensor c = h_alloc(t->shape, t->ndim, t->dtype);
  memcpy(c.re, t->re, (size_t)(t->size ? t->size : 1) * sizeof(double));
  if (t->im)
    memcpy(c.im, t->im, (size_t)(t->size ? t->size : 1) * sizeof(double));
  return c;
}

/* An integer tensor of the given shape and dtype with values from vals
 * (one per element). */
static inline h_tensor iu_ints(const int64_t* shape, int nd, cmx_dtype dt,
                               const int64_t* vals) {
  h_tensor t = h_alloc(shape, nd, dt);
  for (int64_t k = 0; k < t.size; k++) t.re[k] = (double)vals[k];
  return t;
}

/* Tolerance for comparing scatter results of dtype dt: exact except
 * complex, whose float products round differently from the double
 * model; their error is relative to the largest magnitude. */
static inline double iu_atol(const h_tensor* want) {
  if (want->dtype != CMX_COMPLEX64) return 0;
  double m = 0;
  for (int64_t k = 0; k < want->size; k++)
    m = fmax(m, hypot(want->re[k], want->im[k]));
  return 8 * h_tol(CMX_COMPLEX64) * m;
}

/* Whether scatter result r may combine the updates of a repeated index in
 * another order than the model's (index order, the CPU's): a GPU's float
 * sums and products (mode IU_ADD or IU_PROD) are atomics in any order, as
 * MLX's and torch's GPU scatters. */
static inline bool iu_any_order(cmx_array r, int mode) {
  return r && (mode == IU_ADD || mode == IU_PROD) &&
         cmx_dtype_is_inexact(cmx_array_dtype(r)) &&
         cmx_array_stream(r).device.type == CMX_GPU;
}

/* |t| per element (complex: the modulus, imaginary parts zero). */
static inline h_tensor iu_abs(const h_tensor* t) {
  h_tensor a = h_alloc(t->shape, t->ndim, t->dtype);
  for (int64_t k = 0; k < t->size; k++) {
    a.re[k] = t->im ? hypot(t->re[k], t->im[k]) : fabs(t->re[k]);
    if (a.im) a.im[k] = 0;
  }
  return a;
}

/* A scatter's result against the model's want: within rtol and iu_atol
 * when mag is NULL (the model's order); else (iu_any_order) within
 * 4 h_tol(dt) of mag, per element, where mag is the model applied to the
 * magnitudes of the input and updates, which bounds the rounding of any
 * order of the same sums or products. */
static inline bool iu_close(const h_tensor* got, const h_tensor* want,
                            const h_tensor* mag, double rtol,
                            const char* what) {
  double atol = iu_atol(want);
  if (!mag || got->size != want->size || got->dtype != want->dtype ||
      mag->size != want->size)
    return h_close(got, want, rtol, atol, what);
  /* float16 products may reach subnormals, whose steps are absolute */
  double tiny = want->dtype == CMX_FLOAT16 ? 0x1p-20 : 0;
  for (int64_t i = 0; i < got->size; i++) {
    double tol = atol + tiny + 4 * h_tol(want->dtype) * mag->re[i];
    bool ok = h_value_close(got->re[i], want->re[i], rtol, tol);
    if (ok && got->im) ok = h_value_close(got->im[i], want->im[i], rtol, tol);
    if (!ok) {
      fprintf(stderr,
              "FAIL %s: element %lld: got %.17g%+.17gj, want %.17g%+.17gj "
              "(any order: tolerance %g)\n",
              what, (long long)i, got->re[i], got->im ? got->im[i] : 0.0,
              want->re[i], want->im ? want->im[i] : 0.0, tol);
      return false;
    }
  }
  return true;
}

/* Index dtypes the tests cycle through. */
static const cmx_dtype IU_IDX_DTYPES[] = {CMX_INT32,  CMX_INT64, CMX_INT16,
                                          CMX_UINT8,  CMX_INT8,  CMX_UINT32,
                                          CMX_UINT64, CMX_UINT16};
#define IU_NUM_IDX_DTYPES 8

/* Evaluates r and expects failure with `needle` in the message. */
static inline void iu_eval_fails(cmx_array r, const char* needle,
                                 const char* what) {
  cmx_status st = r ? cmx_array_eval(r) : CMX_ERR_VALUE;
  CHECK_MSG(r && st != CMX_OK && strstr(cmx_last_error(), needle),
            "%s: eval -> %s '%s' (want failure with '%s')", what,
            cmx_status_name(st), cmx_last_error(), needle);
}

#endif
