/* Unary elementwise ops: every op on every dtype it accepts, over the
 * harness shapes (0-d, empty, large) and layouts (contiguous, transposed,
 * strided), against double-precision references written from the
 * definitions (complex ones from real formulas, not the C library's
 * complex functions); plus special values, the exp accuracy sweep, result
 * dtypes and error messages. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT
typedef double _Complex dc;

static dc cz(double re, double im) {
  return CMPLX(re, im);
}
static void put(dc z, double* o, double* oi) {
  *o = creal(z);
  *oi = cimag(z);
}
/* MLX's sign: -0 and NaN give 0 */
static double sgn(double x) {
  return x > 0 ? 1 : x < 0 ? -1 : 0;
}

/* ---------------- complex references from real formulas ---------------- */
static dc r_cexp(dc z) {
  double e = exp(creal(z));
  return cz(e * cos(cimag(z)), e * sin(cimag(z)));
}
static dc r_clog(dc z) {
  return cz(log(hypot(creal(z), cimag(z))), atan2(cimag(z), creal(z)));
}
static dc r_csqrt(dc z) {
  double x = creal(z), y = cimag(z), r = hypot(x, y);
  double re = sqrt(0.5 * (r + x)), im = sqrt(0.5 * (r - x));
  return cz(re, y < 0 ? -im : im);
}
static dc r_csin(dc z) {
  double x = creal(z), y = cimag(z);
  return cz(sin(x) * cosh(y), cos(x) * sinh(y));
}
static dc r_ccos(dc z) {
  double x = creal(z), y = cimag(z);
  return cz(cos(x) * cosh(y), -sin(x) * sinh(y));
}
static dc r_csinh(dc z) {
  double x = creal(z), y = cimag(z);
  return cz(sinh(x) * cos(y), cosh(x) * sin(y));
}
static dc r_ccosh(dc z) {
  double x = creal(z), y = cimag(z);
  return cz(cosh(x) * cos(y), sinh(x) * sin(y));
}
static const dc I_ = CMPLX(0.0, 1.0);
static dc r_casin(dc z) {
  return -I_ * r_clog(I_ * z + r_csqrt(1.0 - z * z));
}
static dc r_cacos(dc z) {
  return M_PI / 2 - r_casin(z);
}
static dc r_catan(dc z) {
  return 0.5 * I_ * (r_clog(1.0 - I_ * z) - r_clog(1.0 + I_ * z));
}
static dc r_casinh(dc z) {
  return r_clog(z + r_csqrt(z * z + 1.0));
}
static dc r_cacosh(dc z) {
  return r_clog(z + r_csqrt(z + 1.0) * r_csqrt(z - 1.0));
}
static dc r_catanh(dc z) {
  return 0.5 * (r_clog(1.0 + z) - r_clog(1.0 - z));
}

/* A reference pair: real function and complex function. */
#define REF(name, REAL, CPLX)                                     \
  static void name(double re, double im, double* o, double* oi) { \
    dc z = cz(re, im);                                            \
    (void)z;                                                      \
    *o = REAL;                                                    \
    *oi = 0;                                                      \
    if (im != 0) put(CPLX, o, oi);                                \
  }
/* Complex inputs always have a random nonzero imaginary part in these
 * tables, so `im != 0` selects the complex formula. */
REF(ref_abs, fabs(re), cz(hypot(re, im), 0))
REF(ref_sign, sgn(re), z / hypot(re, im))
REF(ref_negative, -re, -z)
REF(ref_square, re* re, z* z)
REF(ref_sqrt, sqrt(re), r_csqrt(z))
REF(ref_rsqrt, 1 / sqrt(re), 1.0 / r_csqrt(z))
REF(ref_exp, exp(re), r_cexp(z))
REF(ref_expm1, expm1(re), r_cexp(z) - 1.0)
REF(ref_log, log(re), r_clog(z))
REF(ref_log2, log(re) / M_LN2, r_clog(z) / M_LN2)
REF(ref_log10, log(re) / M_LN10, r_clog(z) / M_LN10)
REF(ref_log1p, log1p(re), r_clog(1.0 + z))
REF(ref_sin, sin(re), r_csin(z))
REF(ref_cos, cos(re), r_ccos(z))
REF(ref_tan, sin(re) / cos(re), r_csin(z) / r_ccos(z))
REF(ref_arcsin, asin(re), r_casin(z))
REF(ref_arccos, acos(re), r_cacos(z))
REF(ref_arctan, atan(re), r_catan(z))
REF(ref_sinh, sinh(re), r_csinh(z))
REF(ref_cosh, cosh(re), r_ccosh(z))
REF(ref_tanh, sinh(re) / cosh(re), r_csinh(z) / r_ccosh(z))
REF(ref_arcsinh, asinh(re), r_casinh(z))
REF(ref_arccosh, acosh(re), r_cacosh(z))
REF(ref_arctanh, atanh(re), r_catanh(z))
REF(ref_sigmoid, 1 / (1 + exp(-re)), 1.0 / (1.0 + r_cexp(-z)))
REF(ref_erf, erf(re), 0)
REF(ref_floor, floor(re), 0)
REF(ref_ceil, ceil(re), 0)
REF(ref_trunc, trunc(re), 0)
REF(ref_reciprocal, 1 / re, 1.0 / z)
REF(ref_degrees, re*(180 / M_PI), z*(180 / M_PI))
REF(ref_radians, re*(M_PI / 180), z*(M_PI / 180))

