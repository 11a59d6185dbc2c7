/* mx.linalg's factorizations: validation, dtype checks and batching in
 * front of the primitives of primitives/linalg.h (lu, lu_factor, qr, svd,
 * inv, tri_inv, cholesky, eigh, eigvalsh, eig, eigvals, solve,
 * solve_triangular). Compositions over them are in ops/linalg_compose.c.
 * Messages follow MLX's ("[linalg::inv] Arrays must have type float32 or
 * float64. ..."). */
#include "primitives/linalg.h"

#include <string.h>

#include "ops/linalg_internal.h"
#include "ops/shape_internal.h"

cmx_array cmx__mT(cmx_array a, cmx_stream s) {
  return a ? cmx__swapaxes(a, -1, -2, s) : NULL;
}

/* a is float32/float64, or complex64 where complex_ok (svd, eigh,
 * eigvalsh, eig, eigvals: the ones MLX takes complex for). */
static bool check_float(const char* op, cmx_array a, bool complex_ok) {
  if (a->dtype == CMX_FLOAT32 || a->dtype == CMX_FLOAT64) return true;
  if (complex_ok && a->dtype == CMX_COMPLEX64) return true;
  cmx__error(CMX_ERR_VALUE,
             "[linalg::%s] Arrays must have type float32%s float64%s. "
             "Received array with type %s.",
             op, complex_ok ? "," : " or", complex_ok ? " or complex64" : "",
             cmx_dtype_name(a->dtype));
  return false;
}

/* a is a stack of matrices (square when asked). */
static bool check_matrix(const char* op, cmx_array a, bool square) {
  if (a->ndim < 2) {
    cmx__error(CMX_ERR_VALUE,
               "[linalg::%s] Arrays must have >= 2 dimensions. Received "
               "array with %d dimensions.",
               op, a->ndim);
    return false;
  }
  if (square && a->dims[a->ndim - 1] != a->dims[a->ndim - 2]) {
    cmx__error(CMX_ERR_VALUE,
               "[linalg::%s] Expected square matrices; received matrices of "
               "shape (%lld, %lld).",
               op, (long long)a->dims[a->ndim - 2],
               (long long)a->dims[a->ndim - 1]);
    return false;
  }
  return true;
}

/* Checks a and returns its row-major contiguous form. */
static cmx_array prep(const char* op, cmx_array a, bool square, bool complex_ok,
                      cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  if (!check_matrix(op, a, square) || !check_float(op, a, complex_ok))
    return NULL;
  return cmx__contiguous(a, false, s);
}

/* Shape: a's batch axes, then up to two trailing dims. */
static int tail_shape(cmx_array a, int64_t* sh, int ntail, int64_t t0,
                      int64_t t1) {
  int nb = a->ndim - 2;
  memcpy(sh, a->dims, (size_t)nb * sizeof *sh);
  sh[nb] = t0;
  sh[nb + 1] = t1;
  return nb + ntail;
}

static int64_t rows(cmx_array a) {
  return a->dims[a->ndim - 2];
}
static int64_t cols(cmx_array a) {
  return a->dims[a->ndim - 1];
}

/* a[..., r0:r1, c0:c1]. */
static cmx_array slice2(cmx_array a, int64_t r0, int64_t r1, int64_t c0,
                        int64_t c1, cmx_stream s) {
  if (!a) return NULL;
  int64_t st[CMX_MAX_NDIM], sp[CMX_MAX_NDIM], one[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) st[d] = 0, sp[d] = a->dims[d], one[d] = 1;
  st[a->ndim - 2] = r0, sp[a->ndim - 2] = r1;
  st[a->ndim - 1] = c0, sp[a->ndim - 1] = c1;
  return cmx__slice(a, st, sp, one, s);
}

