/* Transform rules of the factorizations (primitives/linalg.h). Notation:
 * A the input, g a cotangent, d a tangent, X^T = mT(X), sym(X) = (X +
 * X^T) / 2, F the matrix 1 / (e_j - e_i) off the diagonal (0 on it) for
 * eigen- or squared singular values e.
 *
 * - Inverse (X = A^-1): dX = -X dA X; gA = -X^T g X^T, masked to the
 *   triangle read for tri.
 * - Solve (A X = B): dX = A^-1 (dB - dA X); gB = A^-T g, gA = -gB X^T.
 *   SolveTriangular likewise with dA, gA masked to the triangle.
 * - Cholesky (A = L L^T; symmetric convention, as JAX and PyTorch): with
 *   Phi(X) = tril(X) with the diagonal halved, dL = L Phi(L^-1 sym(dA)
 *   L^-T) and gA = sym(L^-T Phi(L^T g) L^-1). upper: U = L^T.
 * - Eigh (symmetric convention): P = V^T sym(dA) V; dw = diag(P),
 *   dV = V (F o P); gA = sym(V (diag(gw) + F o (V^T gV)) V^T).
 * - SVD: values only (any shape): dS = diag(U_K^T dA V_K), gA = U_K diag(gS)
 *   V_K^T. With vectors (square matrices): P = U^T dA V, dS = diag(P),
 *   dU = U (F o (P S + S P^T)), dV = V (F o (S P + P^T S)); gA = U [diag(gS)
 *   + (F o (U^T gU - gU^T U)) S + S (F o (V^T gV - gV^T V))] V^T. Other
 *   shapes report that they are not differentiable yet.
 * - QRF (rows >= columns): C = dA R^-1, X = Q^T C, W = triu(X) +
 *   tril(X, -1)^T; dR = W R, dQ = C - Q W. gA = (gQ + Q copyltu(M)) R^-T
 *   with M = R gR^T - gQ^T Q and copyltu(M) = tril(M) + tril(M, -1)^T.
 * - LUF (square): A = (L U)[rows], so with perm = argsort(rows), A[perm] =
 *   L U; X = L^-1 dA[perm] U^-1, d(lu) = L tril(X, -1) + triu(X) U; the
 *   vjp is its transpose: gA = (L^-T (tril(L^T gL, -1) + triu(gU U^T))
 *   U^-T)[rows] with gL, gU the strict lower and upper parts of g. pivots
 *   and rows have no derivative.
 * - Eig: no derivative (an error says so).
 * - CovSqrt (random.multivariate_normal's X = A^(1/2) of a symmetric PSD A,
 *   symmetric convention): with sym(A) = V diag(l) V^T and s = sqrt(max(l,
 *   0)), X dX + dX X = dA gives dX = V (G o (V^T sym(dA) V)) V^T with G_ij
 *   = 1 / (s_i + s_j); the map is self-adjoint, so gA = the same of g
 *   (inf/NaN where two eigenvalues are 0).
 * - vmap (all): batch axes to the front, the primitive again.
 * Eigen- and singular vector derivatives are inf/NaN where values repeat.
 */
#include <string.h>

#include "ops/linalg_internal.h"
#include "primitives/linalg.h"
#include "transforms/rules.h"

#define S_ cmx__rule_stream(p)