/* tanh overflows as sinh/cosh for large inputs; inputs stay small. */

/* erfinv by bisection on erf (erfc near +-1): independent of the
 * kernel's Newton iteration. */
static double bisect_erfinv(double x) {
  if (x != x || x < -1 || x > 1) return NAN;
  if (x == 0) return x;
  if (x == 1) return INFINITY;
  if (x == -1) return -INFINITY;
  double ax = fabs(x), lo = 0, hi = 10;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    bool below = ax <= 0.5 ? erf(mid) < ax : erfc(mid) > 1 - ax;
    if (below)
      lo = mid;
    else
      hi = mid;
  }
  return copysign(0.5 * (lo + hi), x);
}
static void ref_erfinv(double re, double im, double* o, double* oi) {
  (void)im;
  *o = bisect_erfinv(re);
  *oi = 0;
}
static void ref_id(double re, double im, double* o, double* oi) {
  *o = re;
  *oi = im;
}
static void ref_conj(double re, double im, double* o, double* oi) {
  *o = re;
  *oi = -im;
}
static void ref_real(double re, double im, double* o, double* oi) {
  (void)im;
  *o = re;
  *oi = 0;
}
static void ref_imag(double re, double im, double* o, double* oi) {
  (void)re;
  *o = im;
  *oi = 0;
}
static void ref_logical_not(double re, double im, double* o, double* oi) {
  *o = re == 0 && im == 0;
  *oi = 0;
}
static void ref_invert(double re, double im, double* o, double* oi) {
  (void)im;
  *o = (double)~(int64_t)re;
  *oi = 0;
}
static void ref_not(double re, double im, double* o, double* oi) {
  (void)im;
  *o = re == 0;
  *oi = 0;
}
static void ref_false(double re, double im, double* o, double* oi) {
  (void)re;
  (void)im;
  *o = 0;
  *oi = 0;
}
static void ref_true(double re, double im, double* o, double* oi) {
  (void)re;
  (void)im;
  *o = 1;
  *oi = 0;
}

static cmx_dtype abs_dtype(cmx_dtype d) {
  return d == CMX_COMPLEX64 ? CMX_FLOAT32 : d;
}

