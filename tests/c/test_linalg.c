/* mx.linalg through the C API: reconstruction identities of every
 * factorization in float32 and float64 (batched), errors raised at
 * evaluation (singular, not positive definite) and at construction (dtype,
 * shape), and the transform rules: vjp against central finite differences
 * and jvp against vjp (tc_check_grad, float64), vmap against a loop
 * (tc_check_vmap). */
#include "harness.h"
#include "tcheck.h"

#define S CMX_STREAM_DEFAULT

static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt,
                     uint64_t seed) {
  h_tensor t = h_random(shape, nd, dt, -1, 1, seed);
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

/* a + k I (diagonally dominant for k >= n). */
static cmx_array shift_eye(cmx_array a, double k) {
  int n = (int)cmx_array_shape(a)[cmx_array_ndim(a) - 1];
  cmx_array e = NULL, ke = NULL, kk = NULL, r = NULL;
  cmx_eye(&e, n, n, 0, cmx_array_dtype(a), S);
  cmx_array_from_double(&kk, k, cmx_array_dtype(a));
  cmx_multiply(&ke, e, kk, S);
  cmx_add(&r, a, ke, S);
  cmx_array_release(e), cmx_array_release(kk), cmx_array_release(ke);
  return r;
}

static cmx_array mm(cmx_array a, cmx_array b) {
  cmx_array r = NULL;
  cmx_matmul(&r, a, b, S);
  return r;
}
static cmx_array mt(cmx_array a) {
  cmx_array r = NULL;
  cmx_swapaxes(&r, a, -1, -2, S);
  return r;
}

/* a @ b^T (b^T released here). */
static cmx_array mm_t(cmx_array a, cmx_array b) {
  cmx_array bt = mt(b), r = mm(a, bt);
  cmx_array_release(bt);
  return r;
}

/* max |a - b| over all elements (b broadcast against a). */
static double max_diff(cmx_array a, cmx_array b) {
  cmx_array d = NULL;
  if (cmx_subtract(&d, a, b, S) != CMX_OK) return INFINITY;
  h_tensor x = h_read(d);
  double m = x.size >= 0 ? 0 : INFINITY;
  for (int64_t i = 0; i < x.size; i++)
    if (!(fabs(x.re[i]) <= m)) m = fabs(x.re[i]);
  h_free(&x);
  cmx_array_release(d);
  return m;
}

static double tol_of(cmx_dtype dt) {
  return dt == CMX_FLOAT64 ? 1e-10 : 2e-4;
}

static void test_reconstructions(void) {
  cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT64};
  for (int d = 0; d < 2; d++) {
    cmx_dtype dt = dts[d];
    double tol = tol_of(dt);
    int64_t sh[3] = {3, 5, 5};
    cmx_array a = rnd(sh, 3, dt, 10 + d), as = shift_eye(a, 5);
    /* QR */
    cmx_array q = NULL, r = NULL;
    OK(cmx_linalg_qr(&q, &r, a, S));
    cmx_array qr = mm(q, r);
    CHECK_MSG(max_diff(qr, a) < tol, "qr %s", cmx_dtype_name(dt));
    /* SVD */
    cmx_array usv[3] = {0}, sv[3] = {0};
    int n = 0;
    OK(cmx_linalg_svd(usv, &n, a, true, S));
    CHECK(n == 3);
    cmx_array se = NULL, us = NULL;
    OK(cmx_expand_dims(&se, usv[1], (int[]){-2}, 1, S));
    OK(cmx_multiply(&us, usv[0], se, S));
    cmx_array usvt = mm(us, usv[2]);
    CHECK_MSG(max_diff(usvt, a) < tol, "svd %s", cmx_dtype_name(dt));
    OK(cmx_linalg_svd(sv, &n, a, false, S));
    CHECK(n == 1 && max_diff(sv[0], usv[1]) < tol);
    /* inverse */
    cmx_array inv = NULL, eye = NULL;
    OK(cmx_linalg_inv(&inv, as, S));
    OK(cmx_eye(&eye, 5, 5, 0, dt, S));
    cmx_array ai = mm(as, inv);
    CHECK_MSG(max_diff(ai, eye) < tol, "inv %s", cmx_dtype_name(dt));
    /* Cholesky of A A^T + 5 I */
    cmx_array spd0 = mm_t(a, a), spd = shift_eye(spd0, 5), l = NULL;
    OK(cmx_linalg_cholesky(&l, spd, false, S));
    cmx_array llt = mm_t(l, l);
    CHECK_MSG(max_diff(llt, spd) < tol * 10, "cholesky %s", cmx_dtype_name(dt));
    /* eigh */
    cmx_array w = NULL, v = NULL, we = NULL, vw = NULL;
    OK(cmx_linalg_eigh(&w, &v, spd, "L", S));
    OK(cmx_expand_dims(&we, w, (int[]){-2}, 1, S));
    OK(cmx_multiply(&vw, v, we, S));
    cmx_array rec = mm_t(vw, v);
    CHECK_MSG(max_diff(rec, spd) < tol * 10, "eigh %s", cmx_dtype_name(dt));
    /* LU: a = take_along_axis(L, P[..., None], -2) @ U */
    cmx_array p = NULL, lo = NULL, up = NULL, pi = NULL, pb = NULL, lp = NULL;
    OK(cmx_linalg_lu(&p, &lo, &up, a, S));
    OK(cmx_expand_dims(&pi, p, (int[]){-1}, 1, S));
    OK(cmx_broadcast_to(&pb, pi, sh, 3, S));
    OK(cmx_take_along_axis(&lp, lo, pb, (int[]){-2}, S));
    cmx_array lu = mm(lp, up);
    CHECK_MSG(max_diff(lu, a) < tol, "lu %s", cmx_dtype_name(dt));
    /* solve */
    int64_t bs[3] = {3, 5, 2};
    cmx_array b = rnd(bs, 3, dt, 20 + d), x = NULL;
    OK(cmx_linalg_solve(&x, as, b, S));
    cmx_array ax = mm(as, x);
    CHECK_MSG(max_diff(ax, b) < tol, "solve %s", cmx_dtype_name(dt));
    cmx_array all[] = {a,   as, q,    r,   qr,  usv[0], usv[1], usv[2], sv[0],
                       se,  us, usvt, inv, eye, ai,     spd0,   spd,    l,
                       llt, w,  v,    we,  vw,  rec,    p,      lo,     up,
                       pi,  pb, lp,   lu,  b,   x,      ax};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      cmx_array_release(all[i]);
  }
}