/* ---------------- LU ---------------- */
bool cmx__linalg_luf(cmx_array* outs, cmx_array a, const char* op,
                     cmx_stream s) {
  cmx_array x = prep(op, a, false, false, s);
  if (!x) return false;
  int64_t m = rows(x), n = cols(x), k = m < n ? m : n;
  int64_t s0[CMX_MAX_NDIM + 2], s1[CMX_MAX_NDIM + 2], s2[CMX_MAX_NDIM + 2];
  int n0 = tail_shape(x, s0, 2, m, n), n1 = tail_shape(x, s1, 1, k, 0),
      n2 = tail_shape(x, s2, 1, m, 0);
  const int64_t* shapes[3] = {s0, s1, s2};
  int nd[3] = {n0, n1, n2};
  cmx_dtype dts[3] = {x->dtype, CMX_UINT32, CMX_UINT32};
  return cmx__apply_n(&cmx__vt_LUF, NULL, 0, s, &x, 1, outs, 3, shapes, nd,
                      dts) == CMX_OK;
}

bool cmx__linalg_lu(cmx_array* outs, cmx_array a, cmx_stream s) {
  cmx_array f[3];
  if (!cmx__linalg_luf(f, a, "lu", s)) return false;
  int64_t m = rows(f[0]), n = cols(f[0]), k = m < n ? m : n;
  cmx_array l = cmx__tril(slice2(f[0], 0, m, 0, k, s), -1, s);
  if (m > 0 && k > 0) l = cmx__add(l, cmx__eye(m, k, 0, f[0]->dtype, s), s);
  outs[0] = f[2];
  outs[1] = l;
  outs[2] = cmx__triu(slice2(f[0], 0, k, 0, n, s), 0, s);
  return outs[1] && outs[2];
}

/* ---------------- QR, SVD ---------------- */
bool cmx__linalg_qr(cmx_array* outs, cmx_array a, cmx_stream s) {
  cmx_array x = prep("qr", a, false, false, s);
  if (!x) return false;
  int64_t m = rows(x), n = cols(x), k = m < n ? m : n;
  int64_t s0[CMX_MAX_NDIM + 2], s1[CMX_MAX_NDIM + 2];
  int n0 = tail_shape(x, s0, 2, m, k), n1 = tail_shape(x, s1, 2, k, n);
  const int64_t* shapes[2] = {s0, s1};
  int nd[2] = {n0, n1};
  cmx_dtype dts[2] = {x->dtype, x->dtype};
  return cmx__apply_n(&cmx__vt_QRF, NULL, 0, s, &x, 1, outs, 2, shapes, nd,
                      dts) == CMX_OK;
}

bool cmx__linalg_svd(cmx_array* outs, cmx_array a, bool uv, cmx_stream s) {
  cmx_array x = prep("svd", a, false, true, s);
  if (!x) return false;
  int64_t m = rows(x), n = cols(x), k = m < n ? m : n;
  int64_t s0[CMX_MAX_NDIM + 2], s1[CMX_MAX_NDIM + 2], s2[CMX_MAX_NDIM + 2];
  int n0 = tail_shape(x, s0, 2, m, m), n1 = tail_shape(x, s1, 1, k, 0),
      n2 = tail_shape(x, s2, 2, n, n);
  cmx__svd_params q = {.uv = uv};
  const int64_t* shapes[3] = {s0, s1, s2};
  int nd[3] = {n0, n1, n2};
  /* complex64: U and Vt complex64, the singular values float32 */
  cmx_dtype re = x->dtype == CMX_COMPLEX64 ? CMX_FLOAT32 : x->dtype;
  cmx_dtype dts[3] = {x->dtype, re, x->dtype};
  if (!uv)
    return cmx__apply_n(&cmx__vt_SVD, &q, sizeof q, s, &x, 1, outs, 1,
                        shapes + 1, nd + 1, dts + 1) == CMX_OK;
  return cmx__apply_n(&cmx__vt_SVD, &q, sizeof q, s, &x, 1, outs, 3, shapes, nd,
                      dts) == CMX_OK;
}

