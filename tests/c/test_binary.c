/* Binary elementwise ops: every op on every dtype it accepts over the
 * harness shapes, layouts and broadcasting pairs, against double (or long
 * double) references; result dtypes with promotion and weak scalars; NaN
 * propagation; integer division by zero and INT_MIN / -1; negative integer
 * powers; shifts by out-of-range counts; error messages. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT
typedef double _Complex dc;

static void put(dc z, double* o, double* oi) {
  *o = creal(z);
  *oi = cimag(z);
}

/* The dtype of the case being checked, for references that depend on it
 * (bit widths, signedness). */
static cmx_dtype g_dt;
static int bits_of(cmx_dtype dt) {
  return (int)cmx_dtype_size(dt) * 8;
}
static bool is_unsigned(cmx_dtype dt) {
  return dt >= CMX_UINT8 && dt <= CMX_UINT64;
}

#define REF2(name, ...)                                                   \
  static void name(double ar, double ai, double br, double bi, double* o, \
                   double* oi) {                                          \
    dc x = CMPLX(ar, ai), y = CMPLX(br, bi);                              \
    (void)x;                                                              \
    (void)y;                                                              \
    *oi = 0;                                                              \
    __VA_ARGS__;                                                          \
  }

REF2(ref_sub, put(x - y, o, oi))
REF2(ref_sub_bool, *o = (ar != 0) != (br != 0))
REF2(ref_mul, put(CMPLX(ar* br - ai * bi, ar* bi + ai * br), o, oi))
REF2(ref_mul_bool, *o = ar != 0 && br != 0)
/* Complex division from its definition. */
REF2(ref_div, {
  if (ai == 0 && bi == 0) {
    *o = ar / br;
  } else {
    double d = br * br + bi * bi;
    *o = (ar * br + ai * bi) / d;
    *oi = (ai * br - ar * bi) / d;
  }
})
/* Floor division: integers by zero give 0; floats through long double. */
REF2(ref_floordiv, {
  if (!cmx_dtype_is_floating(g_dt))
    *o = br == 0 ? 0 : floorl((long double)ar / br);
  else
    *o = br == 0 ? ar / br : (double)floorl((long double)ar / br);
})
REF2(ref_rem, {
  if (!cmx_dtype_is_floating(g_dt)) {
    *o = br == 0 ? ar : ar - floorl((long double)ar / br) * br; /* MLX */
  } else if (br == 0) {
    *o = NAN;
  } else {
    long double q = floorl((long double)ar / br);
    *o = (double)(ar - q * br);
  }
})
/* Powers: integers by repeated multiplication (wrapping through int64 is
 * exact for the ranges used), floats by pow, complex by exp(y log x). */