static const cmx_dtype NO_BOOL_ALL[] = {
    CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,    CMX_INT8,
    CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,   CMX_BFLOAT16,
    CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype FLOATS_C[] = {CMX_FLOAT16,   CMX_BFLOAT16,
                                     CMX_FLOAT32,   CMX_FLOAT64,
                                     CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype INTS_BOOL[] = {
    CMX_BOOL, CMX_UINT8, CMX_UINT16, CMX_UINT32, CMX_UINT64,
    CMX_INT8, CMX_INT16, CMX_INT32,  CMX_INT64,  CMX_NUM_DTYPES};
static const cmx_dtype UNSIGNED[] = {CMX_UINT8, CMX_UINT16, CMX_UINT32,
                                     CMX_UINT64, CMX_NUM_DTYPES};

typedef struct {
  const char* name;
  h_unary_fn fn;
  h_ref1 ref;
  const cmx_dtype* dtypes;
  h_out_dtype out;
  double lo, hi, tol;
} unary_case;

static void test_table(void) {
  const unary_case cases[] = {
      /* arithmetic keeping the dtype; integers wrap */
      {"abs", cmx_abs, ref_abs, H_ALL, abs_dtype, -120, 120, 1},
      {"sign", cmx_sign, ref_sign, H_ALL, h_same_dtype, -3, 3, 1},
      {"negative", cmx_negative, ref_negative, NO_BOOL_ALL, h_same_dtype, -128,
       127, 1},
      {"square", cmx_square, ref_square, H_ALL, h_same_dtype, -300, 300, 1},
      {"positive", cmx_positive, ref_id, H_ALL, h_same_dtype, -50, 50, 0},
      {"stop_gradient", cmx_stop_gradient, ref_id, H_ALL, h_same_dtype, -50, 50,
       0},
      /* float functions: integers and bool computed in float32 */
      {"sqrt", cmx_sqrt, ref_sqrt, H_ALL, h_float_dtype, 0, 100, 1},
      {"sqrt<0", cmx_sqrt, ref_sqrt, H_FLOATS, h_float_dtype, -2, 2, 1},
      {"rsqrt", cmx_rsqrt, ref_rsqrt, H_ALL, h_float_dtype, 0.01, 100, 1},
      {"exp", cmx_exp, ref_exp, H_ALL, h_float_dtype, -12, 12, 1},
      {"expm1", cmx_expm1, ref_expm1, H_ALL, h_float_dtype, -2, 2, 1},
      {"log", cmx_log, ref_log, H_ALL, h_float_dtype, 0, 50, 1},
      {"log2", cmx_log2, ref_log2, H_ALL, h_float_dtype, 0, 50, 1},
      {"log10", cmx_log10, ref_log10, H_ALL, h_float_dtype, 0, 50, 1},
      {"log1p", cmx_log1p, ref_log1p, H_ALL, h_float_dtype, -0.9, 5, 1},
      {"sin", cmx_sin, ref_sin, H_ALL, h_float_dtype, -4, 4, 1},
      {"cos", cmx_cos, ref_cos, H_ALL, h_float_dtype, -4, 4, 1},
      {"tan", cmx_tan, ref_tan, H_ALL, h_float_dtype, -1.4, 1.4, 1},
      {"arcsin", cmx_arcsin, ref_arcsin, H_ALL, h_float_dtype, -1, 1, 1},
      {"arccos", cmx_arccos, ref_arccos, H_ALL, h_float_dtype, -1, 1, 1},
      {"arctan", cmx_arctan, ref_arctan, H_ALL, h_float_dtype, -5, 5, 1},
      {"sinh", cmx_sinh, ref_sinh, H_ALL, h_float_dtype, -4, 4, 1},
      {"cosh", cmx_cosh, ref_cosh, H_ALL, h_float_dtype, -4, 4, 1},
      {"tanh", cmx_tanh, ref_tanh, H_ALL, h_float_dtype, -4, 4, 1},
      {"arcsinh", cmx_arcsinh, ref_arcsinh, H_ALL, h_float_dtype, -5, 5, 1},
      {"arccosh", cmx_arccosh, ref_arccosh, H_REAL, h_float_dtype, 1, 10, 1},
      {"arccosh(c)", cmx_arccosh, ref_arccosh, FLOATS_C, h_float_dtype, 1.1, 10,
       1},
      {"arctanh", cmx_arctanh, ref_arctanh, H_ALL, h_float_dtype, -0.95, 0.95,
       1},
      {"sigmoid", cmx_sigmoid, ref_sigmoid, H_ALL, h_float_dtype, -20, 20, 1},
      {"erf", cmx_erf, ref_erf, H_REAL, h_float_dtype, -3, 3, 1},
      {"erfinv", cmx_erfinv, ref_erfinv, H_REAL, h_float_dtype, -1, 1, 4},
      {"reciprocal", cmx_reciprocal, ref_reciprocal, H_ALL, h_float_dtype, 0.5,
       5, 1},
      {"degrees", cmx_degrees, ref_degrees, H_ALL, h_float_dtype, -4, 4, 1},
      {"radians", cmx_radians, ref_radians, H_ALL, h_float_dtype, -400, 400, 1},
      /* rounding: the identity on integers */
      {"floor", cmx_floor, ref_floor, H_REAL, h_same_dtype, -50, 50, 0},
      {"ceil", cmx_ceil, ref_ceil, H_REAL, h_same_dtype, -50, 50, 0},
      {"trunc", cmx_trunc, ref_trunc, H_REAL, h_same_dtype, -50, 50, 0},
      /* predicates (random finite values: the special values are below) */
      {"isnan", cmx_isnan, ref_false, H_ALL, h_bool_dtype, -5, 5, 0},
      {"isinf", cmx_isinf, ref_false, H_ALL, h_bool_dtype, -5, 5, 0},
      {"isfinite", cmx_isfinite, ref_true, H_ALL, h_bool_dtype, -5, 5, 0},
      {"isposinf", cmx_isposinf, ref_false, H_ALL, h_bool_dtype, -5, 5, 0},
      {"isneginf", cmx_isneginf, ref_false, H_ALL, h_bool_dtype, -5, 5, 0},
      {"logical_not", cmx_logical_not, ref_logical_not, H_ALL, h_bool_dtype, -2,
       2, 0},
      /* complex parts and bits */
      {"conjugate", cmx_conjugate, ref_conj, H_ALL, h_same_dtype, -5, 5, 0},
      {"real", cmx_real, ref_real, H_ALL, abs_dtype, -5, 5, 0},
      {"imag", cmx_imag, ref_imag, H_ALL, abs_dtype, -5, 5, 0},
      {"bitwise_invert", cmx_bitwise_invert, ref_invert, H_INTS, h_same_dtype,
       -100, 100, 0},
      {"bitwise_invert(u)", cmx_bitwise_invert, ref_invert, UNSIGNED,
       h_same_dtype, 0, 100, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const unary_case* c = &cases[i];
    h_check_unary(c->name, c->fn, c->ref, c->dtypes, c->out, c->lo, c->hi,
                  c->tol);
  }
  static const cmx_dtype only_bool[] = {CMX_BOOL, CMX_NUM_DTYPES};
  h_check_unary("bitwise_invert", cmx_bitwise_invert, ref_not, only_bool,
                h_same_dtype, 0, 1, 0);
}

/* ---------------- round ---------------- */
static int g_decimals;
static cmx_status round_g(cmx_array* o, cmx_array a, cmx_stream s) {
  return cmx_round(o, a, g_decimals, s);
}
/* Half to even at d decimals, in long double. */
static void ref_round(double re, double im, double* o, double* oi) {
  (void)im;
  long double x = re;
  if (g_decimals >= 0) {
    long double s = powl(10.0L, g_decimals);
    *o = (double)(nearbyintl(x * s) / s);
  } else {
    long double s = powl(10.0L, -g_decimals);
    *o = (double)(nearbyintl(x / s) * s);
  }
  *oi = 0;
}

static void test_round(void) {
  const int decs[] = {0, 1, 2, -1, -2};
  for (int k = 0; k < 5; k++) {
    g_decimals = decs[k];
    char name[32];
    snprintf(name, sizeof name, "round(%d)", decs[k]);
    /* floats: values with fractions; ties at .5 are exact at decimals 0 */
    h_check_unary(name, round_g, ref_round, H_FLOATS, h_same_dtype, -300, 300,
                  1);
    /* integers and bool: identity for decimals >= 0 */
    h_check_unary(name, round_g, ref_round, INTS_BOOL, h_same_dtype, -300, 300,
                  0);
  }
  /* ties go to even */
  float v[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, -3.49f};
  float want[8] = {0, 2, 2, -0.0f, -2, -2, 4, -3};
  int64_t n = 8;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_round(&r, a, 0, S));
  float got[8];
  OK(cmx_array_copy_to(r, got, sizeof got));
  for (int i = 0; i < 8; i++) CHECK(got[i] == want[i]);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  /* integers with negative decimals: half to even on the quotient, and
   * 10^-d beyond the range rounds everything to 0 */
  int64_t iv[6] = {150, 250, -150, 149, INT64_MAX, INT64_MIN};
  int64_t iw[6] = {200,
                   200,
                   -200,
                   100,
                   INT64_C(9223372036854775800),
                   -INT64_C(9223372036854775800)};
  n = 6;
  OK(cmx_array_from_data(&a, iv, &n, 1, CMX_INT64));
  OK(cmx_round(&r, a, -2, S));
  int64_t ig[6];
  OK(cmx_array_copy_to(r, ig, sizeof ig));
  for (int i = 0; i < 6; i++) CHECK(ig[i] == iw[i]);
  cmx_array_release(r);
  OK(cmx_round(&r, a, -25, S));
  OK(cmx_array_copy_to(r, ig, sizeof ig));
  for (int i = 0; i < 6; i++) CHECK(ig[i] == 0);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  /* extreme decimals: everything rounds to 0 / stays */
  OK(cmx_array_from_data(&a, iv, &n, 1, CMX_INT64));
  OK(cmx_round(&r, a, INT32_MIN, S));
  OK(cmx_array_copy_to(r, ig, sizeof ig));
  for (int i = 0; i < 6; i++) CHECK(ig[i] == 0);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  /* huge decimals leave floats unchanged */
  double d = 1.2345678901234;
  OK(cmx_array_from_data(&a, &d, NULL, 0, CMX_FLOAT64));
  OK(cmx_round(&r, a, 400, S));
  double dg;
  OK(cmx_array_item_double(r, &dg));
  CHECK(dg == d);
  cmx_array_release(r);
  OK(cmx_round(&r, a, INT32_MIN, S));
  OK(cmx_array_item_double(r, &dg));
  CHECK(dg == 0);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  /* identity results of weak scalars are ordinary (strong) arrays */
  cmx_array w;
  OK(cmx_array_weak_int(&w, 3));
  OK(cmx_floor(&r, w, S));
  CHECK(!cmx_array_is_weak(r) && cmx_array_dtype(r) == CMX_INT32);
  cmx_array_release(r);
  OK(cmx_positive(&r, w, S));
  CHECK(!cmx_array_is_weak(r));
  cmx_array_release_all((cmx_array[]){w, r}, 2);
}

/* ---------------- special values ---------------- */
typedef double (*d_fn)(double);
static double d_sigmoid(double x) {
  return 1 / (1 + exp(-x));
}
static double d_rsqrt(double x) {
  return 1 / sqrt(x);
}
static double d_sign(double x) {
  return sgn(x);
}
static double d_neg(double x) {
  return -x;
}
static double d_square(double x) {
  return x * x;
}

/* f32 and f64 specials through each op against the libm double function
 * (NaN propagation, infinities, signed zeros, domain errors). */
static void test_special_values(void) {
  static const double vals[] = {
      0.0,   -0.0,  1.0, -1.0, INFINITY, -INFINITY, NAN,  1e30,
      -1e30, 1e-40, 0.5, -0.5, 100.0,    -100.0,    88.0, -104.0};
  const int nv = (int)(sizeof vals / sizeof vals[0]);
  struct {
    const char* name;
    h_unary_fn fn;
    d_fn ref;
  } ops[] = {
      {"abs", cmx_abs, fabs},
      {"sign", cmx_sign, d_sign},
      {"negative", cmx_negative, d_neg},
      {"square", cmx_square, d_square},
      {"sqrt", cmx_sqrt, sqrt},
      {"rsqrt", cmx_rsqrt, d_rsqrt},
      {"exp", cmx_exp, exp},
      {"expm1", cmx_expm1, expm1},
      {"log", cmx_log, log},
      {"log2", cmx_log2, log2},
      {"log10", cmx_log10, log10},
      {"log1p", cmx_log1p, log1p},
      {"sin", cmx_sin, sin},
      {"cos", cmx_cos, cos},
      {"tan", cmx_tan, tan},
      {"arcsin", cmx_arcsin, asin},
      {"arccos", cmx_arccos, acos},
      {"arctan", cmx_arctan, atan},
      {"sinh", cmx_sinh, sinh},
      {"cosh", cmx_cosh, cosh},
      {"tanh", cmx_tanh, tanh},
      {"arcsinh", cmx_arcsinh, asinh},
      {"arccosh", cmx_arccosh, acosh},
      {"arctanh", cmx_arctanh, atanh},
      {"sigmoid", cmx_sigmoid, d_sigmoid},
      {"erf", cmx_erf, erf},
      {"erfinv", cmx_erfinv, bisect_erfinv},
      {"floor", cmx_floor, floor},
      {"ceil", cmx_ceil, ceil},
      {"trunc", cmx_trunc, trunc},
  };
  const cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT64};
  for (int t = 0; t < 2; t++) {
    cmx_dtype dt = dts[t];
    int64_t n = nv;
    h_tensor x = h_alloc(&n, 1, dt);
    for (int i = 0; i < nv; i++) x.re[i] = h_round_to(vals[i], dt);
    cmx_array a = h_array(&x, H_CONTIG);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      cmx_array r;
      OK(ops[k].fn(&r, a, S));
      h_tensor got = h_read(r);
      for (int i = 0; i < nv; i++) {
        double w = h_round_to(ops[k].ref(x.re[i]), dt);
        double g = got.re[i];
        bool ok = h_value_close(g, w, h_tol(dt) * 4, 1e-300);
        /* signed zeros must keep their sign */
        if (ok && w == 0 && g == 0) ok = signbit(w) == signbit(g);
        CHECK_MSG(ok, "%s(%s %g) = %.17g, want %.17g", ops[k].name,
                  cmx_dtype_name(dt), x.re[i], g, w);
      }
      h_free(&got);
      cmx_array_release(r);
    }
    /* predicates */
    cmx_array p[6];
    OK(cmx_isnan(&p[0], a, S));
    OK(cmx_isinf(&p[1], a, S));
    OK(cmx_isfinite(&p[2], a, S));
    OK(cmx_isposinf(&p[3], a, S));
    OK(cmx_isneginf(&p[4], a, S));
    OK(cmx_logical_not(&p[5], a, S));
    for (int k = 0; k < 6; k++) {
      h_tensor got = h_read(p[k]);
      CHECK(got.dtype == CMX_BOOL);
      for (int i = 0; i < nv; i++) {
        double v = x.re[i];
        bool w = k == 0   ? isnan(v)
                 : k == 1 ? isinf(v)
                 : k == 2 ? isfinite(v)
                 : k == 3 ? v == INFINITY
                 : k == 4 ? v == -INFINITY
                          : v == 0;
        CHECK_MSG(got.re[i] == w, "predicate %d of %g", k, v);
      }
      h_free(&got);
      cmx_array_release(p[k]);
    }
    cmx_array_release(a);
    h_free(&x);
  }
}