/* ---------------- eigenproblems ---------------- */
bool cmx__linalg_eigh(cmx_array* outs, cmx_array a, bool upper, bool vectors,
                      const char* op, cmx_stream s) {
  cmx_array x = prep(op, a, true, true, s);
  if (!x) return false;
  int64_t n = cols(x);
  int64_t s0[CMX_MAX_NDIM + 2], s1[CMX_MAX_NDIM + 2];
  int n0 = tail_shape(x, s0, 1, n, 0), n1 = tail_shape(x, s1, 2, n, n);
  cmx__eigh_params q = {.upper = upper, .vectors = vectors};
  const int64_t* shapes[2] = {s0, s1};
  int nd[2] = {n0, n1};
  /* complex64 (Hermitian): real float32 eigenvalues */
  cmx_dtype re = x->dtype == CMX_COMPLEX64 ? CMX_FLOAT32 : x->dtype;
  cmx_dtype dts[2] = {re, x->dtype};
  return cmx__apply_n(&cmx__vt_Eigh, &q, sizeof q, s, &x, 1, outs,
                      vectors ? 2 : 1, shapes, nd, dts) == CMX_OK;
}

bool cmx__linalg_eig(cmx_array* outs, cmx_array a, bool vectors, const char* op,
                     cmx_stream s) {
  cmx_array x = prep(op, a, true, true, s);
  if (!x) return false;
  int64_t n = cols(x);
  int64_t s0[CMX_MAX_NDIM + 2], s1[CMX_MAX_NDIM + 2];
  int n0 = tail_shape(x, s0, 1, n, 0), n1 = tail_shape(x, s1, 2, n, n);
  cmx__eig_params q = {.vectors = vectors};
  const int64_t* shapes[2] = {s0, s1};
  int nd[2] = {n0, n1};
  cmx_dtype dts[2] = {CMX_COMPLEX64, CMX_COMPLEX64};
  return cmx__apply_n(&cmx__vt_Eig, &q, sizeof q, s, &x, 1, outs,
                      vectors ? 2 : 1, shapes, nd, dts) == CMX_OK;
}

/* ---------------- inverses, Cholesky ---------------- */
static cmx_array inverse(const char* op, cmx_array a, bool tri, bool upper,
                         cmx_stream s) {
  cmx_array x = prep(op, a, true, false, s);
  if (!x) return NULL;
  cmx__inverse_params q = {.tri = tri, .upper = tri && upper};
  return cmx__apply(&cmx__vt_Inverse, &q, sizeof q, s, &x, 1, x->dims, x->ndim,
                    x->dtype);
}

cmx_array cmx__linalg_inv(cmx_array a, cmx_stream s) {
  return inverse("inv", a, false, false, s);
}

cmx_array cmx__linalg_tri_inv(cmx_array a, bool upper, cmx_stream s) {
  return inverse("tri_inv", a, true, upper, s);
}

cmx_array cmx__linalg_cholesky(cmx_array a, bool upper, cmx_stream s) {
  cmx_array x = prep("cholesky", a, true, false, s);
  if (!x) return NULL;
  cmx__uplo_params q = {.upper = upper};
  return cmx__apply(&cmx__vt_Cholesky, &q, sizeof q, s, &x, 1, x->dims, x->ndim,
                    x->dtype);
}

/* ---------------- solves ---------------- */
/* Promotes a and b, makes b (..., N, K) (a vector b of 1 dim gets K = 1),
 * broadcasts the batch axes and applies vt. */