static void test_errors(void) {
  int64_t s33[2] = {3, 3}, s34[2] = {3, 4}, s3[1] = {3};
  cmx_array z = NULL, o = NULL, r = NULL, i32 = NULL, v = NULL, neg = NULL;
  OK(cmx_zeros(&z, s33, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&o, s34, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&v, s3, 1, CMX_FLOAT32, S));
  OK(cmx_zeros(&i32, s33, 2, CMX_INT32, S));
  OK(cmx_linalg_inv(&r, z, S));
  FAILS(cmx_array_eval(r), CMX_ERR_RUNTIME, "[linalg::inv] Singular");
  cmx_array_release(r);
  OK(cmx_eye(&neg, 3, 3, 0, CMX_FLOAT32, S));
  OK(cmx_negative(&r, neg, S));
  cmx_array_release(neg);
  neg = r, r = NULL;
  OK(cmx_linalg_cholesky(&r, neg, false, S));
  FAILS(cmx_array_eval(r), CMX_ERR_RUNTIME, "not positive definite");
  cmx_array_release(r), r = NULL;
  FAILS(cmx_linalg_inv(&r, o, S), CMX_ERR_VALUE, "square");
  FAILS(cmx_linalg_inv(&r, v, S), CMX_ERR_VALUE, ">= 2 dimensions");
  FAILS(cmx_linalg_qr(&r, &r, i32, S), CMX_ERR_VALUE,
        "[linalg::qr] Arrays must have type float32 or float64");
  FAILS(cmx_linalg_eigh(&r, &r, z, "Q", S), CMX_ERR_VALUE, "UPLO");
  int64_t s4[1] = {4};
  cmx_array v4 = NULL;
  OK(cmx_ones(&v4, s4, 1, CMX_FLOAT32, S));
  FAILS(cmx_linalg_solve(&r, z, v4, S), CMX_ERR_VALUE, "[linalg::solve]");
  cmx_array_release(v4);
  CHECK(r == NULL);
  cmx_array all[] = {z, o, i32, v, neg};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cmx_array_release(all[i]);
}