static cmx_array mm(cmx_array a, cmx_array b, cmx_stream s) {
  return cmx__matmul(a, b, s);
}
static cmx_array sym(cmx_array x, cmx_stream s) {
  if (!x) return NULL;
  return cmx__multiply(cmx__add(x, cmx__mT(x, s), s),
                       cmx__scalar(0.5, x->dtype), s);
}
static cmx_array tri(cmx_array x, bool upper, int k, cmx_stream s) {
  return upper ? cmx__triu(x, k, s) : cmx__tril(x, k, s);
}
static cmx_array diag_of(cmx_array x, cmx_stream s) {
  return x ? cmx__diagonal(x, 0, -2, -1, s) : NULL;
}
static cmx_array diag_mat(cmx_array v, cmx_stream s) {
  if (!v) return NULL;
  int64_t n = v->dims[v->ndim - 1];
  return cmx__diag_embed(v, n, n, 0, s);
}
/* x / (e_j - e_i) off the diagonal, 0 on it. */
static cmx_array f_mul(cmx_array x, cmx_array e, cmx_stream s) {
  if (!x || !e) return NULL;
  int64_t n = e->dims[e->ndim - 1];
  cmx_array diff = cmx__subtract(cmx__expand_dims(e, (int[]){-2}, 1, s),
                                 cmx__expand_dims(e, (int[]){-1}, 1, s), s);
  cmx_array eye = cmx__astype(cmx__eye(n, n, 0, CMX_BOOL, s), CMX_BOOL, s);
  cmx_array one = cmx__scalar(1, e->dtype), zero = cmx__scalar(0, e->dtype);
  cmx_array f = cmx__where(
      eye, zero, cmx__reciprocal(cmx__where(eye, one, diff, s), s), s);
  return cmx__multiply(x, f, s);
}
/* x A^-1 for triangular A: (A^-T x^T)^T. */
static cmx_array right_solve(cmx_array x, cmx_array a, bool upper,
                             cmx_stream s) {
  return cmx__mT(
      cmx__linalg_solve_triangular(cmx__mT(a, s), cmx__mT(x, s), !upper, s), s);
}
static cmx_status done(cmx_array* out, int n) {
  for (int i = 0; i < n; i++)
    if (!out[i]) {
      for (int j = 0; j < n; j++)
        if (out[j]) cmx_array_release(out[j]), out[j] = NULL;
      return cmx_last_status();
    }
  return CMX_OK;
}
static cmx_status keep1(cmx_array* out, cmx_array v) {
  out[0] = cmx__rule_keep(v);
  return out[0] ? CMX_OK : cmx_last_status();
}
static cmx_status not_diff(const char* rule, const char* what) {
  return cmx__error(CMX_ERR_NOT_IMPLEMENTED, "[%s] %s is not differentiable%s.",
                    rule, what, "");
}

/* ---------------- vmap ---------------- */
/* The dtype of output i of nout (for outputs the traced graph dropped). */
static cmx_dtype out_dtype(const cmx_primitive_vtable* vt, int i, int nout,
                           cmx_array a) {
  if (vt == &cmx__vt_Eig) return CMX_COMPLEX64;
  if (vt == &cmx__vt_LUF && i > 0) return CMX_UINT32;
  /* complex64 SVD's singular values and Eigh's eigenvalues are real */
  bool values = (vt == &cmx__vt_SVD && i == (nout == 3 ? 1 : 0)) ||
                (vt == &cmx__vt_Eigh && i == 0);
  if (values && a->dtype == CMX_COMPLEX64) return CMX_FLOAT32;
  return a->dtype;
}

CMX__RULE_VMAP(cmx__vmap_linalg) {
  cmx_stream s = S_;
  int64_t B = cmx__batch_size(inputs, axes, nin);
  cmx_array in[2];
  for (int i = 0; i < nin && i < 2; i++)
    in[i] =
        cmx__contiguous(cmx__batch_front(inputs[i], axes[i], B, s), false, s);
  for (int i = 0; i < nin; i++)
    if (!in[i]) return cmx_last_status();
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_shape sh[3];
  cmx_status st = vt->output_shapes(p, in, nin, sh, nout);
  if (st != CMX_OK) return st;
  const int64_t* shapes[3];
  int nd[3];
  cmx_dtype dts[3];
  for (int i = 0; i < nout; i++)
    shapes[i] = sh[i].dims, nd[i] = sh[i].ndim,
    dts[i] = outputs[i] ? outputs[i]->dtype : out_dtype(vt, i, nout, in[0]);
  cmx_array r[3];
  st = cmx__apply_n(vt, cmx_primitive_params(p), cmx_primitive_params_size(p),
                    s, in, nin, r, nout, shapes, nd, dts);
  if (st != CMX_OK) return st;
  for (int i = 0; i < nout; i++) {
    out[i] = cmx__rule_keep(r[i]);
    out_axes[i] = 0;
  }
  return done(out, nout);
}

