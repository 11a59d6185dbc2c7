/* Tests of the misc composite ops against plain double-precision
 * references: harness tables for the elementwise ones, explicit loops for
 * the shape ones, and error messages. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

/* ---- elementwise through the harness ---- */
static cmx_status isclose_default(cmx_array* o, cmx_array a, cmx_array b,
                                  cmx_stream s) {
  return cmx_isclose(o, a, b, 1e-5, 1e-8, false, s);
}
static cmx_status isclose_loose(cmx_array* o, cmx_array a, cmx_array b,
                                cmx_stream s) {
  return cmx_isclose(o, a, b, 0.1, 0.5, false, s);
}
static double g_rtol, g_atol;
static void ref_isclose(double a, double ai, double b, double bi, double* o,
                        double* oi) {
  (void)ai, (void)bi;
  *oi = 0;
  *o = fabs(a - b) <= g_atol + g_rtol * fabs(b);
}
static cmx_status divmod_q(cmx_array* o, cmx_array a, cmx_array b,
                           cmx_stream s) {
  cmx_array r[2];
  cmx_status st = cmx_divmod(r, a, b, s);
  if (st != CMX_OK) return st;
  *o = r[0];
  cmx_array_release(r[1]);
  return CMX_OK;
}
static cmx_status divmod_r(cmx_array* o, cmx_array a, cmx_array b,
                           cmx_stream s) {
  cmx_array r[2];
  cmx_status st = cmx_divmod(r, a, b, s);
  if (st != CMX_OK) return st;
  *o = r[1];
  cmx_array_release(r[0]);
  return CMX_OK;
}
static void ref_fdiv(double a, double ai, double b, double bi, double* o,
                     double* oi) {
  (void)ai, (void)bi;
  *oi = 0;
  *o = floor(a / b);
}
static void ref_rem(double a, double ai, double b, double bi, double* o,
                    double* oi) {
  (void)ai, (void)bi;
  *oi = 0;
  *o = a - floor(a / b) * b;
}
static const cmx_dtype SIGNED[] = {CMX_INT8,      CMX_INT16,   CMX_INT32,
                                   CMX_INT64,     CMX_FLOAT32, CMX_FLOAT64,
                                   CMX_NUM_DTYPES};
static const cmx_dtype REALF[] = {CMX_INT32, CMX_FLOAT32, CMX_FLOAT64,
                                  CMX_NUM_DTYPES};

static void test_elementwise(void) {
  g_rtol = 1e-5, g_atol = 1e-8;
  h_check_binary("isclose", isclose_default, ref_isclose, REALF, h_bool_dtype,
                 -3, 3, -3, 3, 1);
  g_rtol = 0.1, g_atol = 0.5;
  h_check_binary("isclose_loose", isclose_loose, ref_isclose, REALF,
                 h_bool_dtype, -3, 3, -3, 3, 1);
  /* divisors in [1, 5): integer and float floor semantics agree. */
  h_check_binary("divmod.q", divmod_q, ref_fdiv, SIGNED, h_same_dtype, -20, 20,
                 1, 5, 1);
  h_check_binary("divmod.r", divmod_r, ref_rem, SIGNED, h_same_dtype, -20, 20,
                 1, 5, 8);
}

/* ---- helpers ---- */
static cmx_array arr_d(const double* v, const int64_t* shape, int nd,
                       cmx_dtype dt) {
  h_tensor t = h_alloc(shape, nd, dt);
  for (int64_t i = 0; i < t.size; i++) t.re[i] = v[i];
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}
static bool item_bool(cmx_array a) {
  bool b = false;
  if (cmx_array_item_bool(a, &b) != CMX_OK) return false;
  return b;
}

