/* Tests of tensordot, inner, outer, vecdot, kron and trace against naive
 * double-precision loops, over several dtypes, shapes and layouts. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

static void unravel(int64_t k, const int64_t* shape, int nd, int64_t* idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
}
static int64_t ravel(const int64_t* idx, const int64_t* shape, int nd) {
  int64_t k = 0;
  for (int d = 0; d < nd; d++) k = k * shape[d] + idx[d];
  return k;
}

static const cmx_dtype DTS[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                CMX_INT32,   CMX_INT8,    CMX_COMPLEX64};
#define NDTS 6

/* Checks got against want computed in double with rounding to odt. */
static void compare(cmx_array r, h_tensor* want, double tol_scale,
                    const char* what) {
  h_tensor g = h_read(r);
  for (int64_t i = 0; i < want->size; i++) {
    want->re[i] = h_round_to(want->re[i], want->dtype);
    if (want->im) want->im[i] = h_round_to(want->im[i], want->dtype);
  }
  double tol = h_tol(want->dtype) * tol_scale;
  CHECK_MSG(h_close(&g, want, tol, tol, what), "%s", what);
  h_free(&g);
}

/* Reference tensordot: out[free_a, free_b] = sum_c a[..] * b[..]. */
static void check_tensordot(const int64_t* sa, int na, const int64_t* sb,
                            int nb, const int* ca, const int* cb, int n,
                            bool int_form, int axes) {
  for (int di = 0; di < NDTS; di++) {
    cmx_dtype dt = DTS[di];
    h_tensor x = h_random(sa, na, dt, -3, 3, 11 + di),
             y = h_random(sb, nb, dt, -3, 3, 23 + di);
    bool ua[CMX_MAX_NDIM] = {0}, ub[CMX_MAX_NDIM] = {0};
    int nca[8], ncb[8];
    for (int i = 0; i < n; i++) {
      nca[i] = ca[i] < 0 ? ca[i] + na : ca[i];
      ncb[i] = cb[i] < 0 ? cb[i] + nb : cb[i];
      ua[nca[i]] = ub[ncb[i]] = true;
    }
    int64_t os[CMX_MAX_NDIM], cs[CMX_MAX_NDIM];
    int no = 0;
    for (int d = 0; d < na; d++)
      if (!ua[d]) os[no++] = sa[d];
    int nfa = no;
    for (int d = 0; d < nb; d++)
      if (!ub[d]) os[no++] = sb[d];
    int64_t csize = 1;
    for (int i = 0; i < n; i++) cs[i] = sa[nca[i]], csize *= cs[i];
    h_tensor want = h_alloc(os, no, dt);
    for (int64_t k = 0; k < want.size; k++) {
      int64_t oi[CMX_MAX_NDIM], ia[CMX_MAX_NDIM], ib[CMX_MAX_NDIM],
          ci[CMX_MAX_NDIM];
      unravel(k, os, no, oi);
      int f = 0;
      for (int d = 0; d < na; d++)
        if (!ua[d]) ia[d] = oi[f++];
      for (int d = 0; d < nb; d++)
        if (!ub[d]) ib[d] = oi[f++];
      double re = 0, im = 0;
      for (int64_t c = 0; c < csize; c++) {
        unravel(c, cs, n, ci);
        for (int i = 0; i < n; i++) ia[nca[i]] = ci[i], ib[ncb[i]] = ci[i];
        int64_t pa = ravel(ia, sa, na), pb = ravel(ib, sb, nb);
        double ar = x.re[pa], ai = x.im ? x.im[pa] : 0;
        double br = y.re[pb], bi = y.im ? y.im[pb] : 0;
        re += ar * br - ai * bi;
        im += ar * bi + ai * br;
      }
      want.re[k] = re;
      if (want.im) want.im[k] = im;
    }
    (void)nfa;
    for (int l = 0; l < 2; l++) {
      if (l == H_TRANSPOSED && (na < 2 || nb < 2)) continue;
      cmx_array a = h_array(&x, (h_layout)l), b = h_array(&y, (h_layout)l),
                r = NULL;
      if (int_form)
        OK(cmx_tensordot(&r, a, b, axes, S));
      else
        OK(cmx_tensordot_axes(&r, a, b, ca, cb, n, S));
      char what[128];
      snprintf(what, sizeof what, "tensordot %s n=%d layout %d",
               cmx_dtype_name(dt), n, l);
      if (r) compare(r, &want, 8 * (double)(csize + 1), what);
      cmx_array_release(a), cmx_array_release(b), cmx_array_release(r);
    }
    h_free(&x), h_free(&y), h_free(&want);
  }
}