/* ---------------- Inverse ---------------- */
CMX__RULE_JVP(cmx__jvp_inverse) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  cmx_stream s = S_;
  const cmx__inverse_params* q = cmx_primitive_params(p);
  cmx_array x = outputs[0] ? outputs[0] : cmx__linalg_inv(primals[0], s);
  cmx_array da = q->tri ? tri(tangents[0], q->upper, 0, s) : tangents[0];
  return keep1(out, cmx__negative(mm(mm(x, da, s), x, s), s));
}

CMX__RULE_VJP(cmx__vjp_inverse) {
  (void)primals, (void)nin, (void)nout, (void)argnums;
  if (!nargs) return CMX_OK;
  cmx_stream s = S_;
  const cmx__inverse_params* q = cmx_primitive_params(p);
  cmx_array xt = cmx__mT(outputs[0], s);
  cmx_array g = cmx__negative(mm(mm(xt, cotangents[0], s), xt, s), s);
  return keep1(out, q->tri ? tri(g, q->upper, 0, s) : g);
}

/* ---------------- Solve, SolveTriangular ---------------- */
static cmx_status solve_jvp(const cmx_primitive* p, const cmx_array* primals,
                            const cmx_array* tangents, const int* argnums,
                            int nargs, cmx_array x, cmx_array* out, int tr,
                            bool upper) {
  cmx_stream s = S_;
  cmx_array rhs = NULL;
  for (int k = 0; k < nargs; k++) {
    cmx_array t = tangents[k];
    if (argnums[k] == 0) {
      cmx_array da = tr ? tri(t, upper, 0, s) : t;
      t = cmx__negative(mm(da, x, s), s);
    }
    rhs = rhs ? cmx__add(rhs, t, s) : t;
  }
  cmx_array r = tr ? cmx__linalg_solve_triangular(primals[0], rhs, upper, s)
                   : cmx__linalg_solve(primals[0], rhs, s);
  return keep1(out, r);
}

static cmx_status solve_vjp(const cmx_primitive* p, const cmx_array* primals,
                            cmx_array g, const int* argnums, int nargs,
                            cmx_array x, cmx_array* out, int tr, bool upper) {
  cmx_stream s = S_;
  cmx_array at = cmx__mT(primals[0], s);
  cmx_array gb = tr ? cmx__linalg_solve_triangular(at, g, !upper, s)
                    : cmx__linalg_solve(at, g, s);
  for (int k = 0; k < nargs; k++) {
    cmx_array r = gb;
    if (argnums[k] == 0) {
      r = cmx__negative(mm(gb, cmx__mT(x, s), s), s);
      if (tr) r = tri(r, upper, 0, s);
    }
    out[k] = cmx__rule_keep(r);
  }
  return done(out, nargs);
}

CMX__RULE_JVP(cmx__jvp_solve) {
  (void)nin, (void)nout;
  return solve_jvp(p, primals, tangents, argnums, nargs, outputs[0], out, 0, 0);
}
CMX__RULE_VJP(cmx__vjp_solve) {
  (void)nin, (void)nout;
  return solve_vjp(p, primals, cotangents[0], argnums, nargs, outputs[0], out,
                   0, 0);
}
CMX__RULE_JVP(cmx__jvp_solve_triangular) {
  (void)nin, (void)nout;
  bool up = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  return solve_jvp(p, primals, tangents, argnums, nargs, outputs[0], out, 1,
                   up);
}
CMX__RULE_VJP(cmx__vjp_solve_triangular) {
  (void)nin, (void)nout;
  bool up = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  return solve_vjp(p, primals, cotangents[0], argnums, nargs, outputs[0], out,
                   1, up);
}

/* ---------------- Cholesky ---------------- */
/* tril(x) with its diagonal halved. */
static cmx_array phi(cmx_array x, cmx_stream s) {
  if (!x) return NULL;
  return cmx__add(
      cmx__tril(x, -1, s),
      cmx__multiply(diag_mat(diag_of(x, s), s), cmx__scalar(0.5, x->dtype), s),
      s);
}