REF2(ref_pow, {
  if (g_dt == CMX_COMPLEX64) {
    dc l = CMPLX(log(hypot(ar, ai)), atan2(ai, ar));
    dc e = y * l;
    put(exp(creal(e)) * CMPLX(cos(cimag(e)), sin(cimag(e))), o, oi);
  } else if (g_dt == CMX_BOOL) {
    *o = ar != 0 || br == 0;
  } else if (cmx_dtype_is_integer(g_dt)) {
    uint64_t r = 1;
    for (int64_t k = 0; k < (int64_t)br; k++) r *= (uint64_t)(int64_t)ar;
    *o = is_unsigned(g_dt) ? (double)r : (double)(int64_t)r;
  } else {
    *o = pow(ar, br);
  }
})
static bool lex_gt(double ar, double ai, double br, double bi) {
  return ar > br || (ar == br && ai > bi);
}
REF2(ref_max, {
  if (isnan(ar) || isnan(ai)) {
    *o = ar, *oi = ai;
  } else if (isnan(br) || isnan(bi)) {
    *o = br, *oi = bi;
  } else if (lex_gt(br, bi, ar, ai)) {
    *o = br, *oi = bi;
  } else {
    *o = ar, *oi = ai;
  }
})
REF2(ref_min, {
  if (isnan(ar) || isnan(ai)) {
    *o = ar, *oi = ai;
  } else if (isnan(br) || isnan(bi)) {
    *o = br, *oi = bi;
  } else if (lex_gt(ar, ai, br, bi)) {
    *o = br, *oi = bi;
  } else {
    *o = ar, *oi = ai;
  }
})
REF2(ref_atan2, *o = atan2(ar, br))
REF2(ref_logaddexp, *o = (double)logl(expl(ar) + expl(br)))
REF2(ref_eq, *o = ar == br && ai == bi)
REF2(ref_ne, *o = !(ar == br && ai == bi))
REF2(ref_lt, *o = lex_gt(br, bi, ar, ai))
REF2(ref_le, *o = lex_gt(br, bi, ar, ai) || (ar == br && ai == bi))
REF2(ref_gt, *o = lex_gt(ar, ai, br, bi))
REF2(ref_ge, *o = lex_gt(ar, ai, br, bi) || (ar == br && ai == bi))
REF2(ref_land, *o = (ar != 0 || ai != 0) && (br != 0 || bi != 0))
REF2(ref_lor, *o = (ar != 0 || ai != 0) || (br != 0 || bi != 0))
REF2(ref_lxor, *o = (ar != 0 || ai != 0) != (br != 0 || bi != 0))
REF2(ref_band, *o = (double)((int64_t)ar & (int64_t)br))
REF2(ref_bor, *o = (double)((int64_t)ar | (int64_t)br))
REF2(ref_bxor, *o = (double)((int64_t)ar ^ (int64_t)br))
/* Shifts by their definition: multiplication / floor division by 2^y,
 * reduced modulo 2^bits; out-of-range counts as documented. */
REF2(ref_lsh, {
  int bits = bits_of(g_dt);
  if (br < 0 || br >= bits) {
    *o = 0;
  } else {
    uint64_t v = (uint64_t)(int64_t)ar;
    for (int k = 0; k < (int)br; k++) v *= 2;
    *o = is_unsigned(g_dt) ? (double)v : (double)(int64_t)v;
  }
})
REF2(ref_rsh, {
  int bits = bits_of(g_dt);
  if (br < 0 || br >= bits)
    *o = ar < 0 ? -1 : 0;
  else
    *o = floor(ar / ldexp(1.0, (int)br));
})

static cmx_dtype float_dtype(cmx_dtype d) {
  return cmx_dtype_is_inexact(d) ? d : CMX_FLOAT32;
}

typedef struct {
  const char* name;
  h_binary_fn fn;
  h_ref2 ref;
  const cmx_dtype* dtypes;
  h_out_dtype out;
  double alo, ahi, blo, bhi, tol;
} binary_case;

/* Runs one case dtype by dtype, so references can read g_dt. Subtract
 * and multiply round correctly on every backend (complex products are
 * formed in double on both): the GPU's results equal the CPU's bit for
 * bit. */
static void run_case(const binary_case* c) {
  h_devices_exact =
      !strcmp(c->name, "subtract") || !strcmp(c->name, "multiply");
  for (int i = 0; c->dtypes[i] != CMX_NUM_DTYPES; i++) {
    cmx_dtype one[2] = {c->dtypes[i], CMX_NUM_DTYPES};
    g_dt = c->dtypes[i];
    h_check_binary(c->name, c->fn, c->ref, one, c->out, c->alo, c->ahi, c->blo,
                   c->bhi, c->tol);
  }
  h_devices_exact = false;
}