static void test_tensordot(void) {
  int64_t a1[3] = {2, 3, 4}, b1[3] = {3, 4, 5};
  int c1a[2] = {1, 2}, c1b[2] = {0, 1};
  check_tensordot(a1, 3, b1, 3, c1a, c1b, 2, true, 2);
  check_tensordot(a1, 3, b1, 3, c1a, c1b, 2, false, 0);
  int64_t a2[3] = {4, 3, 2}, b2[2] = {2, 4};
  int c2a[2] = {-1, 0}, c2b[2] = {0, 1};
  check_tensordot(a2, 3, b2, 2, c2a, c2b, 2, false, 0);
  check_tensordot(a2, 3, b2, 2, NULL, NULL, 0, true, 0); /* outer */
  int64_t a3[2] = {3, 0}, b3[2] = {0, 2}; /* empty contraction: zeros */
  int c3a[1] = {1}, c3b[1] = {0};
  check_tensordot(a3, 2, b3, 2, c3a, c3b, 1, false, 0);

  cmx_array a = NULL, b = NULL, r = NULL;
  OK(cmx_zeros(&a, a1, 3, CMX_FLOAT32, S));
  OK(cmx_zeros(&b, b1, 3, CMX_FLOAT32, S));
  FAILS(cmx_tensordot(&r, a, b, 1, S), CMX_ERR_VALUE,
        "[tensordot] Contracted axis 2 of a (size 4) does not match axis 0 "
        "of b (size 3)");
  FAILS(cmx_tensordot(&r, a, b, 4, S), CMX_ERR_VALUE, "[tensordot] Invalid");
  int bad[1] = {5}, z[1] = {0};
  FAILS(cmx_tensordot_axes(&r, a, b, bad, z, 1, S), CMX_ERR_INDEX,
        "[tensordot] axis 5 is out of bounds");
  int rep_a[2] = {1, 1}, rep_b[2] = {0, 1};
  FAILS(cmx_tensordot_axes(&r, a, b, rep_a, rep_b, 2, S), CMX_ERR_VALUE,
        "[tensordot] Repeated");
  cmx_array_release(a), cmx_array_release(b);
}

static void test_inner_outer(void) {
  int64_t sa[2] = {3, 4}, sb[3] = {2, 5, 4};
  for (int di = 0; di < NDTS; di++) {
    cmx_dtype dt = DTS[di];
    h_tensor x = h_random(sa, 2, dt, -3, 3, 5),
             y = h_random(sb, 3, dt, -3, 3, 6);
    /* inner: (3, 2, 5) */
    int64_t os[3] = {3, 2, 5};
    h_tensor want = h_alloc(os, 3, dt);
    for (int64_t i = 0; i < 3; i++)
      for (int64_t j = 0; j < 10; j++) {
        double re = 0, im = 0;
        for (int64_t k = 0; k < 4; k++) {
          double ar = x.re[i * 4 + k], ai = x.im ? x.im[i * 4 + k] : 0;
          double br = y.re[j * 4 + k], bi = y.im ? y.im[j * 4 + k] : 0;
          re += ar * br - ai * bi, im += ar * bi + ai * br;
        }
        want.re[i * 10 + j] = re;
        if (want.im) want.im[i * 10 + j] = im;
      }
    cmx_array a = h_array(&x, H_TRANSPOSED), b = h_array(&y, H_STRIDED),
              r = NULL;
    OK(cmx_inner(&r, a, b, S));
    char what[64];
    snprintf(what, sizeof what, "inner %s", cmx_dtype_name(dt));
    if (r) compare(r, &want, 40, what);
    cmx_array_release(r), h_free(&want);
    /* outer: (12, 40) */
    int64_t oo[2] = {12, 40};
    want = h_alloc(oo, 2, dt);
    for (int64_t i = 0; i < 12; i++)
      for (int64_t j = 0; j < 40; j++) {
        double ar = x.re[i], ai = x.im ? x.im[i] : 0, br = y.re[j],
               bi = y.im ? y.im[j] : 0;
        want.re[i * 40 + j] = ar * br - ai * bi;
        if (want.im) want.im[i * 40 + j] = ar * bi + ai * br;
      }
    r = NULL;
    OK(cmx_outer(&r, a, b, S));
    snprintf(what, sizeof what, "outer %s", cmx_dtype_name(dt));
    if (r) compare(r, &want, 4, what);
    cmx_array_release(r), h_free(&want);
    cmx_array_release(a), cmx_array_release(b);
    h_free(&x), h_free(&y);
  }
  cmx_array a = NULL, b = NULL, r = NULL;
  int64_t s1[1] = {3}, s2[1] = {4};
  OK(cmx_ones(&a, s1, 1, CMX_FLOAT32, S));
  OK(cmx_ones(&b, s2, 1, CMX_FLOAT32, S));
  FAILS(cmx_inner(&r, a, b, S), CMX_ERR_VALUE,
        "[inner] Last dimension of a (3) and b (4) must match.");
  cmx_array_release(a), cmx_array_release(b);
}