static void test_isclose_special(void) {
  double inf = INFINITY, nan = NAN;
  double av[] = {inf, -inf, inf, nan, nan, 1.0, 0.0};
  double bv[] = {inf, -inf, -inf, nan, 1.0, inf, 1e-9};
  int64_t n = 7;
  cmx_array a = arr_d(av, &n, 1, CMX_FLOAT32),
            b = arr_d(bv, &n, 1, CMX_FLOAT32);
  for (int en = 0; en < 2; en++) {
    cmx_array r = NULL;
    OK(cmx_isclose(&r, a, b, 1e-5, 1e-8, en, S));
    h_tensor g = h_read(r);
    CHECK(g.size == 7 && g.dtype == CMX_BOOL);
    for (int i = 0; i < 7 && g.size == 7; i++) {
      bool want;
      if (isnan(av[i]) || isnan(bv[i]))
        want = en && isnan(av[i]) && isnan(bv[i]);
      else if (isinf(av[i]) || isinf(bv[i]))
        want = av[i] == bv[i];
      else
        want = fabs(av[i] - bv[i]) <= 1e-8 + 1e-5 * fabs(bv[i]);
      CHECK_MSG((g.re[i] != 0) == want, "isclose[%d] equal_nan=%d", i, en);
    }
    h_free(&g);
    cmx_array_release(r);
    OK(cmx_allclose(&r, a, b, 1e-5, 1e-8, en, S));
    CHECK(cmx_array_ndim(r) == 0 && !item_bool(r));
    cmx_array_release(r);
  }
  /* allclose true on a close pair, with broadcasting */
  double cv[] = {1.0, 2.0, 3.0}, dv[] = {2.0000001};
  int64_t n3 = 3, n1 = 1;
  cmx_array c = arr_d(cv, &n3, 1, CMX_FLOAT64),
            d = arr_d(dv, &n1, 1, CMX_FLOAT64);
  cmx_array r = NULL;
  OK(cmx_allclose(&r, c, d, 1e-5, 1e-8, false, S));
  CHECK(!item_bool(r));
  cmx_array_release(r);
  OK(cmx_allclose(&r, c, d, 0.0, 1.5, false, S));
  CHECK(item_bool(r));
  cmx_array_release(r);
  FAILS(cmx_isclose(&r, c, a, 1e-5, 1e-8, false, S), CMX_ERR_VALUE,
        "cannot be broadcast");
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(c),
      cmx_array_release(d);
}

static void test_array_equal(void) {
  double av[] = {1, 2, NAN, 4, 5, 6}, bv[] = {1, 2, NAN, 4, 5, 6},
         cv[] = {1, 2, 3, 4, 5, 7};
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6 = 6;
  cmx_array a = arr_d(av, s23, 2, CMX_FLOAT32),
            b = arr_d(bv, s23, 2, CMX_FLOAT64),
            c = arr_d(cv, s23, 2, CMX_INT32),
            c2 = arr_d(cv, s23, 2, CMX_FLOAT16),
            d = arr_d(cv, s32, 2, CMX_INT32), e = arr_d(cv, &s6, 1, CMX_INT32);
  cmx_array r = NULL;
  OK(cmx_array_equal(&r, a, b, false, S));
  CHECK(!item_bool(r));
  cmx_array_release(r);
  OK(cmx_array_equal(&r, a, b, true, S));
  CHECK(item_bool(r));
  cmx_array_release(r);
  OK(cmx_array_equal(&r, c, c2, false, S));
  CHECK(item_bool(r) && cmx_array_dtype(r) == CMX_BOOL);
  cmx_array_release(r);
  OK(cmx_array_equal(&r, c, a, true, S));
  CHECK(!item_bool(r));
  cmx_array_release(r);
  OK(cmx_array_equal(&r, c, d, false, S)); /* same size, other shape */
  CHECK(!item_bool(r));
  cmx_array_release(r);
  OK(cmx_array_equal(&r, c, e, false, S));
  CHECK(!item_bool(r));
  cmx_array_release(r);
  FAILS(cmx_array_equal(&r, c, NULL, false, S), CMX_ERR_VALUE, "[array_equal]");
  cmx_array arrs[] = {a, b, c, c2, d, e};
  for (int i = 0; i < 6; i++) cmx_array_release(arrs[i]);
}

static void test_nan_to_num(void) {
  double v[] = {1.5, NAN, INFINITY, -INFINITY, -2.0};
  int64_t n = 5;
  const cmx_dtype dts[] = {CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64};
  const double big[] = {65504.0, 3.3895313892515355e38, 3.4028234663852886e38,
                        1.7976931348623157e308};
  for (int k = 0; k < 4; k++) {
    cmx_array a = arr_d(v, &n, 1, dts[k]), r = NULL;
    for (int custom = 0; custom < 2; custom++) {
      double pi = 7, ni = -9;
      OK(cmx_nan_to_num(&r, a, custom ? 3.0 : 0.0, custom ? &pi : NULL,
                        custom ? &ni : NULL, S));
      h_tensor g = h_read(r);
      double want[] = {1.5, custom ? 3.0 : 0.0, custom ? 7 : big[k],
                       custom ? -9 : -big[k], -2.0};
      CHECK(g.dtype == dts[k] && g.size == 5);
      for (int i = 0; i < 5 && g.size == 5; i++)
        CHECK_MSG(g.re[i] == want[i], "%s [%d] %g want %g",
                  cmx_dtype_name(dts[k]), i, g.re[i], want[i]);
      h_free(&g);
      cmx_array_release(r);
    }
    cmx_array_release(a);
  }
  double iv[] = {1, -2, 3};
  int64_t n3 = 3;
  cmx_array a = arr_d(iv, &n3, 1, CMX_INT16), r = NULL;
  OK(cmx_nan_to_num(&r, a, 0, NULL, NULL, S));
  h_tensor g = h_read(r);
  CHECK(g.dtype == CMX_INT16 && g.size == 3 && g.re[1] == -2);
  h_free(&g);
  cmx_array_release(r), cmx_array_release(a);
  cmx_array z = NULL;
  OK(cmx_array_from_complex(&z, 1, 2));
  FAILS(cmx_nan_to_num(&r, z, 0, NULL, NULL, S), CMX_ERR_TYPE, "[nan_to_num]");
  cmx_array_release(z);
}