/* Predicates and parts on complex specials, and half-precision specials. */
static void test_special_complex_half(void) {
  float cv[12] = {1,        2, NAN, 0,         0,         NAN,
                  INFINITY, 0, 0,   -INFINITY, -INFINITY, 0};
  int64_t n = 6;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, cv, &n, 1, CMX_COMPLEX64));
  const bool want[5][6] = {
      {0, 1, 1, 0, 0, 0}, /* isnan */
      {0, 0, 0, 1, 1, 1}, /* isinf */
      {1, 0, 0, 0, 0, 0}, /* isfinite */
      {0, 0, 0, 1, 0, 0}, /* isposinf: inf+0j only */
      {0, 0, 0, 0, 0, 1}, /* isneginf */
  };
  h_unary_fn preds[5] = {cmx_isnan, cmx_isinf, cmx_isfinite, cmx_isposinf,
                         cmx_isneginf};
  for (int k = 0; k < 5; k++) {
    OK(preds[k](&r, a, S));
    uint8_t got[6];
    OK(cmx_array_copy_to(r, got, sizeof got));
    for (int i = 0; i < 6; i++)
      CHECK_MSG(got[i] == want[k][i], "pred %d elem %d", k, i);
    cmx_array_release(r);
  }
  cmx_array_release(a);
  /* float16 / bfloat16: exp overflow, log(0), NaN through */
  const cmx_dtype halves[2] = {CMX_FLOAT16, CMX_BFLOAT16};
  for (int t = 0; t < 2; t++) {
    int64_t m = 4;
    h_tensor x = h_alloc(&m, 1, halves[t]);
    x.re[0] = 100;
    x.re[1] = 0;
    x.re[2] = NAN;
    x.re[3] = -INFINITY;
    cmx_array h = h_array(&x, H_CONTIG), e, l;
    OK(cmx_exp(&e, h, S));
    OK(cmx_log(&l, h, S));
    h_tensor ge = h_read(e), gl = h_read(l);
    CHECK(ge.re[0] == INFINITY); /* beyond both formats' range */
    CHECK(ge.re[1] == 1 && isnan(ge.re[2]) && ge.re[3] == 0);
    CHECK(fabs(gl.re[0] - log(100)) < 2e-2 && gl.re[1] == -INFINITY &&
          isnan(gl.re[2]) && isnan(gl.re[3]));
    h_free(&ge);
    h_free(&gl);
    h_free(&x);
    cmx_array_release_all((cmx_array[]){h, e, l}, 3);
  }
}