CMX__RULE_JVP(cmx__jvp_cholesky) {
  (void)primals, (void)nin, (void)argnums, (void)nargs, (void)nout;
  cmx_stream s = S_;
  bool up = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  cmx_array l = up ? cmx__mT(outputs[0], s) : outputs[0];
  cmx_array z = cmx__linalg_solve_triangular(l, sym(tangents[0], s), false, s);
  cmx_array w = cmx__linalg_solve_triangular(l, cmx__mT(z, s), false, s);
  cmx_array dl = mm(l, phi(w, s), s);
  return keep1(out, up ? cmx__mT(dl, s) : dl);
}

CMX__RULE_VJP(cmx__vjp_cholesky) {
  (void)primals, (void)nin, (void)nout, (void)argnums;
  if (!nargs) return CMX_OK;
  cmx_stream s = S_;
  bool up = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  cmx_array l = up ? cmx__mT(outputs[0], s) : outputs[0];
  cmx_array gl = up ? cmx__mT(cotangents[0], s) : cotangents[0];
  cmx_array lt = cmx__mT(l, s);
  cmx_array y =
      cmx__linalg_solve_triangular(lt, phi(mm(lt, gl, s), s), true, s);
  cmx_array z = cmx__linalg_solve_triangular(lt, cmx__mT(y, s), true, s);
  return keep1(out, sym(z, s));
}

/* SVD and Eigh of complex64 input have no rules (MLX has no gradient for
 * them either): a clear error rather than the real formulas' wrong one. */
static bool real_input(const cmx_array* primals, const char* rule,
                       const char* what) {
  if (!cmx_dtype_is_complex(primals[0]->dtype)) return true;
  cmx__error(CMX_ERR_VALUE,
             "[%s] Not implemented for %s of complex64 input (only float32 "
             "and float64 are differentiable).",
             rule, what);
  return false;
}

/* ---------------- Eigh ---------------- */
/* {w, V} of the primal: the outputs, or Eigh again with vectors. */
static bool eigh_parts(const cmx_primitive* p, const cmx_array* primals,
                       const cmx_array* outputs, int nout, cmx_array* wv) {
  const cmx__eigh_params* q = cmx_primitive_params(p);
  if (nout == 2 && outputs[0] && outputs[1]) {
    wv[0] = outputs[0], wv[1] = outputs[1];
    return true;
  }
  return cmx__linalg_eigh(wv, primals[0], q->upper, true, "eigh", S_);
}

CMX__RULE_JVP(cmx__jvp_eigh) {
  (void)nin, (void)argnums, (void)nargs;
  cmx_stream s = S_;
  cmx_array wv[2];
  if (!real_input(primals, "jvp", "eigh")) return cmx_last_status();
  if (!eigh_parts(p, primals, outputs, nout, wv)) return cmx_last_status();
  cmx_array v = wv[1];
  cmx_array pm = mm(mm(cmx__mT(v, s), sym(tangents[0], s), s), v, s);
  out[0] = cmx__rule_keep(diag_of(pm, s));
  if (nout == 2) out[1] = cmx__rule_keep(mm(v, f_mul(pm, wv[0], s), s));
  return done(out, nout);
}

CMX__RULE_VJP(cmx__vjp_eigh) {
  (void)nin, (void)argnums;
  if (!nargs) return CMX_OK;
  cmx_stream s = S_;
  cmx_array wv[2];
  if (!real_input(primals, "vjp", "eigh")) return cmx_last_status();
  if (!eigh_parts(p, primals, outputs, nout, wv)) return cmx_last_status();
  cmx_array v = wv[1];
  cmx_array inner = diag_mat(cotangents[0], s);
  if (nout == 2)
    inner = cmx__add(inner,
                     f_mul(mm(cmx__mT(v, s), cotangents[1], s), wv[0], s), s);
  return keep1(out, sym(mm(mm(v, inner, s), cmx__mT(v, s), s), s));
}