static void test_vecdot(void) {
  /* same ndim (MLX rejects an axis missing from either input) */
  int64_t sa[3] = {2, 1, 5}, sb[3] = {1, 3, 5};
  for (int di = 0; di < NDTS; di++) {
    cmx_dtype dt = DTS[di];
    h_tensor x = h_random(sa, 3, dt, -3, 3, 8),
             y = h_random(sb, 3, dt, -3, 3, 9);
    for (int axis = -1; axis <= 2; axis += 3) { /* -1 and 2: last */
      int64_t os[2] = {2, 3};
      h_tensor want = h_alloc(os, 2, dt);
      for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++) {
          double re = 0, im = 0;
          for (int64_t k = 0; k < 5; k++) {
            double ar = x.re[i * 5 + k], ai = x.im ? -x.im[i * 5 + k] : 0;
            double br = y.re[j * 5 + k], bi = y.im ? y.im[j * 5 + k] : 0;
            re += ar * br - ai * bi, im += ar * bi + ai * br;
          }
          want.re[i * 3 + j] = re;
          if (want.im) want.im[i * 3 + j] = im;
        }
      cmx_array a = h_array(&x, H_CONTIG), b = h_array(&y, H_TRANSPOSED),
                r = NULL;
      OK(cmx_vecdot(&r, a, b, axis, S));
      cmx_dtype odt = cmx_array_dtype(r);
      if (odt != dt) want.dtype = odt; /* integer sums may widen */
      char what[64];
      snprintf(what, sizeof what, "vecdot %s axis %d", cmx_dtype_name(dt),
               axis);
      if (r) compare(r, &want, 20, what);
      cmx_array_release(r), cmx_array_release(a), cmx_array_release(b);
      h_free(&want);
    }
    h_free(&x), h_free(&y);
  }
  /* along axis 0 */
  double av[6] = {1, 2, 3, 4, 5, 6};
  int64_t s23[2] = {2, 3};
  h_tensor t = h_alloc(s23, 2, CMX_FLOAT64);
  memcpy(t.re, av, sizeof av);
  cmx_array a = h_array(&t, H_CONTIG), r = NULL;
  OK(cmx_vecdot(&r, a, a, 0, S));
  h_tensor g = h_read(r);
  CHECK(g.size == 3 && g.re[0] == 17 && g.re[1] == 29 && g.re[2] == 45);
  h_free(&g), cmx_array_release(r);
  FAILS(cmx_vecdot(&r, a, a, 2, S), CMX_ERR_INDEX,
        "[vecdot] axis 2 is out of bounds");
  cmx_array_release(a), h_free(&t);
}