/* ---------------- float32 accuracy sweeps ---------------- */

/* The spacing of float32 values at magnitude v (subnormal spacing below). */
static double float_ulp(double v) {
  int e;
  frexp(v == 0 ? 1e-45 : v, &e);
  double u = ldexp(1.0, e - 24);
  return u < ldexp(1.0, -149) ? ldexp(1.0, -149) : u;
}

/* got's error in ulps of want rounded to float32; results past float's
 * range must be infinite, NaN must stay NaN. */
static double ulps(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e9;
  if (want > 3.4028234663852886e38) return isinf(got) ? 0 : 1e9;
  return fabs(got - want) / float_ulp((float)want);
}

typedef cmx_status (*unary_op)(cmx_array*, cmx_array, cmx_stream);

/* op over every 61st float32 bit pattern (which covers each binade many
 * times) against the double function ref: returns the worst error in
 * ulps and where it is. Infinite and NaN references must come out exactly
 * (counted in *bad_special), subnormal inputs and results included. */
static double sweep_worst_ulp(unary_op op, double (*ref)(double),
                              float* worst_x, int64_t* bad_special) {
  const int64_t step = 61, n = (int64_t)(0x100000000ull / step);
  float* v = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)((uint64_t)i * step);
    memcpy(&v[i], &u, 4);
  }
  cmx_array a = NULL, r = NULL;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(op(&r, a, S));
  const float* g = NULL;
  OK(cmx_array_data(r, (const void**)&g));
  double worst = g ? 0 : 1e9;
  *worst_x = 0;
  *bad_special = 0;
  for (int64_t i = 0; g && i < n; i++) {
    double want = ref((double)v[i]);
    if (isinf(want) || isnan(want)) {
      *bad_special += isnan(want) ? !isnan(g[i]) : g[i] != (float)want;
      continue;
    }
    double e = ulps(g[i], want);
    if (e > worst) {
      worst = e;
      *worst_x = v[i];
    }
  }
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  free(v);
  return worst;
}