static cmx_array solve_like(const char* op, const cmx_primitive_vtable* vt,
                            const void* q, size_t qs, cmx_array a, cmx_array b,
                            cmx_stream s) {
  if (!CMX__ARGS(op, a, b)) return NULL;
  cmx_array ab[2] = {a, b};
  cmx_dtype dt = cmx__result_type(ab, 2);
  if (dt != CMX_FLOAT32 && dt != CMX_FLOAT64)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::%s] Input arrays must promote to float32 or "
                     "float64. Received arrays with type %s and %s.",
                     op, cmx_dtype_name(a->dtype), cmx_dtype_name(b->dtype));
  if (!check_matrix(op, a, true)) return NULL;
  bool vec = b->ndim == 1;
  cmx_array b2 = vec ? cmx__expand_dims(b, (int[]){1}, 1, s) : b;
  if (!b2) return NULL;
  int64_t n = cols(a);
  if (b2->ndim < 2 || rows(b2) != n)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[linalg::%s] Expected b of shape (..., %lld) or (..., "
                     "%lld, K) to match a of shape (..., %lld, %lld).",
                     op, (long long)n, (long long)n, (long long)n,
                     (long long)n);
  int64_t batch[CMX_MAX_NDIM];
  int nb;
  if (!cmx__broadcast_shape(op, a->dims, a->ndim - 2, b2->dims, b2->ndim - 2,
                            batch, &nb))
    return NULL;
  if (nb + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[linalg::%s] too many dimensions.", op);
  int64_t sa[CMX_MAX_NDIM], sb[CMX_MAX_NDIM];
  memcpy(sa, batch, (size_t)nb * sizeof *sa);
  memcpy(sb, batch, (size_t)nb * sizeof *sb);
  sa[nb] = sa[nb + 1] = n;
  sb[nb] = n, sb[nb + 1] = cols(b2);
  cmx_array x[2] = {
      cmx__contiguous(cmx__broadcast_to(cmx__as_dtype(a, dt, s), sa, nb + 2, s),
                      false, s),
      cmx__contiguous(
          cmx__broadcast_to(cmx__as_dtype(b2, dt, s), sb, nb + 2, s), false,
          s)};
  if (!x[0] || !x[1]) return NULL;
  cmx_array r = cmx__apply(vt, q, qs, s, x, 2, sb, nb + 2, dt);
  return vec ? cmx__squeeze(r, (int[]){-1}, 1, s) : r;
}

cmx_array cmx__linalg_solve(cmx_array a, cmx_array b, cmx_stream s) {
  return solve_like("solve", &cmx__vt_Solve, NULL, 0, a, b, s);
}

cmx_array cmx__linalg_solve_triangular(cmx_array a, cmx_array b, bool upper,
                                       cmx_stream s) {
  cmx__uplo_params q = {.upper = upper};
  return solve_like("solve_triangular", &cmx__vt_SolveTriangular, &q, sizeof q,
                    a, b, s);
}

/* ---------------- public wrappers ---------------- */
static cmx_status multi(size_t mark, bool ok, cmx_array* outs, int n) {
  return cmx__scope_exit_multi(mark, ok, outs, n);
}

/* Gives v to *dst, or releases it when the caller did not ask for it. */
static void hand(cmx_array* dst, cmx_array v) {
  if (dst)
    *dst = v;
  else if (v)
    cmx_array_release(v);
}

#define MULTI_BEGIN(outs, n)                          \
  for (int i_ = 0; i_ < (n); i_++) (outs)[i_] = NULL; \
  size_t mark = cmx__scope_enter();                   \
  if (mark == 0) cmx__error_reset_pending()
#define CHECK_OUT(name, p)                                \
  if (!(p))                                               \
  return cmx__error(CMX_ERR_VALUE, "[linalg::" name       \
                                   "] output pointer is " \
                                   "NULL")

cmx_status cmx_linalg_qr(cmx_array* q, cmx_array* r, cmx_array a,
                         cmx_stream s) {
  cmx_array o[2];
  MULTI_BEGIN(o, 2);
  cmx_status st = multi(mark, cmx__linalg_qr(o, a, s), o, 2);
  hand(q, o[0]);
  hand(r, o[1]);
  return st;
}

cmx_status cmx_linalg_svd(cmx_array* outs, int* nout, cmx_array a,
                          bool compute_uv, cmx_stream s) {
  CHECK_OUT("svd", outs);
  MULTI_BEGIN(outs, compute_uv ? 3 : 1);
  int n = compute_uv ? 3 : 1;
  if (nout) *nout = n;
  return multi(mark, cmx__linalg_svd(outs, a, compute_uv, s), outs, n);
}