/* ---- windows ---- */
typedef cmx_status (*win_fn)(cmx_array*, int64_t, cmx_stream);
static double ref_win(int k, int64_t m, int64_t i) {
  if (m == 1) return 1;
  double nn = (double)(1 - m + 2 * i), x = nn / (double)(m - 1);
  switch (k) {
    case 0:
      return nn <= 0 ? 1 + x : 1 - x;
    case 1:
      return 0.5 + 0.5 * cos(M_PI * x);
    case 2:
      return 0.54 + 0.46 * cos(M_PI * x);
    default:
      return 0.42 + 0.5 * cos(M_PI * x) + 0.08 * cos(2 * M_PI * x);
  }
}
static void test_windows(void) {
  win_fn fns[] = {cmx_bartlett, cmx_hanning, cmx_hamming, cmx_blackman};
  int64_t ms[] = {-3, 0, 1, 2, 5, 8, 51};
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < 7; j++) {
      cmx_array r = NULL;
      OK(fns[k](&r, ms[j], S));
      h_tensor g = h_read(r);
      int64_t m = ms[j] < 0 ? 0 : ms[j];
      CHECK(g.dtype == CMX_FLOAT32 && g.ndim == 1 && g.size == m);
      for (int64_t i = 0; i < m && g.size == m; i++) {
        double w = ref_win(k, m, i);
        CHECK_MSG(fabs(g.re[i] - w) <= 1e-6, "window %d m=%lld [%lld] %g vs %g",
                  k, (long long)m, (long long)i, g.re[i], w);
      }
      h_free(&g);
      cmx_array_release(r);
    }
}

/* ---- shapes ---- */
static bool has_shape(cmx_array a, const int64_t* s, int nd) {
  if (!a || cmx_array_ndim(a) != nd) return false;
  for (int i = 0; i < nd; i++)
    if (cmx_array_shape(a)[i] != s[i]) return false;
  return true;
}
static void test_atleast(void) {
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i - 5;
  int64_t shapes[4][3] = {{0}, {4}, {2, 3}, {2, 3, 4}};
  int64_t want[3][4][3] = {{{1}, {4}, {2, 3}, {2, 3, 4}},
                           {{1, 1}, {1, 4}, {2, 3}, {2, 3, 4}},
                           {{1, 1, 1}, {1, 4, 1}, {2, 3, 1}, {2, 3, 4}}};
  cmx_status (*fns[3])(cmx_array*, cmx_array, cmx_stream) = {
      cmx_atleast_1d, cmx_atleast_2d, cmx_atleast_3d};
  for (int nd = 0; nd < 4; nd++) {
    cmx_array a = arr_d(v, shapes[nd], nd, CMX_INT64);
    h_tensor x = h_read(a);
    for (int k = 0; k < 3; k++) {
      cmx_array r = NULL;
      OK(fns[k](&r, a, S));
      int wnd = nd > k + 1 ? nd : k + 1;
      CHECK_MSG(has_shape(r, want[k][nd], wnd), "atleast_%dd of %dd", k + 1,
                nd);
      h_tensor g = h_read(r);
      CHECK(g.size == x.size && g.dtype == CMX_INT64);
      for (int64_t i = 0; i < x.size && g.size == x.size; i++)
        CHECK(g.re[i] == x.re[i]);
      h_free(&g);
      cmx_array_release(r);
    }
    h_free(&x);
    cmx_array_release(a);
  }
}

static void test_unstack(void) {
  int64_t sh[3] = {2, 3, 4};
  h_tensor x = h_random(sh, 3, CMX_FLOAT32, -1, 1, 7);
  for (int l = 0; l < 2; l++) {
    cmx_array a = h_array(&x, l ? H_TRANSPOSED : H_CONTIG);
    for (int axis = -3; axis < 3; axis++) {
      int ax = axis < 0 ? axis + 3 : axis;
      cmx_array outs[4] = {0};
      OK(cmx_unstack(outs, a, axis, S));
      for (int64_t k = 0; k < sh[ax]; k++) {
        h_tensor g = h_read(outs[k]);
        CHECK(g.ndim == 2 && g.size == 24 / sh[ax]);
        int64_t j = 0;
        for (int64_t i0 = 0; i0 < 2; i0++)
          for (int64_t i1 = 0; i1 < 3; i1++)
            for (int64_t i2 = 0; i2 < 4; i2++) {
              int64_t id[3] = {i0, i1, i2};
              if (id[ax] != k) continue;
              double w = x.re[(i0 * 3 + i1) * 4 + i2];
              CHECK(j < g.size && g.re[j] == w);
              j++;
            }
        h_free(&g);
        cmx_array_release(outs[k]);
      }
    }
    cmx_array outs[4];
    FAILS(cmx_unstack(outs, a, 3, S), CMX_ERR_VALUE,
          "[unstack] axis 3 is out of bounds");
    cmx_array_release(a);
  }
  h_free(&x);
  cmx_array z = NULL, outs[1];
  OK(cmx_array_from_double(&z, 1, CMX_FLOAT32));
  FAILS(cmx_unstack(outs, z, 0, S), CMX_ERR_VALUE, "[unstack]");
  cmx_array_release(z);
}

