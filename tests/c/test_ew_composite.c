/* Tests of the elementwise composite ops (isclose, allclose, array_equal
 * and divmod of ops/binary.c, nan_to_num of ops/unary.c) against plain
 * double-precision references: harness tables, special values, and error
 * messages. */
#include "shape_util.h"

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
  cmx_array a = h_from_doubles(av, &n, 1, CMX_FLOAT32),
            b = h_from_doubles(bv, &n, 1, CMX_FLOAT32);
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
  cmx_array c = h_from_doubles(cv, &n3, 1, CMX_FLOAT64),
            d = h_from_doubles(dv, &n1, 1, CMX_FLOAT64);
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
  cmx_array a = h_from_doubles(av, s23, 2, CMX_FLOAT32),
            b = h_from_doubles(bv, s23, 2, CMX_FLOAT64),
            c = h_from_doubles(cv, s23, 2, CMX_INT32),
            c2 = h_from_doubles(cv, s23, 2, CMX_FLOAT16),
            d = h_from_doubles(cv, s32, 2, CMX_INT32),
            e = h_from_doubles(cv, &s6, 1, CMX_INT32);
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
    cmx_array a = h_from_doubles(v, &n, 1, dts[k]), r = NULL;
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
  cmx_array a = h_from_doubles(iv, &n3, 1, CMX_INT16), r = NULL;
  OK(cmx_nan_to_num(&r, a, 0, NULL, NULL, S));
  h_tensor g = h_read(r);
  CHECK(g.dtype == CMX_INT16 && g.size == 3 && g.re[1] == -2);
  h_free(&g);
  cmx_array_release(r), cmx_array_release(a);
  cmx_array z = NULL;
  OK(cmx_array_from_complex(&z, 1, 2));
  FAILS(cmx_nan_to_num(&r, z, 0, NULL, NULL, S), CMX_ERR_VALUE, "[nan_to_num]");
  cmx_array_release(z);
}

int main(void) {
  RUN(test_elementwise);
  RUN(test_isclose_special);
  RUN(test_array_equal);
  RUN(test_nan_to_num);
  return test_summary("test_ew_composite");
}