/* ---------------- transforms ---------------- */
static cmx_status t_inv(void* c, const cmx_array* in, int n, cmx_array* o,
                        int* no) {
  (void)c, (void)n;
  *no = 1;
  cmx_array a = shift_eye(in[0], 4);
  cmx_status st = cmx_linalg_inv(&o[0], a, S);
  cmx_array_release(a);
  return st;
}
static cmx_status t_solve(void* c, const cmx_array* in, int n, cmx_array* o,
                          int* no) {
  (void)c, (void)n;
  *no = 1;
  cmx_array a = shift_eye(in[0], 4);
  cmx_status st = cmx_linalg_solve(&o[0], a, in[1], S);
  cmx_array_release(a);
  return st;
}
static cmx_status t_solve_tri(void* c, const cmx_array* in, int n, cmx_array* o,
                              int* no) {
  (void)n;
  *no = 1;
  cmx_array a = shift_eye(in[0], 4);
  cmx_status st = cmx_linalg_solve_triangular(&o[0], a, in[1], c != NULL, S);
  cmx_array_release(a);
  return st;
}
/* cholesky(x x^T + 4 I): a symmetric input by construction. */
static cmx_status t_chol(void* c, const cmx_array* in, int n, cmx_array* o,
                         int* no) {
  (void)n;
  *no = 1;
  cmx_array xt = mt(in[0]), xx = mm(in[0], xt), a = shift_eye(xx, 4);
  cmx_status st = cmx_linalg_cholesky(&o[0], a, c != NULL, S);
  cmx_array_release(xt), cmx_array_release(xx), cmx_array_release(a);
  return st;
}
static cmx_status t_qr(void* c, const cmx_array* in, int n, cmx_array* o,
                       int* no) {
  (void)c, (void)n;
  *no = 2;
  return cmx_linalg_qr(&o[0], &o[1], in[0], S);
}
/* eigh of x + x^T: values and the sign-free V diag(1..n) V^T. */
static cmx_status t_eigh(void* c, const cmx_array* in, int n, cmx_array* o,
                         int* no) {
  (void)c, (void)n;
  *no = 2;
  cmx_array xt = mt(in[0]), a = NULL, v = NULL, k = NULL, vk = NULL;
  cmx_add(&a, in[0], xt, S);
  int64_t nn = cmx_array_shape(a)[cmx_array_ndim(a) - 1];
  cmx_status st = cmx_linalg_eigh(&o[0], &v, a, "L", S);
  if (st == CMX_OK)
    st = cmx_arange(&k, 1, (double)nn + 1, 1, cmx_array_dtype(a), S);
  if (st == CMX_OK) st = cmx_multiply(&vk, v, k, S);
  cmx_array vt = mt(v);
  if (st == CMX_OK) st = cmx_matmul(&o[1], vk, vt, S);
  cmx_array all[] = {xt, a, v, k, vk, vt};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cmx_array_release(all[i]);
  return st;
}
/* svd: singular values and the sign-free U diag(1..n) U^T. */
static cmx_status t_svd(void* c, const cmx_array* in, int n, cmx_array* o,
                        int* no) {
  (void)c, (void)n;
  cmx_array usv[3] = {0}, k = NULL, uk = NULL, ut = NULL;
  int m = 0;
  *no = 2;
  int64_t nn = cmx_array_shape(in[0])[cmx_array_ndim(in[0]) - 1];
  cmx_status st = cmx_linalg_svd(usv, &m, in[0], true, S);
  if (st == CMX_OK) st = cmx_arange(&k, 1, (double)nn + 1, 1, CMX_FLOAT64, S);
  if (st == CMX_OK) st = cmx_multiply(&uk, usv[0], k, S);
  ut = mt(usv[0]);
  if (st == CMX_OK) st = cmx_matmul(&o[1], uk, ut, S);
  o[0] = usv[1], usv[1] = NULL;
  cmx_array all[] = {usv[0], usv[2], k, uk, ut};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cmx_array_release(all[i]);
  return st;
}
static cmx_status t_lu(void* c, const cmx_array* in, int n, cmx_array* o,
                       int* no) {
  (void)c, (void)n;
  cmx_array p = NULL;
  *no = 2;
  cmx_status st = cmx_linalg_lu(&p, &o[0], &o[1], in[0], S);
  cmx_array_release(p);
  return st;
}
static cmx_status t_det(void* c, const cmx_array* in, int n, cmx_array* o,
                        int* no) {
  (void)c, (void)n;
  *no = 1;
  return cmx_linalg_det(&o[0], in[0], S);
}