cmx_status cmx_linalg_inv(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "linalg::inv", cmx__linalg_inv(a, s));
}
cmx_status cmx_linalg_tri_inv(cmx_array* out, cmx_array a, bool upper,
                              cmx_stream s) {
  CMX__PUBLIC(out, "linalg::tri_inv", cmx__linalg_tri_inv(a, upper, s));
}
cmx_status cmx_linalg_cholesky(cmx_array* out, cmx_array a, bool upper,
                               cmx_stream s) {
  CMX__PUBLIC(out, "linalg::cholesky", cmx__linalg_cholesky(a, upper, s));
}

static bool parse_uplo(const char* op, const char* uplo, bool* upper) {
  if (!uplo || strcmp(uplo, "L") == 0) return (*upper = false), true;
  if (strcmp(uplo, "U") == 0) return (*upper = true), true;
  cmx__error(CMX_ERR_VALUE, "[linalg::%s] UPLO must be 'L' or 'U'.", op);
  return false;
}

cmx_status cmx_linalg_eigh(cmx_array* w, cmx_array* v, cmx_array a,
                           const char* uplo, cmx_stream s) {
  cmx_array o[2];
  MULTI_BEGIN(o, 2);
  bool upper = false;
  bool ok = parse_uplo("eigh", uplo, &upper) &&
            cmx__linalg_eigh(o, a, upper, true, "eigh", s);
  cmx_status st = multi(mark, ok, o, 2);
  hand(w, o[0]);
  hand(v, o[1]);
  return st;
}

cmx_status cmx_linalg_eigvalsh(cmx_array* w, cmx_array a, const char* uplo,
                               cmx_stream s) {
  CHECK_OUT("eigvalsh", w);
  MULTI_BEGIN(w, 1);
  bool upper = false;
  bool ok = parse_uplo("eigvalsh", uplo, &upper) &&
            cmx__linalg_eigh(w, a, upper, false, "eigvalsh", s);
  return multi(mark, ok, w, 1);
}

cmx_status cmx_linalg_eig(cmx_array* w, cmx_array* v, cmx_array a,
                          cmx_stream s) {
  cmx_array o[2];
  MULTI_BEGIN(o, 2);
  cmx_status st = multi(mark, cmx__linalg_eig(o, a, true, "eig", s), o, 2);
  hand(w, o[0]);
  hand(v, o[1]);
  return st;
}

cmx_status cmx_linalg_eigvals(cmx_array* w, cmx_array a, cmx_stream s) {
  CHECK_OUT("eigvals", w);
  MULTI_BEGIN(w, 1);
  return multi(mark, cmx__linalg_eig(w, a, false, "eigvals", s), w, 1);
}

cmx_status cmx_linalg_lu(cmx_array* p, cmx_array* l, cmx_array* u, cmx_array a,
                         cmx_stream s) {
  cmx_array o[3];
  MULTI_BEGIN(o, 3);
  cmx_status st = multi(mark, cmx__linalg_lu(o, a, s), o, 3);
  hand(p, o[0]);
  hand(l, o[1]);
  hand(u, o[2]);
  return st;
}

cmx_status cmx_linalg_lu_factor(cmx_array* lu, cmx_array* pivots, cmx_array a,
                                cmx_stream s) {
  cmx_array o[3];
  MULTI_BEGIN(o, 3);
  cmx_status st = multi(mark, cmx__linalg_luf(o, a, "lu_factor", s), o, 3);
  hand(NULL, o[2]);
  hand(lu, o[0]);
  hand(pivots, o[1]);
  return st;
}

cmx_status cmx_linalg_solve(cmx_array* out, cmx_array a, cmx_array b,
                            cmx_stream s) {
  CMX__PUBLIC(out, "linalg::solve", cmx__linalg_solve(a, b, s));
}
cmx_status cmx_linalg_solve_triangular(cmx_array* out, cmx_array a, cmx_array b,
                                       bool upper, cmx_stream s) {
  CMX__PUBLIC(out, "linalg::solve_triangular",
              cmx__linalg_solve_triangular(a, b, upper, s));
}