/* ---------------- SVD ---------------- */
/* {U, S, Vt} of the primal. */
static bool svd_parts(const cmx_primitive* p, const cmx_array* primals,
                      const cmx_array* outputs, int nout, cmx_array* usv) {
  if (nout == 3 && outputs[0] && outputs[1] && outputs[2]) {
    memcpy(usv, outputs, 3 * sizeof *usv);
    return true;
  }
  return cmx__linalg_svd(usv, primals[0], true, S_);
}

/* U[..., :, :k] and Vt[..., :k, :] as U_K, V_K^T. */
static void svd_reduced(cmx_array* usv, cmx_stream s, cmx_array* uk,
                        cmx_array* vtk) {
  cmx_array u = usv[0], vt = usv[2];
  int64_t k = usv[1]->dims[usv[1]->ndim - 1];
  int64_t st[CMX_MAX_NDIM], su[CMX_MAX_NDIM], sv[CMX_MAX_NDIM],
      one[CMX_MAX_NDIM];
  for (int d = 0; d < u->ndim; d++)
    st[d] = 0, su[d] = u->dims[d], sv[d] = vt->dims[d], one[d] = 1;
  su[u->ndim - 1] = k;
  sv[vt->ndim - 2] = k;
  *uk = cmx__slice(u, st, su, one, s);
  *vtk = cmx__slice(vt, st, sv, one, s);
}

static bool svd_square(const cmx_array* primals, const char* rule) {
  cmx_array a = primals[0];
  if (a->dims[a->ndim - 1] == a->dims[a->ndim - 2]) return true;
  cmx__error(CMX_ERR_NOT_IMPLEMENTED,
             "[%s] The singular vectors of non-square matrices are not "
             "differentiable yet (use compute_uv=False for the values).",
             rule);
  return false;
}

CMX__RULE_JVP(cmx__jvp_svd) {
  (void)nin, (void)argnums, (void)nargs;
  cmx_stream s = S_;
  cmx_array usv[3], uk, vtk;
  if (!real_input(primals, "jvp", "svd")) return cmx_last_status();
  if (nout == 3 && !svd_square(primals, "jvp")) return cmx_last_status();
  if (!svd_parts(p, primals, outputs, nout, usv)) return cmx_last_status();
  svd_reduced(usv, s, &uk, &vtk);
  cmx_array pm = mm(mm(cmx__mT(uk, s), tangents[0], s), cmx__mT(vtk, s), s);
  cmx_array ds = diag_of(pm, s);
  if (nout == 1) return keep1(out, ds);
  cmx_array sm = diag_mat(usv[1], s), s2 = cmx__square(usv[1], s);
  cmx_array du = mm(
      usv[0],
      f_mul(cmx__add(mm(pm, sm, s), mm(sm, cmx__mT(pm, s), s), s), s2, s), s);
  cmx_array dv = mm(
      cmx__mT(usv[2], s),
      f_mul(cmx__add(mm(sm, pm, s), mm(cmx__mT(pm, s), sm, s), s), s2, s), s);
  out[0] = cmx__rule_keep(du);
  out[1] = cmx__rule_keep(ds);
  out[2] = cmx__rule_keep(cmx__mT(dv, s));
  return done(out, 3);
}

CMX__RULE_VJP(cmx__vjp_svd) {
  (void)nin, (void)argnums;
  if (!nargs) return CMX_OK;
  cmx_stream s = S_;
  cmx_array usv[3], uk, vtk;
  if (!real_input(primals, "vjp", "svd")) return cmx_last_status();
  if (nout == 3 && !svd_square(primals, "vjp")) return cmx_last_status();
  if (!svd_parts(p, primals, outputs, nout, usv)) return cmx_last_status();
  svd_reduced(usv, s, &uk, &vtk);
  cmx_array gs = cotangents[nout == 3 ? 1 : 0];
  cmx_array inner = diag_mat(gs, s);
  if (nout == 3) {
    cmx_array u = usv[0], v = cmx__mT(usv[2], s), sm = diag_mat(usv[1], s);
    cmx_array s2 = cmx__square(usv[1], s);
    cmx_array x = mm(cmx__mT(u, s), cotangents[0], s);
    cmx_array gv = cmx__mT(cotangents[2], s);
    cmx_array y = mm(cmx__mT(v, s), gv, s);
    inner = cmx__add(
        inner,
        cmx__add(mm(f_mul(cmx__subtract(x, cmx__mT(x, s), s), s2, s), sm, s),
                 mm(sm, f_mul(cmx__subtract(y, cmx__mT(y, s), s), s2, s), s),
                 s),
        s);
  }
  return keep1(out, mm(mm(uk, inner, s), vtk, s));
}