/* op on the m inputs ev into eg. */
static void run_on(unary_op op, const float* ev, float* eg, int64_t m) {
  cmx_array a = NULL, r = NULL;
  OK(cmx_array_from_data(&a, ev, &m, 1, CMX_FLOAT32));
  OK(op(&r, a, S));
  OK(cmx_array_copy_to(r, eg, (size_t)m * sizeof(float)));
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

/* exp on the default device: on the CPU (vmath.h) within 1.5 ulp
 * everywhere, subnormal results included; on the GPU within CUDA's
 * documented bound for expf, 2 ulp (measured 1.84 on an H100); the edges
 * (overflow, underflow, subnormals, infinities) within 1 ulp. */
static void test_exp_accuracy(void) {
  float wx;
  int64_t bad;
  double bound = cmx_default_device().type == CMX_GPU ? 2.0 : 1.5;
  double worst = sweep_worst_ulp(cmx_exp, exp, &wx, &bad);
  CHECK_MSG(worst <= bound, "exp max error %.3f ulp at %a (bound %.1f)", worst,
            wx, bound);
  CHECK_MSG(bad == 0, "exp: %lld wrong specials", (long long)bad);
  float ev[10] = {88.72f,  88.73f,  89.0f,   -87.3f,   -100.0f,
                  -103.9f, -104.0f, -200.0f, INFINITY, -INFINITY};
  float eg[10];
  run_on(cmx_exp, ev, eg, 10);
  for (int i = 0; i < 10; i++)
    CHECK_MSG(ulps(eg[i], exp((double)ev[i])) <= 1.0, "exp(%g) = %a", ev[i],
              eg[i]);
  CHECK(eg[2] == INFINITY && eg[7] == 0 && eg[9] == 0);
}

/* tanh (vmath.h: a series below 0.5625, exp-based above): within 2 ulp
 * everywhere; signs, saturation, -0, infinities and NaN exact. */
static void test_tanh_accuracy(void) {
  float wx;
  int64_t bad;
  double worst = sweep_worst_ulp(cmx_tanh, tanh, &wx, &bad);
  CHECK_MSG(worst <= 2.0, "tanh max error %.3f ulp at %a", worst, wx);
  CHECK_MSG(bad == 0, "tanh: %lld wrong specials", (long long)bad);
  float ev[8] = {0.0f, -0.0f, 20.0f, -20.0f, INFINITY, -INFINITY, NAN, 1e-30f};
  float eg[8];
  run_on(cmx_tanh, ev, eg, 8);
  CHECK(eg[0] == 0 && !signbit(eg[0]) && eg[1] == 0 && signbit(eg[1]));
  CHECK(eg[2] == 1 && eg[3] == -1 && eg[4] == 1 && eg[5] == -1);
  CHECK(isnan(eg[6]) && eg[7] == 1e-30f);
}

/* erf (vmath.h: a fit of erf(x)/x below 1, of erfc(x) e^(x^2) up to
 * 3.92, +-1 beyond): within 1.5 ulp everywhere; -0, infinities, NaN and
 * subnormals exact. */
static void test_erf_accuracy(void) {
  float wx;
  int64_t bad;
  double worst = sweep_worst_ulp(cmx_erf, erf, &wx, &bad);
  CHECK_MSG(worst <= 1.5, "erf max error %.3f ulp at %a", worst, wx);
  CHECK_MSG(bad == 0, "erf: %lld wrong specials", (long long)bad);
  float ev[8] = {0.0f, -0.0f, 3.92f, -5.0f, INFINITY, -INFINITY, NAN, -1e-40f};
  float eg[8];
  run_on(cmx_erf, ev, eg, 8);
  CHECK(eg[0] == 0 && !signbit(eg[0]) && eg[1] == 0 && signbit(eg[1]));
  CHECK(eg[2] == 1 && eg[3] == -1 && eg[4] == 1 && eg[5] == -1);
  CHECK(isnan(eg[6]) && ulps(eg[7], erf(-1e-40)) <= 1);
}

/* log (vmath.h): within 1 ulp (subnormal inputs included); 0, negatives,
 * infinities and NaN exact. */
static void test_log_accuracy(void) {
  float wx;
  int64_t bad;
  double worst = sweep_worst_ulp(cmx_log, log, &wx, &bad);
  CHECK_MSG(worst <= 1.0, "log max error %.3f ulp at %a", worst, wx);
  CHECK_MSG(bad == 0, "log: %lld wrong specials", (long long)bad);
  float ev[7] = {0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN, 1.0f};
  float eg[7];
  run_on(cmx_log, ev, eg, 7);
  CHECK(eg[0] == -INFINITY && eg[1] == -INFINITY && isnan(eg[2]));
  CHECK(eg[3] == INFINITY && isnan(eg[4]) && isnan(eg[5]) && eg[6] == 0);
}

/* logaddexp float32 (branch-free, on vmath.h's exp and log) on pairs
 * over many magnitudes and differences against double evaluation from
 * the float32 difference: within 3 ulp of the largest of the result, the
 * larger input m and log1p(e^d), the terms of m + log1p(e^d) (which
 * cancel where the result is near 0); equal inputs, infinities and NaN as
 * NumPy. */
static void test_logaddexp_accuracy(void) {
  enum { N = 200000 };
  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  uint64_t st = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < N; i++) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    double u1 = (double)(st >> 11) / 9007199254740992.0;
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    double u2 = (double)(st >> 11) / 9007199254740992.0;
    double scale = pow(10.0, (double)(i % 7) - 3); /* 1e-3 .. 1e3 */
    x[i] = (float)((u1 * 2 - 1) * scale);
    y[i] = (float)(x[i] + (u2 * 2 - 1) * pow(10.0, (double)(i % 5) - 2));
  }
  int64_t n = N;
  cmx_array a, b, r;
  OK(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32));
  OK(cmx_array_from_data(&b, y, &n, 1, CMX_FLOAT32));
  OK(cmx_logaddexp(&r, a, b, S));
  const float* g;
  OK(cmx_array_data(r, (const void**)&g));
  double worst = 0;
  int wi = 0;
  for (int i = 0; g && i < N; i++) {
    /* the difference rounded to float32 as any float32 logaddexp does
     * (NumPy's too); its rounding is amplified where the result cancels */
    double m = x[i] > y[i] ? x[i] : y[i], d = -fabsf(x[i] - y[i]);
    double want = m + log1p(exp(d));
    double scale = fmax(fmax(fabs(m), fabs(want)), want - m);
    double e = fabs(g[i] - want) / float_ulp(scale);
    if (e > worst) {
      worst = e;
      wi = i;
    }
  }
  CHECK_MSG(worst <= 3.0, "logaddexp max error %.3f ulp at (%a, %a)", worst,
            x[wi], y[wi]);
  cmx_array_release_all((cmx_array[]){a, b, r}, 3);
  free(x);
  free(y);
  float ex[6] = {INFINITY, -INFINITY, 1.0f, NAN, -INFINITY, 100.0f};
  float ey[6] = {INFINITY, -INFINITY, 1.0f, 1.0f, 3.0f, -100.0f};
  int64_t m = 6;
  OK(cmx_array_from_data(&a, ex, &m, 1, CMX_FLOAT32));
  OK(cmx_array_from_data(&b, ey, &m, 1, CMX_FLOAT32));
  OK(cmx_logaddexp(&r, a, b, S));
  float eg[6];
  OK(cmx_array_copy_to(r, eg, sizeof eg));
  CHECK(eg[0] == INFINITY && eg[1] == -INFINITY);
  CHECK(fabsf(eg[2] - (1.0f + (float)M_LN2)) <= 1.2e-7f);
  CHECK(isnan(eg[3]) && eg[4] == 3.0f && eg[5] == 100.0f);
  cmx_array_release_all((cmx_array[]){a, b, r}, 3);
}