static const cmx_dtype NO_BOOL[] = {
    CMX_UINT8,   CMX_UINT16,  CMX_UINT32,    CMX_UINT64,    CMX_INT8,
    CMX_INT16,   CMX_INT32,   CMX_INT64,     CMX_FLOAT16,   CMX_BFLOAT16,
    CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype ONLY_BOOL[] = {CMX_BOOL, CMX_NUM_DTYPES};
static const cmx_dtype INTS_BOOL[] = {
    CMX_BOOL, CMX_UINT8, CMX_UINT16, CMX_UINT32, CMX_UINT64,
    CMX_INT8, CMX_INT16, CMX_INT32,  CMX_INT64,  CMX_NUM_DTYPES};
static const cmx_dtype INTS_32[] = {CMX_UINT8,     CMX_UINT16, CMX_UINT32,
                                    CMX_INT8,      CMX_INT16,  CMX_INT32,
                                    CMX_NUM_DTYPES};
static const cmx_dtype INTS_64[] = {CMX_UINT64, CMX_INT64, CMX_NUM_DTYPES};
static const cmx_dtype FLOATS_C[] = {CMX_FLOAT16,   CMX_BFLOAT16,
                                     CMX_FLOAT32,   CMX_FLOAT64,
                                     CMX_COMPLEX64, CMX_NUM_DTYPES};

static void test_arith_table(void) {
  const binary_case cases[] = {
      /* integers wrap: the ranges overflow the narrow types */
      {"subtract", cmx_subtract, ref_sub, NO_BOOL, h_same_dtype, -200, 200,
       -200, 200, 1},
      {"subtract", cmx_subtract, ref_sub_bool, ONLY_BOOL, h_same_dtype, 0, 1, 0,
       1, 0},
      {"multiply", cmx_multiply, ref_mul, NO_BOOL, h_same_dtype, -300, 300,
       -300, 300, 1},
      {"multiply", cmx_multiply, ref_mul_bool, ONLY_BOOL, h_same_dtype, 0, 1, 0,
       1, 0},
      /* integers divide in float32; zero divisors give inf / nan */
      {"divide", cmx_divide, ref_div, H_ALL, float_dtype, -50, 50, -5, 5, 1},
      {"floor_divide", cmx_floor_divide, ref_floordiv, H_REAL, h_same_dtype,
       -130, 130, -6, 6, 1},
      {"remainder", cmx_remainder, ref_rem, H_REAL, h_same_dtype, -130, 130, -6,
       6, 1},
      {"power", cmx_power, ref_pow, INTS_BOOL, h_same_dtype, -12, 12, 0, 5, 0},
      {"power", cmx_power, ref_pow, FLOATS_C, h_same_dtype, 0.1, 3, -3, 3, 4},
      {"maximum", cmx_maximum, ref_max, H_ALL, h_same_dtype, -3, 3, -3, 3, 0},
      {"minimum", cmx_minimum, ref_min, H_ALL, h_same_dtype, -3, 3, -3, 3, 0},
      {"arctan2", cmx_arctan2, ref_atan2, H_REAL, float_dtype, -5, 5, -5, 5, 1},
      {"logaddexp", cmx_logaddexp, ref_logaddexp, H_REAL, float_dtype, -10, 10,
       -10, 10, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case(&cases[i]);
}

static void test_compare_table(void) {
  /* Small integer ranges make ties frequent. */
  const binary_case cases[] = {
      {"equal", cmx_equal, ref_eq, H_ALL, h_bool_dtype, -2, 2, -2, 2, 0},
      {"not_equal", cmx_not_equal, ref_ne, H_ALL, h_bool_dtype, -2, 2, -2, 2,
       0},
      {"less", cmx_less, ref_lt, H_ALL, h_bool_dtype, -2, 2, -2, 2, 0},
      {"less_equal", cmx_less_equal, ref_le, H_ALL, h_bool_dtype, -2, 2, -2, 2,
       0},
      {"greater", cmx_greater, ref_gt, H_ALL, h_bool_dtype, -2, 2, -2, 2, 0},
      {"greater_equal", cmx_greater_equal, ref_ge, H_ALL, h_bool_dtype, -2, 2,
       -2, 2, 0},
      {"logical_and", cmx_logical_and, ref_land, H_ALL, h_bool_dtype, -1, 1, -1,
       1, 0},
      {"logical_or", cmx_logical_or, ref_lor, H_ALL, h_bool_dtype, -1, 1, -1, 1,
       0},
      {"logical_xor", cmx_logical_xor, ref_lxor, H_ALL, h_bool_dtype, -1, 1, -1,
       1, 0},
      {"bitwise_and", cmx_bitwise_and, ref_band, INTS_BOOL, h_same_dtype, -1000,
       1000, -1000, 1000, 0},
      {"bitwise_or", cmx_bitwise_or, ref_bor, INTS_BOOL, h_same_dtype, -1000,
       1000, -1000, 1000, 0},
      {"bitwise_xor", cmx_bitwise_xor, ref_bxor, INTS_BOOL, h_same_dtype, -1000,
       1000, -1000, 1000, 0},
      /* counts from -2 to past the width; 64-bit values near +-2^63 do not
       * survive the harness's double round trip, so 64-bit counts stop at
       * 56 here and the edges are checked in test_shift_edges */
      {"left_shift", cmx_left_shift, ref_lsh, INTS_32, h_same_dtype, -100, 100,
       -2, 40, 0},
      {"left_shift", cmx_left_shift, ref_lsh, INTS_64, h_same_dtype, -100, 100,
       -2, 56, 0},
      {"right_shift", cmx_right_shift, ref_rsh, INTS_32, h_same_dtype, -1000,
       1000, -2, 40, 0},
      {"right_shift", cmx_right_shift, ref_rsh, INTS_64, h_same_dtype, -1000,
       1000, -2, 70, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case(&cases[i]);
}

/* ---------------- helpers for explicit cases ---------------- */
static cmx_array arr(const void* data, int64_t n, cmx_dtype dt) {
  cmx_array a;
  OK(cmx_array_from_data(&a, data, &n, 1, dt));
  return a;
}

/* Result dtypes under promotion and weak scalars. */
static void test_result_dtypes(void) {
  int8_t i8v[2] = {1, 2};
  uint8_t u8v[2] = {1, 2};
  float f32v[2] = {1, 2};
  uint16_t f16v[2] = {0x3c00, 0x4000};
  cmx_array i8 = arr(i8v, 2, CMX_INT8), u8 = arr(u8v, 2, CMX_UINT8);
  cmx_array f32 = arr(f32v, 2, CMX_FLOAT32), f16 = arr(f16v, 2, CMX_FLOAT16);
  cmx_array bl, w2, wf, c;
  OK(cmx_astype(&bl, i8, CMX_BOOL, S));
  OK(cmx_array_weak_int(&w2, 2));
  OK(cmx_array_weak_float(&wf, 0.5));
  OK(cmx_astype(&c, i8, CMX_COMPLEX64, S));
  struct {
    h_binary_fn fn;
    cmx_array a, b;
    cmx_dtype want;
  } cases[] = {
      {cmx_subtract, i8, u8, CMX_INT16},
      {cmx_multiply, i8, w2, CMX_INT8},
      {cmx_multiply, f16, wf, CMX_FLOAT16},
      {cmx_divide, i8, u8, CMX_FLOAT32},
      {cmx_divide, i8, w2, CMX_FLOAT32},
      {cmx_divide, f16, w2, CMX_FLOAT16},
      {cmx_floor_divide, i8, w2, CMX_INT8},
      {cmx_floor_divide, f32, i8, CMX_FLOAT32},
      {cmx_remainder, u8, w2, CMX_UINT8},
      {cmx_power, i8, w2, CMX_INT8},
      {cmx_power, i8, wf, CMX_FLOAT32},
      {cmx_maximum, bl, i8, CMX_INT8},
      {cmx_arctan2, i8, i8, CMX_FLOAT32},
      {cmx_logaddexp, f16, f16, CMX_FLOAT16},
      {cmx_equal, f16, wf, CMX_BOOL},
      {cmx_less, i8, f32, CMX_BOOL},
      {cmx_logical_and, i8, f32, CMX_BOOL},
      {cmx_logical_or, f16, f16, CMX_BOOL},
      {cmx_bitwise_and, i8, u8, CMX_INT16},
      {cmx_bitwise_or, bl, bl, CMX_BOOL},
      {cmx_left_shift, bl, bl, CMX_UINT8},
      {cmx_right_shift, u8, w2, CMX_UINT8},
      {cmx_add, c, f32, CMX_COMPLEX64},
      {cmx_multiply, c, wf, CMX_COMPLEX64},
      {cmx_equal, c, c, CMX_BOOL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cmx_array r;
    OK(cases[k].fn(&r, cases[k].a, cases[k].b, S));
    CHECK_MSG(cmx_array_dtype(r) == cases[k].want, "case %zu: got %s", k,
              cmx_dtype_name(cmx_array_dtype(r)));
    OK(cmx_array_eval(r));
    cmx_array_release(r);
  }
  cmx_array_release_all((cmx_array[]){i8, u8, f32, f16, bl, w2, wf, c}, 8);
}

/* Integer division and remainder by zero give 0; INT_MIN // -1 wraps to
 * INT_MIN and INT_MIN % -1 is 0; signs follow NumPy. */
static void test_int_division(void) {
  int32_t a[8] = {7, -7, 7, -7, INT32_MIN, INT32_MIN, 5, 0};
  int32_t b[8] = {2, 2, -2, -2, -1, 0, 0, 0};
  int32_t q_want[8] = {3, -4, -4, 3, INT32_MIN, 0, 0, 0};
  int32_t r_want[8] = {1, 1, -1, -1, 0, INT32_MIN, 5, 0}; /* x % 0 = x */
  cmx_array x = arr(a, 8, CMX_INT32), y = arr(b, 8, CMX_INT32), q, r;
  OK(cmx_floor_divide(&q, x, y, S));
  OK(cmx_remainder(&r, x, y, S));
  int32_t qg[8], rg[8];
  OK(cmx_array_copy_to(q, qg, sizeof qg));
  OK(cmx_array_copy_to(r, rg, sizeof rg));
  for (int i = 0; i < 8; i++) {
    CHECK_MSG(qg[i] == q_want[i], "%d // %d = %d", a[i], b[i], qg[i]);
    CHECK_MSG(rg[i] == r_want[i], "%d %% %d = %d", a[i], b[i], rg[i]);
  }
  cmx_array_release_all((cmx_array[]){x, y, q, r}, 4);
  int64_t a64[2] = {INT64_MIN, INT64_MIN}, b64[2] = {-1, 0};
  x = arr(a64, 2, CMX_INT64);
  y = arr(b64, 2, CMX_INT64);
  OK(cmx_floor_divide(&q, x, y, S));
  OK(cmx_remainder(&r, x, y, S));
  int64_t q64[2], r64[2];
  OK(cmx_array_copy_to(q, q64, sizeof q64));
  OK(cmx_array_copy_to(r, r64, sizeof r64));
  CHECK(q64[0] == INT64_MIN && q64[1] == 0 && r64[0] == 0 &&
        r64[1] == INT64_MIN);
  cmx_array_release_all((cmx_array[]){x, y, q, r}, 4);
  /* floats: NumPy's floor division through fmod (1 // 0.1 == 9), sign of
   * the divisor for remainders, x // 0 = +-inf or nan */
  double fa[5] = {1.0, -7.5, 7.5, 3.0, 0.0}, fb[5] = {0.1, 2.0, -2.0, 0.0, 0.0};
  double fq[5] = {9.0, -4.0, -4.0, INFINITY, NAN};
  double fr[5] = {0.09999999999999995, 0.5, -0.5, NAN, NAN};
  x = arr(fa, 5, CMX_FLOAT64);
  y = arr(fb, 5, CMX_FLOAT64);
  OK(cmx_floor_divide(&q, x, y, S));
  OK(cmx_remainder(&r, x, y, S));
  double dq[5], dr[5];
  OK(cmx_array_copy_to(q, dq, sizeof dq));
  OK(cmx_array_copy_to(r, dr, sizeof dr));
  for (int i = 0; i < 5; i++) {
    CHECK_MSG(h_value_close(dq[i], fq[i], 1e-15, 0), "%g // %g = %g", fa[i],
              fb[i], dq[i]);
    CHECK_MSG(h_value_close(dr[i], fr[i], 1e-12, 0), "%g %% %g = %.17g", fa[i],
              fb[i], dr[i]);
  }
  cmx_array_release_all((cmx_array[]){x, y, q, r}, 4);
}

/* Negative integer exponents: truncated 1 / x^-e. */
static void test_int_power(void) {
  int32_t b[6] = {2, 1, -1, -1, 0, -3}, e[6] = {-1, -3, -3, -2, -1, 3};
  int32_t want[6] = {0, 0, 0, 0, 0, -27}; /* negative exponents: 0 (MLX) */
  cmx_array x = arr(b, 6, CMX_INT32), y = arr(e, 6, CMX_INT32), r;
  OK(cmx_power(&r, x, y, S));
  int32_t g[6];
  OK(cmx_array_copy_to(r, g, sizeof g));
  for (int i = 0; i < 6; i++)
    CHECK_MSG(g[i] == want[i], "%d ** %d = %d", b[i], e[i], g[i]);
  cmx_array_release_all((cmx_array[]){x, y, r}, 3);
  /* wrapping: 3 ** 41 modulo 2^64 */
  uint64_t ub = 3, ue = 41, w = 1;
  for (int i = 0; i < 41; i++) w *= 3;
  x = arr(&ub, 1, CMX_UINT64);
  y = arr(&ue, 1, CMX_UINT64);
  OK(cmx_power(&r, x, y, S));
  uint64_t ug;
  OK(cmx_array_copy_to(r, &ug, sizeof ug));
  CHECK(ug == w);
  cmx_array_release_all((cmx_array[]){x, y, r}, 3);
  /* complex: integer exponents exactly, 0 ** 0 == 1 */
  float cv[4] = {1, 1, 0, 0}, ce[4] = {2, 0, 0, 0};
  x = arr(cv, 2, CMX_COMPLEX64);
  y = arr(ce, 2, CMX_COMPLEX64);
  OK(cmx_power(&r, x, y, S));
  float cg[4];
  OK(cmx_array_copy_to(r, cg, sizeof cg));
  CHECK(cg[0] == 0 && cg[1] == 2 && cg[2] == 1 && cg[3] == 0);
  cmx_array_release_all((cmx_array[]){x, y, r}, 3);
}

/* Shifts at the edges: counts of width-1, width, beyond, negative. */
static void test_shift_edges(void) {
  int64_t a[6] = {1, 3, -1, -8, INT64_MIN, 5};
  int64_t c[6] = {63, 63, 64, 100, 63, -1};
  int64_t lw[6] = {INT64_MIN, INT64_MIN, 0, 0, 0, 0};
  int64_t rw[6] = {0, 0, -1, -1, -1, 0};
  cmx_array x = arr(a, 6, CMX_INT64), y = arr(c, 6, CMX_INT64), l, r;
  OK(cmx_left_shift(&l, x, y, S));
  OK(cmx_right_shift(&r, x, y, S));
  int64_t lg[6], rg[6];
  OK(cmx_array_copy_to(l, lg, sizeof lg));
  OK(cmx_array_copy_to(r, rg, sizeof rg));
  for (int i = 0; i < 6; i++) {
    CHECK_MSG(lg[i] == lw[i], "%lld << %lld = %lld", (long long)a[i],
              (long long)c[i], (long long)lg[i]);
    CHECK_MSG(rg[i] == rw[i], "%lld >> %lld = %lld", (long long)a[i],
              (long long)c[i], (long long)rg[i]);
  }
  cmx_array_release_all((cmx_array[]){x, y, l, r}, 4);
  uint8_t ua[3] = {0x81, 0x81, 0xff}, uc[3] = {1, 8, 7};
  uint8_t ulw[3] = {0x02, 0, 0x80}, urw[3] = {0x40, 0, 1};
  x = arr(ua, 3, CMX_UINT8);
  y = arr(uc, 3, CMX_UINT8);
  OK(cmx_left_shift(&l, x, y, S));
  OK(cmx_right_shift(&r, x, y, S));
  uint8_t ulg[3], urg[3];
  OK(cmx_array_copy_to(l, ulg, 3));
  OK(cmx_array_copy_to(r, urg, 3));
  for (int i = 0; i < 3; i++) CHECK(ulg[i] == ulw[i] && urg[i] == urw[i]);
  cmx_array_release_all((cmx_array[]){x, y, l, r}, 4);
}

/* maximum/minimum propagate NaN from either side, in every float dtype. */
static void test_nan_propagation(void) {
  for (int di = 0; FLOATS_C[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = FLOATS_C[di];
    int64_t n = 4;
    h_tensor x = h_alloc(&n, 1, dt), y = h_alloc(&n, 1, dt);
    double xv[4] = {NAN, 1, NAN, -INFINITY}, yv[4] = {1, NAN, NAN, 2};
    for (int i = 0; i < 4; i++) {
      x.re[i] = xv[i];
      y.re[i] = yv[i];
    }
    cmx_array a = h_array(&x, H_CONTIG), b = h_array(&y, H_CONTIG), mx, mn, eq,
              ne;
    OK(cmx_maximum(&mx, a, b, S));
    OK(cmx_minimum(&mn, a, b, S));
    OK(cmx_equal(&eq, a, b, S));
    OK(cmx_not_equal(&ne, a, b, S));
    h_tensor gx = h_read(mx), gn = h_read(mn), ge = h_read(eq),
             gne = h_read(ne);
    for (int i = 0; i < 3; i++) {
      CHECK_MSG(isnan(gx.re[i]) && isnan(gn.re[i]), "%s elem %d",
                cmx_dtype_name(dt), i);
      CHECK(ge.re[i] == 0 && gne.re[i] == 1);
    }
    CHECK(gx.re[3] == 2 && gn.re[3] == -INFINITY);
    h_free(&gx);
    h_free(&gn);
    h_free(&ge);
    h_free(&gne);
    h_free(&x);
    h_free(&y);
    cmx_array_release_all((cmx_array[]){a, b, mx, mn, eq, ne}, 6);
  }
  /* logaddexp with infinities */
  double la[4] = {-INFINITY, INFINITY, -INFINITY, 1000},
         lb[4] = {-INFINITY, 1, 3, 1000};
  cmx_array a = arr(la, 4, CMX_FLOAT64), b = arr(lb, 4, CMX_FLOAT64), r;
  OK(cmx_logaddexp(&r, a, b, S));
  double g[4];
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(g[0] == -INFINITY && g[1] == INFINITY && g[2] == 3 &&
        fabs(g[3] - (1000 + M_LN2)) < 1e-12);
  cmx_array_release_all((cmx_array[]){a, b, r}, 3);
}

/* Logical ops on mixed dtypes and exact zeros of every dtype. */
static void test_logical_mixed(void) {
  float f[4] = {0.0f, -0.0f, 0.25f, NAN};
  int8_t i[4] = {1, 0, 0, 5};
  cmx_array a = arr(f, 4, CMX_FLOAT32), b = arr(i, 4, CMX_INT8), r1, r2, r3;
  OK(cmx_logical_and(&r1, a, b, S));
  OK(cmx_logical_or(&r2, a, b, S));
  OK(cmx_logical_xor(&r3, a, b, S));
  uint8_t g1[4], g2[4], g3[4];
  OK(cmx_array_copy_to(r1, g1, 4));
  OK(cmx_array_copy_to(r2, g2, 4));
  OK(cmx_array_copy_to(r3, g3, 4));
  const uint8_t w1[4] = {0, 0, 0, 1}, w2[4] = {1, 0, 1, 1},
                w3[4] = {1, 0, 1, 0};
  for (int k = 0; k < 4; k++)
    CHECK(g1[k] == w1[k] && g2[k] == w2[k] && g3[k] == w3[k]);
  cmx_array_release_all((cmx_array[]){a, b, r1, r2, r3}, 5);
}

/* Large operands exercise threading and the scalar-vector loops. */
static void test_large(void) {
  int64_t n = 1 << 20;
  float* v = malloc((size_t)n * sizeof(float));
  for (int64_t k = 0; k < n; k++) v[k] = (float)(k % 1000) * 0.5f;
  cmx_array a = arr(v, n, CMX_FLOAT32), s2, r1, r2;
  OK(cmx_array_from_double(&s2, 3.0, CMX_FLOAT32));
  OK(cmx_subtract(&r1, a, s2, S));
  OK(cmx_subtract(&r2, s2, a, S));
  const float *g1, *g2;
  OK(cmx_array_data(r1, (const void**)&g1));
  OK(cmx_array_data(r2, (const void**)&g2));
  bool ok = true;
  for (int64_t k = 0; k < n && ok; k++)
    ok = g1[k] == v[k] - 3.0f && g2[k] == 3.0f - v[k];
  CHECK(ok);
  cmx_array_release_all((cmx_array[]){a, s2, r1, r2}, 4);
  free(v);
}

static void test_errors(void) {
  float f[6] = {1, 2, 3, 4, 5, 6};
  int64_t sh[2] = {2, 3};
  cmx_array a, b = arr(f, 4, CMX_FLOAT32), c, r;
  OK(cmx_array_from_data(&a, f, sh, 2, CMX_FLOAT32));
  OK(cmx_astype(&c, b, CMX_COMPLEX64, S));
  FAILS(cmx_subtract(&r, a, b, S), CMX_ERR_VALUE,
        "[subtract] shapes (2,3) and (4) cannot be broadcast.");
  CHECK(r == NULL);
  FAILS(cmx_less(&r, a, b, S), CMX_ERR_VALUE, "[less] shapes");
  FAILS(cmx_bitwise_and(&r, a, a, S), CMX_ERR_RUNTIME,
        "[bitwise_and] Only allowed on integer or boolean types but got "
        "types float32 and float32.");
  /* MLX's exception types: RuntimeError for the integer-only ops,
   * ValueError for other dtype errors */
  FAILS(cmx_left_shift(&r, a, a, S), CMX_ERR_RUNTIME,
        "[left_shift] Only allowed");
  FAILS(cmx_right_shift(&r, c, c, S), CMX_ERR_RUNTIME, "[right_shift]");
  FAILS(cmx_bitwise_xor(&r, c, c, S), CMX_ERR_RUNTIME, "[bitwise_xor]");
  FAILS(cmx_remainder(&r, c, b, S), CMX_ERR_VALUE, "[remainder]");
  FAILS(cmx_arctan2(&r, c, c, S), CMX_ERR_VALUE, "[arctan2]");
  /* complex floor_divide (a division) and logaddexp compute (MLX) */
  OK(cmx_floor_divide(&r, c, c, S));
  CHECK(cmx_array_dtype(r) == CMX_COMPLEX64);
  cmx_array_release(r);
  OK(cmx_logaddexp(&r, c, c, S));
  CHECK(cmx_array_dtype(r) == CMX_COMPLEX64);
  cmx_array_release(r);
  FAILS(cmx_add(&r, a, NULL, S), CMX_ERR_VALUE, "[add]");
  cmx_array_release_all((cmx_array[]){a, b, c}, 3);
}

int main(void) {
  RUN(test_arith_table);
  RUN(test_compare_table);
  if (h_shard_main()) { /* the tests outside the table groups */
    RUN(test_result_dtypes);
    RUN(test_int_division);
    RUN(test_int_power);
    RUN(test_shift_edges);
    RUN(test_nan_propagation);
    RUN(test_logical_mixed);
    RUN(test_large);
    RUN(test_errors);
  }
  return test_summary("test_binary");
}