static void test_meshgrid(void) {
  double xv[] = {1, 2, 3}, yv[] = {10, 20}, zv[] = {-1, -2, -3, -4};
  int64_t nx = 3, ny = 2, zs[2] = {2, 2};
  cmx_array in[3] = {arr_d(xv, &nx, 1, CMX_INT32),
                     arr_d(yv, &ny, 1, CMX_FLOAT32),
                     arr_d(zv, zs, 2, CMX_FLOAT64)};
  int64_t len[3] = {3, 2, 4};
  const double* vals[3] = {xv, yv, zv};
  for (int ij = 0; ij < 2; ij++)
    for (int sparse = 0; sparse < 2; sparse++)
      for (int n = 1; n <= 3; n++) {
        cmx_array outs[3] = {0};
        OK(cmx_meshgrid(outs, in, n, sparse, ij ? "ij" : "xy", S));
        int pos[3] = {0, 1, 2};
        if (!ij && n >= 2) pos[0] = 1, pos[1] = 0;
        int64_t full[3];
        for (int i = 0; i < n; i++) full[pos[i]] = len[i];
        for (int i = 0; i < n; i++) {
          int64_t ws[3];
          for (int d = 0; d < n; d++)
            ws[d] = sparse && d != pos[i] ? 1 : full[d];
          CHECK_MSG(has_shape(outs[i], ws, n),
                    "meshgrid %s sparse=%d n=%d out %d", ij ? "ij" : "xy",
                    sparse, n, i);
          h_tensor g = h_read(outs[i]);
          CHECK(g.dtype == cmx_array_dtype(in[i]));
          int64_t idx[3] = {0, 0, 0};
          for (int64_t k = 0; k < g.size; k++) {
            CHECK(g.re[k] == vals[i][idx[pos[i]]]);
            for (int d = n - 1; d >= 0; d--) {
              if (++idx[d] < ws[d]) break;
              idx[d] = 0;
            }
          }
          h_free(&g);
          cmx_array_release(outs[i]);
        }
      }
  cmx_array outs[3];
  FAILS(cmx_meshgrid(outs, in, 2, false, "yx", S), CMX_ERR_VALUE,
        "[meshgrid] Invalid indexing value");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
}

static void test_depends(void) {
  double v[] = {1, 2, 3, 4, 5, 6};
  int64_t sh[2] = {2, 3}, n = 3;
  cmx_array x = arr_d(v, sh, 2, CMX_FLOAT32), y = arr_d(v, &n, 1, CMX_INT32);
  cmx_array dep = NULL;
  OK(cmx_exp(&dep, x, S)); /* lazy */
  CHECK(!cmx_array_is_available(dep));
  cmx_array in[2] = {x, y}, outs[2] = {0};
  OK(cmx_depends(outs, in, 2, &dep, 1, S));
  for (int i = 0; i < 2; i++) {
    CHECK(cmx_array_ndim(outs[i]) == cmx_array_ndim(in[i]) &&
          cmx_array_dtype(outs[i]) == cmx_array_dtype(in[i]));
    h_tensor g = h_read(outs[i]), w = h_read(in[i]);
    CHECK(g.size == w.size);
    for (int64_t k = 0; k < g.size && g.size == w.size; k++)
      CHECK(g.re[k] == w.re[k]);
    h_free(&g), h_free(&w);
  }
  /* evaluating an output evaluated the dependency first */
  CHECK(cmx_array_is_available(dep));
  for (int i = 0; i < 2; i++) cmx_array_release(outs[i]);
  in[1] = NULL;
  FAILS(cmx_depends(outs, in, 2, &dep, 1, S), CMX_ERR_VALUE, "[depends]");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  cmx_array_release(x), cmx_array_release(y), cmx_array_release(dep);
}

int main(void) {
  RUN(test_depends);
  RUN(test_elementwise);
  RUN(test_isclose_special);
  RUN(test_array_equal);
  RUN(test_nan_to_num);
  RUN(test_windows);
  RUN(test_atleast);
  RUN(test_unstack);
  RUN(test_meshgrid);
  return test_summary("misc");
}