static void test_kron(void) {
  int64_t sa[2] = {2, 3}, sb[3] = {2, 2, 1};
  for (int di = 0; di < NDTS; di++) {
    cmx_dtype dt = DTS[di];
    h_tensor x = h_random(sa, 2, dt, -3, 3, 3),
             y = h_random(sb, 3, dt, -3, 3, 4);
    int64_t pa[3] = {1, 2, 3}, os[3] = {2, 4, 3};
    h_tensor want = h_alloc(os, 3, dt);
    for (int64_t k = 0; k < want.size; k++) {
      int64_t o[3], ia[3], ib[3];
      unravel(k, os, 3, o);
      for (int d = 0; d < 3; d++) ia[d] = o[d] / sb[d], ib[d] = o[d] % sb[d];
      int64_t p = ravel(ia, pa, 3), q = ravel(ib, sb, 3);
      double ar = x.re[p], ai = x.im ? x.im[p] : 0, br = y.re[q],
             bi = y.im ? y.im[q] : 0;
      want.re[k] = ar * br - ai * bi;
      if (want.im) want.im[k] = ar * bi + ai * br;
    }
    cmx_array a = h_array(&x, H_TRANSPOSED), b = h_array(&y, H_CONTIG),
              r = NULL;
    OK(cmx_kron(&r, a, b, S));
    char what[64];
    snprintf(what, sizeof what, "kron %s", cmx_dtype_name(dt));
    if (r) compare(r, &want, 4, what);
    cmx_array_release(r), cmx_array_release(a), cmx_array_release(b);
    h_free(&x), h_free(&y), h_free(&want);
  }
}

static void test_trace(void) {
  int64_t sh[3] = {3, 4, 5};
  for (int di = 0; di < NDTS; di++) {
    cmx_dtype dt = DTS[di];
    h_tensor x = h_random(sh, 3, dt, -3, 3, 2);
    int cases[][3] = {{0, 0, 1}, {1, 0, 1}, {-2, 1, 2}, {2, -1, 0}, {7, 0, 2}};
    for (int c = 0; c < 5; c++) {
      int off = cases[c][0],
          a1 = cases[c][1] < 0 ? cases[c][1] + 3 : cases[c][1],
          a2 = cases[c][2];
      int rest = 3 - a1 - a2;
      int64_t os[1] = {sh[rest]};
      h_tensor want = h_alloc(os, 1, dt);
      for (int64_t r0 = 0; r0 < sh[rest]; r0++) {
        double re = 0, im = 0;
        for (int64_t i = 0; i < sh[a1]; i++) {
          int64_t j = i + off;
          if (j < 0 || j >= sh[a2]) continue;
          int64_t idx[3];
          idx[rest] = r0, idx[a1] = i, idx[a2] = j;
          int64_t p = ravel(idx, sh, 3);
          re += x.re[p], im += x.im ? x.im[p] : 0;
        }
        want.re[r0] = re;
        if (want.im) want.im[r0] = im;
      }
      cmx_array a = h_array(&x, c % 2 ? H_TRANSPOSED : H_CONTIG), r = NULL;
      OK(cmx_trace(&r, a, off, cases[c][1], a2, NULL, S));
      cmx_dtype sdt = cmx_dtype_is_integer(dt) ? CMX_INT32 : dt;
      CHECK(cmx_array_dtype(r) == sdt);
      want.dtype = sdt;
      char what[64];
      snprintf(what, sizeof what, "trace %s case %d", cmx_dtype_name(dt), c);
      if (r) compare(r, &want, 10, what);
      cmx_array_release(r);
      if (dt == CMX_INT8) { /* explicit dtype */
        cmx_dtype f = CMX_FLOAT64;
        OK(cmx_trace(&r, a, off, cases[c][1], a2, &f, S));
        want.dtype = CMX_FLOAT64;
        if (r) compare(r, &want, 1, "trace int8 as float64");
        cmx_array_release(r);
      }
      cmx_array_release(a);
      h_free(&want);
    }
    h_free(&x);
  }
  cmx_array a = NULL, r = NULL;
  OK(cmx_zeros(&a, sh, 1, CMX_FLOAT32, S));
  FAILS(cmx_trace(&r, a, 0, 0, 1, NULL, S), CMX_ERR_VALUE,
        "[trace] Array must have at least two dimensions");
  cmx_array_release(a);
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  FAILS(cmx_trace(&r, a, 0, 1, -1, NULL, S), CMX_ERR_VALUE,
        "[trace] axis1 and axis2 cannot be the same axis.");
  FAILS(cmx_trace(&r, a, 0, 0, 2, NULL, S), CMX_ERR_INDEX,
        "[trace] axis 2 is out of bounds");
  cmx_array_release(a);
}

int main(void) {
  RUN(test_tensordot);
  RUN(test_inner_outer);
  RUN(test_vecdot);
  RUN(test_kron);
  RUN(test_trace);
  return test_summary("products");
}