/* ---------------- QRF ---------------- */
static bool qr_tall(const cmx_array* primals, const char* rule) {
  cmx_array a = primals[0];
  if (a->dims[a->ndim - 2] >= a->dims[a->ndim - 1]) return true;
  cmx__error(CMX_ERR_NOT_IMPLEMENTED,
             "[%s] qr is differentiable for matrices with at least as many "
             "rows as columns only.",
             rule);
  return false;
}

CMX__RULE_JVP(cmx__jvp_qrf) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  if (!qr_tall(primals, "jvp")) return cmx_last_status();
  cmx_stream s = S_;
  cmx_array qr[2] = {outputs[0], outputs[1]};
  if ((!qr[0] || !qr[1]) && !cmx__linalg_qr(qr, primals[0], s))
    return cmx_last_status();
  cmx_array c = right_solve(tangents[0], qr[1], true, s);
  cmx_array x = mm(cmx__mT(qr[0], s), c, s);
  cmx_array w =
      cmx__add(cmx__triu(x, 0, s), cmx__mT(cmx__tril(x, -1, s), s), s);
  out[0] = cmx__rule_keep(cmx__subtract(c, mm(qr[0], w, s), s));
  out[1] = cmx__rule_keep(mm(w, qr[1], s));
  return done(out, 2);
}

CMX__RULE_VJP(cmx__vjp_qrf) {
  (void)nin, (void)argnums, (void)nout;
  if (!nargs) return CMX_OK;
  if (!qr_tall(primals, "vjp")) return cmx_last_status();
  cmx_stream s = S_;
  cmx_array qr[2] = {outputs[0], outputs[1]};
  if ((!qr[0] || !qr[1]) && !cmx__linalg_qr(qr, primals[0], s))
    return cmx_last_status();
  cmx_array gq = cotangents[0], gr = cotangents[1];
  cmx_array m = cmx__subtract(mm(qr[1], cmx__mT(gr, s), s),
                              mm(cmx__mT(gq, s), qr[0], s), s);
  cmx_array c =
      cmx__add(cmx__tril(m, 0, s), cmx__mT(cmx__tril(m, -1, s), s), s);
  cmx_array y = cmx__add(gq, mm(qr[0], c, s), s);
  /* y R^-T = (R^-1 y^T)^T */
  return keep1(
      out,
      cmx__mT(cmx__linalg_solve_triangular(qr[1], cmx__mT(y, s), true, s), s));
}

/* ---------------- LUF ---------------- */
typedef struct {
  cmx_array l, u, perm; /* perm: LUF's rows */
} lu_parts;

static bool lu_split(const cmx_primitive* p, const cmx_array* primals,
                     const cmx_array* outputs, const char* rule, lu_parts* o) {
  cmx_stream s = S_;
  cmx_array a = primals[0];
  int64_t n = a->dims[a->ndim - 1];
  if (a->dims[a->ndim - 2] != n) {
    cmx__error(CMX_ERR_NOT_IMPLEMENTED,
               "[%s] lu is differentiable for square matrices only.", rule);
    return false;
  }
  cmx_array f[3] = {outputs[0], outputs[1], outputs[2]};
  if ((!f[0] || !f[2]) && !cmx__linalg_luf(f, a, "lu", s)) return false;
  o->l = cmx__add(cmx__tril(f[0], -1, s), cmx__eye(n, n, 0, a->dtype, s), s);
  o->u = cmx__triu(f[0], 0, s);
  o->perm = f[2];
  return o->l && o->u;
}

