/* CPU kernels of unary elementwise primitives.
 *
 * Each (primitive, input dtype) pair has a row function (ew_rows.h); the
 * tables below map a primitive id and an input dtype to it, and a missing
 * entry means the dtype is not supported (ops reject those earlier with a
 * clearer message). Integer and bool inputs of transcendental ops never get
 * here: the op layer converts them to float32 first, as MLX does.
 *
 * Precision: float16/bfloat16 compute in float32; float32 uses libm's
 * float functions except exp/sigmoid (the vectorisable cmx__vexpf);
 * complex64 computes in double complex and rounds, for accuracy.
 * Integer arithmetic that can overflow (negation, squares) runs in
 * unsigned 64-bit and wraps.
 *
 * Large contiguous float32 exp has its own driver, exp_large: see there.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ew_rows.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vmath.h"
#include "primitives/elementwise.h"
#include "primitives/registry.h"

/* ---------------- row generators by dtype group ---------------- */
#define UINT_ROWS(nm, EXPR)                                          \
  UN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, EXPR)     \
  UN_ROW(nm##_u16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, EXPR) \
  UN_ROW(nm##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, EXPR) \
  UN_ROW(nm##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, EXPR)
#define SINT_ROWS(nm, EXPR)                                       \
  UN_ROW(nm##_i8, int8_t, int8_t, int8_t, LD_ID, ST_ID, EXPR)     \
  UN_ROW(nm##_i16, int16_t, int16_t, int16_t, LD_ID, ST_ID, EXPR) \
  UN_ROW(nm##_i32, int32_t, int32_t, int32_t, LD_ID, ST_ID, EXPR) \
  UN_ROW(nm##_i64, int64_t, int64_t, int64_t, LD_ID, ST_ID, EXPR)
#define BOOL_ROW(nm, EXPR) \
  UN_ROW(nm##_bool, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, EXPR)
/* float16/bfloat16/float32 share the float expression FE; float64 uses
 * the double expression DE. */
#define FLOAT_ROWS(nm, FE, DE) FLOAT_ROWS_A(, nm, FE, DE)
/* FLOAT_ROWS_A(attributes of the float32 row, ...): CMX__SIMD_CLONES for
 * the compute-bound vectorised functions (vmath.h). */
#define FLOAT_ROWS_A(ATTR32, nm, FE, DE)                                      \
  UN_ROW_A(CMX__SIMD_CLONES, nm##_f16, uint16_t, uint16_t, float, LD_H, ST_H, \
           FE)                                                                \
  UN_ROW_A(CMX__SIMD_CLONES, nm##_bf16, uint16_t, uint16_t, float, LD_BF,     \
           ST_BF, FE)                                                         \
  UN_ROW_A(ATTR32, nm##_f32, float, float, float, LD_ID, ST_ID, FE)           \
  UN_ROW(nm##_f64, double, double, double, LD_ID, ST_ID, DE)
/* complex64 computed as double complex z (the input widened). */
#define C64_ROW(nm, ZE)                                        \
  UN_ROW(nm##_c64, cmx__c64, cmx__c64, cmx__c64, LD_ID, ST_ID, \
         cmx__cfromd(ZE(CMPLX(crealf(x), cimagf(x)))))

/* Rows with a bool output for every input dtype. */
#define TO_BOOL_ROWS(nm, IE, FE, DE, CE)                                       \
  UN_ROW(nm##_bool, uint8_t, uint8_t, uint8_t, LD_ID, ST_B, IE)                \
  UN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_B, IE)                  \
  UN_ROW(nm##_u16, uint16_t, uint8_t, uint16_t, LD_ID, ST_B, IE)               \
  UN_ROW(nm##_u32, uint32_t, uint8_t, uint32_t, LD_ID, ST_B, IE)               \
  UN_ROW(nm##_u64, uint64_t, uint8_t, uint64_t, LD_ID, ST_B, IE)               \
  UN_ROW(nm##_i8, int8_t, uint8_t, int8_t, LD_ID, ST_B, IE)                    \
  UN_ROW(nm##_i16, int16_t, uint8_t, int16_t, LD_ID, ST_B, IE)                 \
  UN_ROW(nm##_i32, int32_t, uint8_t, int32_t, LD_ID, ST_B, IE)                 \
  UN_ROW(nm##_i64, int64_t, uint8_t, int64_t, LD_ID, ST_B, IE)                 \
  UN_ROW_A(CMX__SIMD_CLONES, nm##_f16, uint16_t, uint8_t, float, LD_H, ST_B,   \
           FE)                                                                 \
  UN_ROW_A(CMX__SIMD_CLONES, nm##_bf16, uint16_t, uint8_t, float, LD_BF, ST_B, \
           FE)                                                                 \
  UN_ROW(nm##_f32, float, uint8_t, float, LD_ID, ST_B, FE)                     \
  UN_ROW(nm##_f64, double, uint8_t, double, LD_ID, ST_B, DE)                   \
  UN_ROW(nm##_c64, cmx__c64, uint8_t, cmx__c64, LD_ID, ST_B, CE)

/* Table entries. */
#define UINT_T(nm)                                                         \
  [CMX_UINT8] = nm##_u8, [CMX_UINT16] = nm##_u16, [CMX_UINT32] = nm##_u32, \
  [CMX_UINT64] = nm##_u64
#define SINT_T(nm)                                                      \
  [CMX_INT8] = nm##_i8, [CMX_INT16] = nm##_i16, [CMX_INT32] = nm##_i32, \
  [CMX_INT64] = nm##_i64
#define BOOL_T(nm) [CMX_BOOL] = nm##_bool
#define FLOAT_T(nm)                                     \
  [CMX_FLOAT16] = nm##_f16, [CMX_BFLOAT16] = nm##_bf16, \
  [CMX_FLOAT32] = nm##_f32, [CMX_FLOAT64] = nm##_f64
#define C64_T(nm) [CMX_COMPLEX64] = nm##_c64
#define ALL_T(nm) BOOL_T(nm), UINT_T(nm), SINT_T(nm), FLOAT_T(nm), C64_T(nm)

/* Wrapping negation and product for signed integers (no overflow UB). */
#define NEGW(x) (0ull - (uint64_t)(x))
#define MULW(x, y) ((uint64_t)(x) * (uint64_t)(y))

/* ---------------- scalar helpers ---------------- */
static inline float signf_(float x) {
  return x > 0 ? 1.0f : x < 0 ? -1.0f : x; /* keeps -0, 0 and NaN */
}
static inline double sign_(double x) {
  return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
}
static inline double _Complex csign_(double _Complex z) {
  double m = cabs(z);
  return m == 0 ? z : z / m;
}
/* sigmoid as e / (1 + e) with e = exp(-|x|) <= 1: no overflow, and tiny
 * results for very negative x stay accurate (subnormals included). */
CMX__KINLINE float sigmoidf_(float x) {
  float e = cmx__vexpf(-fabsf(x));
  return (x >= 0 ? 1.0f : e) / (1.0f + e);
}
static inline double sigmoid_(double x) {
  double e = exp(-fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
static inline double _Complex csq_(double _Complex z) {
  return z * z;
}
static inline double _Complex cneg_(double _Complex z) {
  return -z;
}
static inline double _Complex crsqrt_(double _Complex z) {
  return 1.0 / csqrt(z);
}
static inline double _Complex csigmoid_(double _Complex z) {
  return 1.0 / (1.0 + cexp(-z));
}
static inline double _Complex clog2_(double _Complex z) {
  return clog(z) / M_LN2;
}
static inline double _Complex clog10_(double _Complex z) {
  return clog(z) / M_LN10;
}
/* exp(z) - 1 without cancellation for small z: the real part is
 * expm1(x) cos(y) - 2 sin^2(y/2). */
static inline double _Complex cexpm1_(double _Complex z) {
  double x = creal(z), y = cimag(z), h = sin(0.5 * y);
  return CMPLX(expm1(x) * cos(y) - 2.0 * h * h, exp(x) * sin(y));
}
/* log(1 + z) accurate for small z: |1+z|^2 = 1 + (2x + x^2 + y^2). */
static inline double _Complex clog1p_(double _Complex z) {
  double x = creal(z), y = cimag(z);
  double im = atan2(y, 1.0 + x);
  if (cabs(z) < 0.5) return CMPLX(0.5 * log1p(x * (2.0 + x) + y * y), im);
  return CMPLX(log(hypot(1.0 + x, y)), im);
}

/* erfinv: a closed-form first guess (Winitzki's approximation), then
 * Halley steps on erf(y) = x; for |x| > 0.5 the residual is taken with
 * erfc so that values near +-1 keep full precision. */
static double erfinv_(double x) {
  if (x != x || x < -1 || x > 1) return NAN;
  if (x == 1) return INFINITY;
  if (x == -1) return -INFINITY;
  if (x == 0) return x;
  double ax = fabs(x), a = 0.147;
  double l = log1p(-ax) + log1p(ax); /* log(1 - x^2) */
  double t = 2.0 / (M_PI * a) + 0.5 * l;
  double y = sqrt(sqrt(t * t - l / a) - t);
  for (int i = 0; i < 3; i++) {
    double f = ax <= 0.5 ? erf(y) - ax : (1.0 - ax) - erfc(y);
    double d = 1.1283791670955126 * exp(-y * y); /* 2/sqrt(pi) e^-y^2 */
    if (d == 0) break;
    y -= f / (d + y * f);
  }
  return copysign(y, x);
}

/* ---------------- arithmetic ---------------- */
BOOL_ROW(abs, x)
UINT_ROWS(abs, x)
SINT_ROWS(abs, x < 0 ? NEGW(x) : (uint64_t)x)
FLOAT_ROWS(abs, fabsf(x), fabs(x))
UN_ROW(abs_c64, cmx__c64, float, cmx__c64, LD_ID, ST_ID,
       (float)hypot(crealf(x), cimagf(x)))

BOOL_ROW(sign, x)
UINT_ROWS(sign, x > 0)
SINT_ROWS(sign, (x > 0) - (x < 0))
FLOAT_ROWS(sign, signf_(x), sign_(x))
C64_ROW(sign, csign_)

UINT_ROWS(negative, NEGW(x))
SINT_ROWS(negative, NEGW(x))
FLOAT_ROWS(negative, -x, -x)
C64_ROW(negative, cneg_)

BOOL_ROW(square, x)
UINT_ROWS(square, MULW(x, x))
SINT_ROWS(square, MULW(x, x))
FLOAT_ROWS(square, x* x, x* x)
C64_ROW(square, csq_)

/* ---------------- float functions ---------------- */
/* A float function with libm float/double versions and a complex one. */
#define MATH_ROWS(nm, ff, df, cf) \
  FLOAT_ROWS(nm, ff(x), df(x))    \
  C64_ROW(nm, cf)
MATH_ROWS(sqrt, sqrtf, sqrt, csqrt)
FLOAT_ROWS(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
C64_ROW(rsqrt, crsqrt_)
UN_ROW_A(CMX__SIMD_CLONES, exp_f16, uint16_t, uint16_t, float, LD_H, ST_H,
         cmx__vexpf(x))
UN_ROW(exp_bf16, uint16_t, uint16_t, float, LD_BF, ST_BF, cmx__vexpf(x))
/* e^x for x in [-87, 88] (NaN propagates too), where 2^k is a normal
 * float: cmx__vexpf (vmath.h) without the clamp and with one scaling by 2^k
 * instead of two, the same operations otherwise, so the same value (the
 * two-step scaling multiplies by the same power of two and rounds once if
 * at all). About a third fewer operations. */
static inline float vexpf_fast(float x) {
  const float shifter = 12582912.0f; /* 0x1.8p23 */
  float t = x * 1.44269504088896341f + shifter;
  float kf = t - shifter;
  float r = x - kf * 0.693145751953125f;
  r = r - kf * 1.428606765330187045e-6f;
  float q = 1.98412698412698413e-4f;
  q = q * r + 1.38888888888888889e-3f;
  q = q * r + 8.33333333333333333e-3f;
  q = q * r + 4.16666666666666667e-2f;
  q = q * r + 1.66666666666666667e-1f;
  q = q * r + 0.5f;
  float pr = 1.0f + (r + r * r * q);
  /* the biased exponent k + 127 from t's low bits (k is its integer) */
  return pr * cmx__bitsf((cmx__fbits(t) - 0x4B400000u + 127u) << 23);
}

/* float32 exp, contiguous: each stretch of EXP_CHUNK elements whose
 * inputs all lie in [-87, 88] is computed with vexpf_fast; a stretch with
 * any other value (infinities, inputs giving subnormal or infinite
 * results) with cmx__vexpf. NaN compares false and comes out NaN either
 * way. In the common case this is about twice as fast as cmx__vexpf alone
 * (AVX2 and AVX-512: the clamp and the second scaling were a third of the
 * work), with the same values. With pf (arrays too big to be in cache),
 * the input EXP_PF bytes ahead is prefetched as it goes (one hint per
 * cache line): the hardware prefetchers alone leave a core's stream short
 * of memory bandwidth. */
#define EXP_CHUNK 2048
#define EXP_SUB 256
#define EXP_PF 16384
#define EXP_PF_MIN ((int64_t)4 << 20) /* elements (16 MiB) */

/* Hints the `bytes` bytes EXP_PF past p into the L2 cache (the addresses
 * may lie past the array: a prefetch never faults); L2, not non-temporal,
 * as reduce_impl.c's prefetch_ahead says why. */
static inline void exp_prefetch(const float* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64)
    __builtin_prefetch((const char*)((uintptr_t)p + EXP_PF + b), 0, 2);
}

/* Separate input and output: one pass computes the short form and checks
 * the range, a stretch that fails is computed again from its input. */
CMX__SIMD_CLONES static void exp_apart(float* restrict o,
                                       const float* restrict a, int64_t n,
                                       bool pf) {
  for (int64_t s = 0; s < n; s += EXP_CHUNK) {
    const int64_t m = n - s < EXP_CHUNK ? n - s : EXP_CHUNK;
    const float* as = a + s;
    float* os = o + s;
    int out = 0;
    for (int64_t c = 0; c < m; c += EXP_SUB) {
      const int64_t e = m - c < EXP_SUB ? m : c + EXP_SUB;
      if (pf) exp_prefetch(as + c, (e - c) * 4);
      for (int64_t i = c; i < e; i++) {
        os[i] = vexpf_fast(as[i]);
        out |= (as[i] < -87.0f) | (as[i] > 88.0f);
      }
    }
    if (out)
      for (int64_t i = 0; i < m; i++) os[i] = cmx__vexpf(as[i]);
  }
}

/* In place (the output took over the input's buffer): the range of a
 * stretch is checked before it is overwritten. */
CMX__SIMD_CLONES static void exp_inplace(float* x, int64_t n, bool pf) {
  for (int64_t s = 0; s < n; s += EXP_CHUNK) {
    const int64_t m = n - s < EXP_CHUNK ? n - s : EXP_CHUNK;
    float* xs = x + s;
    if (pf) exp_prefetch(xs, m * 4);
    int out = 0;
    for (int64_t i = 0; i < m; i++) out |= (xs[i] < -87.0f) | (xs[i] > 88.0f);
    if (out)
      for (int64_t i = 0; i < m; i++) xs[i] = cmx__vexpf(xs[i]);
    else
      for (int64_t i = 0; i < m; i++) xs[i] = vexpf_fast(xs[i]);
  }
}

/* Contiguous float32 exp, o and a the same array or not overlapping. */
static void exp_contig(float* o, const float* a, int64_t n, bool pf) {
  if (o == a)
    exp_inplace(o, n, pf);
  else
    exp_apart(o, a, n, pf);
}

CMX__SIMD_CLONES static void exp_f32(char* const* p, const int64_t* st,
                                     int64_t n, const void* ctx) {
  (void)ctx;
  float* o = (float*)p[0];
  const float* a = (const float*)p[1];
  if (st[0] == 1 && st[1] == 1) {
    exp_contig(o, a, n, n >= EXP_PF_MIN);
    return;
  }
  for (int64_t i = 0; i < n; i++) o[i * st[0]] = cmx__vexpf(a[i * st[1]]);
}
UN_ROW(exp_f64, double, double, double, LD_ID, ST_ID, exp(x))
C64_ROW(exp, cexp)
MATH_ROWS(expm1, expm1f, expm1, cexpm1_)
FLOAT_ROWS_A(CMX__SIMD_CLONES, log, cmx__vlogf(x), log(x))
C64_ROW(log, clog)
MATH_ROWS(log2, log2f, log2, clog2_)
MATH_ROWS(log10, log10f, log10, clog10_)
MATH_ROWS(log1p, log1pf, log1p, clog1p_)
MATH_ROWS(sin, sinf, sin, csin)
MATH_ROWS(cos, cosf, cos, ccos)
MATH_ROWS(tan, tanf, tan, ctan)
MATH_ROWS(arcsin, asinf, asin, casin)
MATH_ROWS(arccos, acosf, acos, cacos)
MATH_ROWS(arctan, atanf, atan, catan)
MATH_ROWS(sinh, sinhf, sinh, csinh)
MATH_ROWS(cosh, coshf, cosh, ccosh)
FLOAT_ROWS_A(CMX__SIMD_CLONES, tanh, cmx__vtanhf(x), tanh(x))
C64_ROW(tanh, ctanh)
MATH_ROWS(arcsinh, asinhf, asinh, casinh)
MATH_ROWS(arccosh, acoshf, acosh, cacosh)
MATH_ROWS(arctanh, atanhf, atanh, catanh)
UN_ROW_A(CMX__SIMD_CLONES, sigmoid_f16, uint16_t, uint16_t, float, LD_H, ST_H,
         sigmoidf_(x))
UN_ROW(sigmoid_bf16, uint16_t, uint16_t, float, LD_BF, ST_BF, sigmoidf_(x))
UN_ROW_A(CMX__SIMD_CLONES, sigmoid_f32, float, float, float, LD_ID, ST_ID,
         sigmoidf_(x))
UN_ROW(sigmoid_f64, double, double, double, LD_ID, ST_ID, sigmoid_(x))
C64_ROW(sigmoid, csigmoid_)
FLOAT_ROWS(erf, erff(x), erf(x))
FLOAT_ROWS(erfinv, (float)erfinv_(x), erfinv_(x))
FLOAT_ROWS(floor, floorf(x), floor(x))
FLOAT_ROWS(ceil, ceilf(x), ceil(x))
FLOAT_ROWS(trunc, truncf(x), trunc(x))

/* ---------------- round ---------------- */
typedef struct {
  int decimals;
  uint64_t q; /* 10^-decimals for integers (decimals < 0); 0: too big */
} round_ctx;

/* x rounded half to even to `d` decimals (negative: tens, hundreds ...).
 * Large d where x * 10^d overflows leave x unchanged; 10^-d beyond the
 * range of doubles gives 0. */
static inline double round_dec(double x, const round_ctx* c) {
  int d = c->decimals;
  if (d == 0 || !isfinite(x)) return rint(x);
  if (d > 0) {
    double s = pow(10.0, d), y = x * s;
    return isfinite(y) ? rint(y) / s : x;
  }
  double s = pow(10.0, -d);
  return isinf(s) ? copysign(0.0, x) : rint(x / s) * s;
}
static inline float round_decf(float x, const round_ctx* c) {
  return c->decimals == 0 ? rintf(x) : (float)round_dec(x, c);
}

/* Magnitude m rounded half to even to a multiple of q (wraps on
 * overflow, as integer arithmetic does). */
static inline uint64_t round_mag(uint64_t m, uint64_t q) {
  if (q == 0) return 0;
  uint64_t r = m % q, b = m - r;
  if (r > q - r || (r == q - r && ((b / q) & 1))) b += q;
  return b;
}
static inline uint64_t round_u(uint64_t x, const round_ctx* c) {
  return c->decimals >= 0 ? x : round_mag(x, c->q);
}
static inline uint64_t round_s(int64_t x, const round_ctx* c) {
  if (c->decimals >= 0) return (uint64_t)x;
  uint64_t b = round_mag(x < 0 ? NEGW(x) : (uint64_t)x, c->q);
  return x < 0 ? 0 - b : b;
}
#define RC ((const round_ctx*)ctx)
BOOL_ROW(round, round_u(x, RC))
UINT_ROWS(round, round_u(x, RC))
SINT_ROWS(round, round_s(x, RC))
FLOAT_ROWS(round, round_decf(x, RC), round_dec(x, RC))

/* ---------------- predicates ---------------- */
static inline bool cisnan_(cmx__c64 z) {
  return isnan(crealf(z)) || isnan(cimagf(z));
}
static inline bool cisinf_(cmx__c64 z) {
  return isinf(crealf(z)) || isinf(cimagf(z));
}
static inline bool cisfinite_(cmx__c64 z) {
  return isfinite(crealf(z)) && isfinite(cimagf(z));
}
TO_BOOL_ROWS(isnan, ((void)x, 0), isnan(x), isnan(x), cisnan_(x))
TO_BOOL_ROWS(isinf, ((void)x, 0), isinf(x), isinf(x), cisinf_(x))
TO_BOOL_ROWS(isfinite, ((void)x, 1), isfinite(x), isfinite(x), cisfinite_(x))
/* Complex values count as +-inf when equal to them (zero imaginary part),
 * as MLX's equal(a, inf). */
TO_BOOL_ROWS(isposinf, ((void)x, 0), x == INFINITY, x == INFINITY,
             crealf(x) == INFINITY && cimagf(x) == 0)
TO_BOOL_ROWS(isneginf, ((void)x, 0), x == -INFINITY, x == -INFINITY,
             crealf(x) == -INFINITY && cimagf(x) == 0)
TO_BOOL_ROWS(logical_not, x == 0, x == 0, x == 0,
             crealf(x) == 0 && cimagf(x) == 0)

/* ---------------- complex parts, bits ---------------- */
UN_ROW(conjugate_c64, cmx__c64, cmx__c64, cmx__c64, LD_ID, ST_ID,
       cmx__cmake(crealf(x), -cimagf(x)))
UN_ROW(real_c64, cmx__c64, float, cmx__c64, LD_ID, ST_ID, crealf(x))
UN_ROW(imag_c64, cmx__c64, float, cmx__c64, LD_ID, ST_ID, cimagf(x))
/* Imag of a real array: zeros of its dtype (16-bit floats: +0 is 0). */
#define ZERO ((void)x, 0)
BOOL_ROW(imag, ZERO)
UINT_ROWS(imag, ZERO)
SINT_ROWS(imag, ZERO)
UN_ROW(imag_f16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, ZERO)
UN_ROW(imag_bf16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, ZERO)
UN_ROW(imag_f32, float, float, float, LD_ID, ST_ID, ZERO)
UN_ROW(imag_f64, double, double, double, LD_ID, ST_ID, ZERO)

BOOL_ROW(bitwise_invert, !x)
UINT_ROWS(bitwise_invert, ~x)
SINT_ROWS(bitwise_invert, ~x)

/* ---------------- tables ---------------- */
#define TABLE(nm, ...) \
  static const cmx__row_fn nm##_t[CMX_NUM_DTYPES] = {__VA_ARGS__};
#define MATH_T(nm) TABLE(nm, FLOAT_T(nm), C64_T(nm))
TABLE(abs, ALL_T(abs))
TABLE(sign, ALL_T(sign))
TABLE(negative, UINT_T(negative), SINT_T(negative), FLOAT_T(negative),
      C64_T(negative))
TABLE(square, ALL_T(square))
MATH_T(sqrt)
MATH_T(rsqrt)
MATH_T(exp)
MATH_T(expm1)
MATH_T(log)
MATH_T(log2)
MATH_T(log10)
MATH_T(log1p)
MATH_T(sin)
MATH_T(cos)
MATH_T(tan)
MATH_T(arcsin)
MATH_T(arccos)
MATH_T(arctan)
MATH_T(sinh)
MATH_T(cosh)
MATH_T(tanh)
MATH_T(arcsinh)
MATH_T(arccosh)
MATH_T(arctanh)
MATH_T(sigmoid)
TABLE(erf, FLOAT_T(erf))
TABLE(erfinv, FLOAT_T(erfinv))
TABLE(floor, FLOAT_T(floor))
TABLE(ceil, FLOAT_T(ceil))
TABLE(trunc, FLOAT_T(trunc))
TABLE(round, BOOL_T(round), UINT_T(round), SINT_T(round), FLOAT_T(round))
TABLE(isnan, ALL_T(isnan))
TABLE(isinf, ALL_T(isinf))
TABLE(isfinite, ALL_T(isfinite))
TABLE(isposinf, ALL_T(isposinf))
TABLE(isneginf, ALL_T(isneginf))
TABLE(logical_not, ALL_T(logical_not))
TABLE(conjugate, C64_T(conjugate))
TABLE(real, C64_T(real))
TABLE(imag, ALL_T(imag))
TABLE(bitwise_invert, BOOL_T(bitwise_invert), UINT_T(bitwise_invert),
      SINT_T(bitwise_invert))

static const cmx__row_fn* const k_rows[CMX__NUM_PRIMITIVES] = {
    [CMX__P_Abs] = abs_t,
    [CMX__P_Sign] = sign_t,
    [CMX__P_Negative] = negative_t,
    [CMX__P_Square] = square_t,
    [CMX__P_Sqrt] = sqrt_t,
    [CMX__P_Rsqrt] = rsqrt_t,
    [CMX__P_Exp] = exp_t,
    [CMX__P_Expm1] = expm1_t,
    [CMX__P_Log] = log_t,
    [CMX__P_Log2] = log2_t,
    [CMX__P_Log10] = log10_t,
    [CMX__P_Log1p] = log1p_t,
    [CMX__P_Sin] = sin_t,
    [CMX__P_Cos] = cos_t,
    [CMX__P_Tan] = tan_t,
    [CMX__P_ArcSin] = arcsin_t,
    [CMX__P_ArcCos] = arccos_t,
    [CMX__P_ArcTan] = arctan_t,
    [CMX__P_Sinh] = sinh_t,
    [CMX__P_Cosh] = cosh_t,
    [CMX__P_Tanh] = tanh_t,
    [CMX__P_ArcSinh] = arcsinh_t,
    [CMX__P_ArcCosh] = arccosh_t,
    [CMX__P_ArcTanh] = arctanh_t,
    [CMX__P_Sigmoid] = sigmoid_t,
    [CMX__P_Erf] = erf_t,
    [CMX__P_ErfInv] = erfinv_t,
    [CMX__P_Floor] = floor_t,
    [CMX__P_Ceil] = ceil_t,
    [CMX__P_Trunc] = trunc_t,
    [CMX__P_Round] = round_t,
    [CMX__P_IsNan] = isnan_t,
    [CMX__P_IsInf] = isinf_t,
    [CMX__P_IsFinite] = isfinite_t,
    [CMX__P_IsPosInf] = isposinf_t,
    [CMX__P_IsNegInf] = isneginf_t,
    [CMX__P_LogicalNot] = logical_not_t,
    [CMX__P_Conjugate] = conjugate_t,
    [CMX__P_Real] = real_t,
    [CMX__P_Imag] = imag_t,
    [CMX__P_BitwiseInvert] = bitwise_invert_t,
};

/* ---------------- large contiguous float32 exp ----------------
 * exp is the hot transcendental (softmax), and on big arrays it runs near
 * memory speed only if its arithmetic is cheap enough, so the contiguous
 * float32 case of large arrays has its own driver: workers take blocks of
 * EXP_BLK elements from a shared counter (a thread that starts late, woken
 * from an idle core, or is slowed on a busy machine takes fewer instead
 * of holding up the result), each computed by exp_contig (see there). */
#define EXP_BLK ((int64_t)1 << 16)

typedef struct {
  float* o;
  const float* a;
  int64_t n, nblk;
  _Atomic int64_t next;
} exp_job;

/* Pool task: takes blocks until none is left. */
static void exp_task(void* ctx, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  exp_job* j = ctx;
  for (;;) {
    int64_t blk = atomic_fetch_add(&j->next, 1);
    if (blk >= j->nblk) break;
    int64_t s = blk * EXP_BLK;
    exp_contig(j->o + s, j->a + s, j->n - s < EXP_BLK ? j->n - s : EXP_BLK,
               j->n >= EXP_PF_MIN);
  }
}

/* exp of a contiguous float32 array into a contiguous output. */
static void exp_large(float* o, const float* a, int64_t n) {
  exp_job j;
  memset(&j, 0, sizeof j);
  j.o = o;
  j.a = a;
  j.n = n;
  j.nblk = (n + EXP_BLK - 1) / EXP_BLK;
  int threads = cmx__pool_threads();
  if (threads > j.nblk) threads = (int)j.nblk;
  if (threads > 1)
    cmx__parallel_for(threads, 1, exp_task, &j);
  else
    exp_task(&j, 0, 1);
}

/* Looks up the row function, allocates the output (donating the input's
 * buffer when possible) and runs the elementwise driver. */
static cmx_status run_unary(const cmx_primitive* p, const cmx_array* in,
                            const cmx_array* out, const void* ctx) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  const cmx__row_fn* t =
      vt->id >= 0 && vt->id < CMX__NUM_PRIMITIVES ? k_rows[vt->id] : NULL;
  cmx__row_fn fn = t ? t[in[0]->dtype] : NULL;
  if (!fn)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", vt->name,
                            cmx_dtype_name(in[0]->dtype));
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 1);
  if (st != CMX_OK) return st;
  if (vt->id == CMX__P_Exp && in[0]->dtype == CMX_FLOAT32 &&
      out[0]->size >= 2 * EXP_BLK && (in[0]->flags & CMX__FLAG_ROW_CONTIG) &&
      (out[0]->flags & CMX__FLAG_ROW_CONTIG)) {
    exp_large(cmx__node_ptr(out[0]), cmx__node_ptr(in[0]), out[0]->size);
    return CMX_OK;
  }
  cmx__cpu_ew_run(out[0], in, 1, fn, ctx);
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_unary) {
  (void)nin;
  (void)nout;
  return run_unary(p, in, out, NULL);
}

CMX__KERNEL(cmx__cpu_round) {
  (void)nin;
  (void)nout;
  const cmx__round_params* rp = cmx_primitive_params(p);
  /* Beyond +-400 decimals every double is unchanged / rounds to 0; the
   * clamp also keeps the negations below defined. */
  int d = rp->decimals < -400 ? -400 : rp->decimals > 400 ? 400 : rp->decimals;
  round_ctx c = {d, 0};
  if (c.decimals < 0) {
    /* 10^20 exceeds every 64-bit magnitude's rounding range: q = 0
     * stands for "everything rounds to 0". */
    uint64_t q = 1;
    for (int i = 0; i < -c.decimals && q; i++)
      q = q > UINT64_MAX / 10 ? 0 : q * 10;
    c.q = q;
  }
  return run_unary(p, in, out, &c);
}