/* ---------------- layouts beyond the harness ---------------- */
/* Broadcast (stride-0) inputs, chains that donate buffers, and a large
 * threaded run. */
static void test_layouts(void) {
  float v[3] = {0.5f, -1.0f, 2.0f};
  int64_t n = 3, shape[2] = {4, 3};
  cmx_array a, b, e, m;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_broadcast_to(&b, a, shape, 2, S));
  OK(cmx_exp(&e, b, S));
  float got[12];
  OK(cmx_array_copy_to(e, got, sizeof got));
  for (int i = 0; i < 12; i++)
    CHECK(fabs(got[i] - exp(v[i % 3])) < 1e-6 * exp(v[i % 3]));
  /* exp(-(exp(x))): the inner results are held only by the graph, so
   * their buffers are donated along the chain */
  cmx_array t1, t2;
  OK(cmx_exp(&t1, a, S));
  OK(cmx_negative(&t2, t1, S));
  cmx_array_release(t1);
  OK(cmx_exp(&m, t2, S));
  cmx_array_release(t2);
  float mg[3];
  OK(cmx_array_copy_to(m, mg, sizeof mg));
  for (int i = 0; i < 3; i++) CHECK(fabs(mg[i] - exp(-exp(v[i]))) < 1e-6);
  cmx_array_release_all((cmx_array[]){a, b, e, m}, 4);
}