/* The rows of x (..., N, N) taken at idx (..., N). */
static cmx_array take_rows(cmx_array x, cmx_array idx, cmx_stream s) {
  if (!x || !idx) return NULL;
  cmx_array i2 = cmx__broadcast_to(cmx__expand_dims(idx, (int[]){-1}, 1, s),
                                   x->dims, x->ndim, s);
  int ax = -2;
  return cmx__take_along_axis(x, i2, &ax, s);
}

CMX__RULE_JVP(cmx__jvp_luf) {
  (void)nin, (void)argnums, (void)nargs;
  cmx_stream s = S_;
  lu_parts f;
  if (!lu_split(p, primals, outputs, "jvp", &f)) return cmx_last_status();
  int ax = -1;
  cmx_array z = cmx__linalg_solve_triangular(
      f.l, take_rows(tangents[0], cmx__argsort(f.perm, &ax, s), s), false, s);
  cmx_array x = right_solve(z, f.u, true, s);
  out[0] = cmx__rule_keep(cmx__add(mm(f.l, cmx__tril(x, -1, s), s),
                                   mm(cmx__triu(x, 0, s), f.u, s), s));
  for (int i = 1; i < nout; i++) out[i] = NULL;
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_luf) {
  (void)nin, (void)argnums, (void)nout;
  if (!nargs) return CMX_OK;
  cmx_stream s = S_;
  lu_parts f;
  if (!lu_split(p, primals, outputs, "vjp", &f)) return cmx_last_status();
  cmx_array g = cotangents[0];
  cmx_array xb =
      cmx__add(cmx__tril(mm(cmx__mT(f.l, s), cmx__tril(g, -1, s), s), -1, s),
               cmx__triu(mm(cmx__triu(g, 0, s), cmx__mT(f.u, s), s), 0, s), s);
  cmx_array y = cmx__linalg_solve_triangular(cmx__mT(f.l, s), xb, true, s);
  cmx_array gp = right_solve(y, cmx__mT(f.u, s), false, s);
  return keep1(out, take_rows(gp, f.perm, s));
}

/* ---------------- Eig ---------------- */
CMX__RULE_JVP(cmx__jvp_eig) {
  (void)p, (void)primals, (void)nin, (void)tangents, (void)argnums;
  (void)nargs, (void)outputs, (void)out, (void)nout;
  return not_diff("jvp", "eig (eigvals)");
}
CMX__RULE_VJP(cmx__vjp_eig) {
  (void)p, (void)primals, (void)nin, (void)cotangents, (void)nout;
  (void)argnums, (void)nargs, (void)outputs, (void)out;
  return not_diff("vjp", "eig (eigvals)");
}

/* ---------------- CovSqrt ---------------- */
/* V (G o (V^T sym(x) V)) V^T for the eigendecomposition of sym(a). */
static cmx_array sqrt_deriv(cmx_array a, cmx_array x, cmx_stream s) {
  cmx_array wv[2];
  if (!x || !cmx__linalg_eigh(wv, sym(a, s), false, true, "vjp", s))
    return NULL;
  cmx_array sq = cmx__sqrt(cmx__maximum(wv[0], cmx__scalar(0, a->dtype), s), s);
  cmx_array g =
      cmx__reciprocal(cmx__add(cmx__expand_dims(sq, (int[]){-1}, 1, s),
                               cmx__expand_dims(sq, (int[]){-2}, 1, s), s),
                      s);
  cmx_array v = wv[1], vt = cmx__mT(wv[1], s);
  cmx_array inner = cmx__multiply(g, mm(mm(vt, sym(x, s), s), v, s), s);
  return mm(mm(v, inner, s), vt, s);
}

CMX__RULE_JVP(cmx__jvp_cov_sqrt) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  return keep1(out, sqrt_deriv(primals[0], tangents[0], S_));
}

CMX__RULE_VJP(cmx__vjp_cov_sqrt) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  return keep1(out, sqrt_deriv(primals[0], cotangents[0], S_));
}