static void test_transforms(void) {
  int64_t s44[2] = {4, 4}, s42[2] = {4, 2}, s344[3] = {4, 4, 4},
          s43[2] = {4, 3};
  cmx_array a = rnd(s44, 2, CMX_FLOAT64, 30), b = rnd(s42, 2, CMX_FLOAT64, 31);
  cmx_array ab[2] = {a, b};
  int upper = 1;
  tc_check_grad("inv", t_inv, NULL, &a, 1, 1e-6);
  tc_check_grad("solve", t_solve, NULL, ab, 2, 1e-6);
  tc_check_grad("solve_triangular lower", t_solve_tri, NULL, ab, 2, 1e-6);
  tc_check_grad("solve_triangular upper", t_solve_tri, &upper, ab, 2, 1e-6);
  tc_check_grad("cholesky", t_chol, NULL, &a, 1, 1e-6);
  tc_check_grad("cholesky upper", t_chol, &upper, &a, 1, 1e-6);
  cmx_array tall = rnd(s43, 2, CMX_FLOAT64, 32);
  tc_check_grad("qr square", t_qr, NULL, &a, 1, 1e-6);
  tc_check_grad("qr tall", t_qr, NULL, &tall, 1, 1e-6);
  tc_check_grad("eigh", t_eigh, NULL, &a, 1, 1e-6);
  tc_check_grad("svd", t_svd, NULL, &a, 1, 1e-6);
  cmx_array ad = shift_eye(a, 2);
  tc_check_grad("lu", t_lu, NULL, &ad, 1, 1e-6);
  tc_check_grad("det", t_det, NULL, &a, 1, 1e-6);
  /* vmap over each axis of a batch of three */
  cmx_array x3 = rnd(s344, 3, CMX_FLOAT64, 33);
  int64_t s342[3] = {4, 4, 2};
  cmx_array b3 = rnd(s342, 3, CMX_FLOAT64, 34);
  cmx_array xb[2] = {x3, b3};
  for (int ax = 0; ax < 3; ax++) {
    tc_check_vmap("vmap inv", t_inv, NULL, &x3, 1, &ax, 0);
    tc_check_vmap("vmap qr", t_qr, NULL, &x3, 1, &ax, 0);
    tc_check_vmap("vmap eigh", t_eigh, NULL, &x3, 1, &ax, 1);
    tc_check_vmap("vmap lu", t_lu, NULL, &x3, 1, &ax, 0);
  }
  int axes2[2] = {0, CMX_VMAP_NONE};
  tc_check_vmap("vmap solve (b unbatched)", t_solve, NULL, (cmx_array[]){x3, b},
                2, axes2, 0);
  int axes3[2] = {0, 0};
  tc_check_vmap("vmap solve", t_solve, NULL, xb, 2, axes3, 0);
  cmx_array all[] = {a, b, tall, ad, x3, b3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cmx_array_release(all[i]);
}

/* ---------------- complex64 (every device) ---------------- */
typedef struct {
  cmx_array a;
  int kind; /* 0 U diag(s) Vt, 1 U^H U, 2 V diag(w) V^H, 3 A V - V diag(w) */
} cx_case;

/* x^H (conjugate transpose). */
static cmx_array ch(cmx_array x) {
  cmx_array c = NULL;
  cmx_conjugate(&c, x, S);
  cmx_array r = mt(c);
  cmx_array_release(c);
  return r;
}

/* x * v[..., None, :] (v's values scale x's columns), on stream s. */
static cmx_array scale_cols(cmx_array x, cmx_array v, cmx_stream s) {
  cmx_array e = NULL, r = NULL;
  if (cmx_expand_dims(&e, v, (int[]){-2}, 1, s) == CMX_OK)
    cmx_multiply(&r, x, e, s);
  cmx_array_release(e);
  return r;
}

static cmx_status cx_make(void* ctx, cmx_stream s, cmx_array* out) {
  const cx_case* c = ctx;
  cmx_array f[3] = {0}, t = NULL, h = NULL;
  int n = 0;
  cmx_status st;
  if (c->kind < 2)
    st = cmx_linalg_svd(f, &n, c->a, true, s);
  else if (c->kind == 2)
    st = cmx_linalg_eigh(&f[0], &f[1], c->a, "U", s);
  else
    st = cmx_linalg_eig(&f[0], &f[1], c->a, s);
  if (st != CMX_OK) return st;
  if (c->kind == 0) {
    t = scale_cols(f[0], f[1], s);
    st = cmx_matmul(out, t, f[2], s);
  } else if (c->kind == 1) {
    h = ch(f[0]);
    st = cmx_matmul(out, h, f[0], s);
  } else if (c->kind == 2) {
    t = scale_cols(f[1], f[0], s), h = ch(f[1]);
    st = cmx_matmul(out, t, h, s);
  } else {
    cmx_array av = NULL;
    t = scale_cols(f[1], f[0], s);
    st = cmx_matmul(&av, c->a, f[1], s);
    if (st == CMX_OK) st = cmx_subtract(out, av, t, s);
    cmx_array_release(av);
  }
  cmx_array all[] = {f[0], f[1], f[2], t, h};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cmx_array_release(all[i]);
  return st;
}

/* SVD, Eigh and Eig of complex64 stacks on every device: the
 * reconstructions U diag(s) Vt = A, U^H U = I, V diag(w) V^H = A (Hermitian
 * A, only its upper triangle set), A V = V diag(w); sizes that take the
 * GPU's batched (<= 32) and per-matrix (> 32) routines. */
static void test_complex(void) {
  int64_t shapes[3][3] = {{3, 5, 5}, {2, 6, 6}, {1, 40, 40}};
  for (int si = 0; si < 3; si++) {
    int64_t* sh = shapes[si];
    int64_t n = sh[2], per = n * n;
    h_tensor t = h_random(sh, 3, CMX_COMPLEX64, -1, 1, 40 + si);
    /* Hermitian: the upper triangle mirrored, a real diagonal */
    h_tensor hm = h_alloc(sh, 3, CMX_COMPLEX64),
             eye = h_alloc(sh, 3, CMX_COMPLEX64),
             zero = h_alloc(sh, 3, CMX_COMPLEX64);
    for (int64_t b = 0; b < sh[0]; b++)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          int64_t ij = b * per + i * n + j, ji = b * per + j * n + i;
          int64_t src = i <= j ? ij : ji;
          hm.re[ij] = t.re[src];
          hm.im[ij] = i == j ? 0 : i < j ? t.im[src] : -t.im[src];
          eye.re[ij] = i == j;
        }
    cmx_array a = h_array(&t, H_CONTIG), ha = h_array(&hm, H_CONTIG);
    double tol = n > 8 ? 1e-3 : 2e-4;
    cx_case cs[4] = {{a, 0}, {a, 1}, {ha, 2}, {a, 3}};
    const h_tensor* want[4] = {&t, &eye, &hm, &zero};
    const char* names[4] = {"complex svd U S Vt", "complex svd U^H U",
                            "complex eigh V W V^H", "complex eig A V - V W"};
    for (int k = 0; k < 4; k++) {
      char what[96];
      snprintf(what, sizeof what, "%s (%lld, %lld, %lld)", names[k],
               (long long)sh[0], (long long)n, (long long)n);
      h_run_case(what, cx_make, &cs[k], want[k], tol);
    }
    cmx_array_release(a), cmx_array_release(ha);
    h_free(&t), h_free(&hm), h_free(&eye), h_free(&zero);
  }
}

int main(void) {
  RUN(test_reconstructions);
  RUN(test_errors);
  RUN(test_transforms);
  RUN(test_complex);
  return test_summary("test_linalg");
}