/* ---------------- dtypes and errors ---------------- */
static void test_dtypes_errors(void) {
  int8_t iv[2] = {-3, 4};
  int64_t n = 2;
  cmx_array i8, bl, c, f, r;
  OK(cmx_array_from_data(&i8, iv, &n, 1, CMX_INT8));
  OK(cmx_astype(&bl, i8, CMX_BOOL, S));
  OK(cmx_astype(&c, i8, CMX_COMPLEX64, S));
  OK(cmx_astype(&f, i8, CMX_FLOAT16, S));
  struct {
    h_unary_fn fn;
    cmx_array in;
    cmx_dtype want;
  } dt_cases[] = {
      {cmx_exp, i8, CMX_FLOAT32},
      {cmx_exp, bl, CMX_FLOAT32},
      {cmx_exp, f, CMX_FLOAT16},
      {cmx_exp, c, CMX_COMPLEX64},
      {cmx_abs, i8, CMX_INT8},
      {cmx_abs, c, CMX_FLOAT32},
      {cmx_sign, bl, CMX_BOOL},
      {cmx_square, i8, CMX_INT8},
      {cmx_floor, i8, CMX_INT8},
      {cmx_ceil, f, CMX_FLOAT16},
      {cmx_isnan, i8, CMX_BOOL},
      {cmx_isinf, c, CMX_BOOL},
      {cmx_real, c, CMX_FLOAT32},
      {cmx_imag, c, CMX_FLOAT32},
      {cmx_real, i8, CMX_INT8},
      {cmx_imag, f, CMX_FLOAT16},
      {cmx_conjugate, c, CMX_COMPLEX64},
      {cmx_reciprocal, i8, CMX_FLOAT32},
      {cmx_degrees, i8, CMX_FLOAT32},
      {cmx_logical_not, f, CMX_BOOL},
      {cmx_bitwise_invert, bl, CMX_BOOL},
      {cmx_sigmoid, bl, CMX_FLOAT32},
  };
  for (size_t k = 0; k < sizeof dt_cases / sizeof dt_cases[0]; k++) {
    OK(dt_cases[k].fn(&r, dt_cases[k].in, S));
    CHECK_MSG(cmx_array_dtype(r) == dt_cases[k].want, "case %zu: %s", k,
              cmx_dtype_name(cmx_array_dtype(r)));
    OK(cmx_array_eval(r));
    cmx_array_release(r);
  }
  /* MLX's types: ValueError for these dtype errors */
  FAILS(cmx_negative(&r, bl, S), CMX_ERR_VALUE,
        "[negative] Not supported for bool");
  CHECK(r == NULL);
  FAILS(cmx_floor(&r, c, S), CMX_ERR_VALUE,
        "[floor] Not supported for complex64");
  FAILS(cmx_ceil(&r, c, S), CMX_ERR_VALUE, "[ceil]");
  FAILS(cmx_trunc(&r, c, S), CMX_ERR_VALUE, "[trunc]");
  /* round of complex64 rounds both parts (MLX) */
  OK(cmx_round(&r, c, 1, S));
  CHECK(cmx_array_dtype(r) == CMX_COMPLEX64);
  cmx_array_release(r);
  FAILS(cmx_erf(&r, c, S), CMX_ERR_VALUE, "[erf] Not supported for complex64");
  FAILS(cmx_erfinv(&r, c, S), CMX_ERR_VALUE, "[erfinv]");
  FAILS(cmx_bitwise_invert(&r, f, S), CMX_ERR_VALUE,
        "[bitwise_invert] Bitwise inverse only allowed on integer types");
  FAILS(cmx_exp(&r, NULL, S), CMX_ERR_VALUE, "[exp]");
  FAILS(cmx_exp(NULL, i8, S), CMX_ERR_VALUE, "[exp] output pointer is NULL");
  cmx_array_release_all((cmx_array[]){i8, bl, c, f}, 4);
}

/* Integer edge cases: negation and abs of INT_MIN wrap, squares wrap. */
static void test_int_edges(void) {
  int32_t v[4] = {INT32_MIN, INT32_MAX, -1, 65536};
  int64_t n = 4;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_INT32));
  int32_t g[4];
  OK(cmx_negative(&r, a, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(g[0] == INT32_MIN && g[1] == -INT32_MAX && g[2] == 1);
  cmx_array_release(r);
  OK(cmx_abs(&r, a, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(g[0] == INT32_MIN && g[1] == INT32_MAX && g[2] == 1);
  cmx_array_release(r);
  OK(cmx_square(&r, a, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(g[0] == 0 && g[1] == 1 && g[2] == 1 && g[3] == 0);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

int main(void) {
  RUN(test_table);
  RUN(test_round);
  if (h_shard_main()) { /* the tests outside the table groups */
    RUN(test_special_values);
    RUN(test_special_complex_half);
    RUN(test_exp_accuracy);
    RUN(test_tanh_accuracy);
    RUN(test_erf_accuracy);
    RUN(test_log_accuracy);
    RUN(test_logaddexp_accuracy);
    RUN(test_layouts);
    RUN(test_dtypes_errors);
    RUN(test_int_edges);
  }
  return test_summary("test_unary");
}
