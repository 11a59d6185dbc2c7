/* CPU kernels of the arithmetic binary primitives (Add ... LogAddExp).
 *
 * Each (op, dtype) pair gets a row function (BIN_ROW in ew_rows.h) with
 * four layout cases (contiguous, scalar-vector, vector-scalar, strided) so
 * the compiler vectorises the common ones. float16/bfloat16 compute in
 * float32. Integer arithmetic never hits undefined behaviour: sums and
 * products run in unsigned types and wrap; division and remainder by zero
 * give 0 (as NumPy's result, without its warning), and INT_MIN / -1 wraps.
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions), so the branch-free selects of the fmod rows
 * vectorise. Values are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <math.h>

#include "backend/cpu/ew_rows.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vmath.h"
#include "primitives/registry.h"

/* Arithmetic over every dtype with per-dtype compute types: integers in
 * unsigned types of at least their width (CT8 and CT16 for 8- and 16-bit
 * ones, which a product must widen to unsigned int: uint16 operands
 * promote to int, where 65535 * 65535 overflows), floats natively, halves
 * in float32. */
#define ARITH_ROWS(nm, CT8, CT16, EXPR, BOOL_EXPR)                             \
  BIN_ROW(nm##_bool, uint8_t, uint8_t, unsigned, LD_ID, ST_ID, BOOL_EXPR)      \
  BIN_ROW(nm##_u8, uint8_t, uint8_t, CT8, LD_ID, ST_ID, EXPR)                  \
  BIN_ROW(nm##_u16, uint16_t, uint16_t, CT16, LD_ID, ST_ID, EXPR)              \
  BIN_ROW(nm##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, EXPR)          \
  BIN_ROW(nm##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, EXPR)          \
  BIN_ROW(nm##_i8, int8_t, int8_t, CT8, LD_ID, ST_ID, EXPR)                    \
  BIN_ROW(nm##_i16, int16_t, int16_t, CT16, LD_ID, ST_ID, EXPR)                \
  BIN_ROW(nm##_i32, int32_t, int32_t, uint32_t, LD_ID, ST_ID, EXPR)            \
  BIN_ROW(nm##_i64, int64_t, int64_t, uint64_t, LD_ID, ST_ID, EXPR)            \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_f16, uint16_t, uint16_t, float, LD_H, ST_H, \
            EXPR)                                                              \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_bf16, uint16_t, uint16_t, float, LD_BF,     \
            ST_BF, EXPR)                                                       \
  BIN_ROW(nm##_f32, float, float, float, LD_ID, ST_ID, EXPR)                   \
  BIN_ROW(nm##_f64, double, double, double, LD_ID, ST_ID, EXPR)

/* Integer rows computing in the (signed or unsigned) type itself, through
 * helpers taking 64-bit values: UE for unsigned, SE for signed, BE bool. */
#define INT_ROWS(nm, UE, SE, BE)                                    \
  BIN_ROW(nm##_bool, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, BE)   \
  BIN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, UE)     \
  BIN_ROW(nm##_u16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, UE) \
  BIN_ROW(nm##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, UE) \
  BIN_ROW(nm##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, UE) \
  BIN_ROW(nm##_i8, int8_t, int8_t, int8_t, LD_ID, ST_ID, SE)        \
  BIN_ROW(nm##_i16, int16_t, int16_t, int16_t, LD_ID, ST_ID, SE)    \
  BIN_ROW(nm##_i32, int32_t, int32_t, int32_t, LD_ID, ST_ID, SE)    \
  BIN_ROW(nm##_i64, int64_t, int64_t, int64_t, LD_ID, ST_ID, SE)
/* Float rows: FE for float16/bfloat16/float32 (in float), DE for float64. */
#define FLOAT_ROWS(nm, FE, DE) FLOAT_ROWS_A(, nm, FE, DE)
/* FLOAT_ROWS_A(attributes of the float32 row, ...): CMX__SIMD_CLONES for
 * compute-bound rows built on the vectorised functions of vmath.h. */
#define FLOAT_ROWS_A(ATTR32, nm, FE, DE)                                       \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_f16, uint16_t, uint16_t, float, LD_H, ST_H, \
            FE)                                                                \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_bf16, uint16_t, uint16_t, float, LD_BF,     \
            ST_BF, FE)                                                         \
  BIN_ROW_A(ATTR32, nm##_f32, float, float, float, LD_ID, ST_ID, FE)           \
  BIN_ROW(nm##_f64, double, double, double, LD_ID, ST_ID, DE)
#define C64_ROW(nm, CE) \
  BIN_ROW(nm##_c64, cmx__c64, cmx__c64, cmx__c64, LD_ID, ST_ID, CE)

#define INT_T(nm)                                                         \
  [CMX_BOOL] = nm##_bool, [CMX_UINT8] = nm##_u8, [CMX_UINT16] = nm##_u16, \
  [CMX_UINT32] = nm##_u32, [CMX_UINT64] = nm##_u64, [CMX_INT8] = nm##_i8, \
  [CMX_INT16] = nm##_i16, [CMX_INT32] = nm##_i32, [CMX_INT64] = nm##_i64
#define FLOAT_T(nm)                                     \
  [CMX_FLOAT16] = nm##_f16, [CMX_BFLOAT16] = nm##_bf16, \
  [CMX_FLOAT32] = nm##_f32, [CMX_FLOAT64] = nm##_f64
#define C64_T(nm) [CMX_COMPLEX64] = nm##_c64
#define ALL_T(nm) INT_T(nm), FLOAT_T(nm), C64_T(nm)

/* ---------------- integer helpers ---------------- */
/* Floor division (NumPy): rounds toward -inf; y == 0 gives 0; y == -1
 * negates with wrap-around so INT_MIN / -1 stays defined. */
static inline int64_t fdiv_s(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return (int64_t)(0ull - (uint64_t)x);
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
  return q;
}
static inline uint64_t fdiv_u(uint64_t x, uint64_t y) {
  return y == 0 ? 0 : x / y;
}
/* Remainder with the sign of the divisor (NumPy); y == 0 gives 0. */
static inline int64_t rem_s(int64_t x, int64_t y) {
  if (y == 0 || y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
static inline uint64_t rem_u(uint64_t x, uint64_t y) {
  return y == 0 ? 0 : x % y;
}
/* Integer power by squaring, wrapping. Negative exponents give the
 * truncated value of 1 / x^-e: 1 for x == 1, +-1 for x == -1, else 0
 * (including 0 ** negative, in line with division by zero giving 0). */
static inline uint64_t ipow_u(uint64_t x, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= x;
    e >>= 1;
    x *= x;
  }
  return r;
}
static inline int64_t ipow_s(int64_t x, int64_t e) {
  if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
  return (int64_t)ipow_u((uint64_t)x, (uint64_t)e);
}

/* ---------------- float helpers ---------------- */
/* Floor division as NumPy computes it (through fmod, so 1 // 0.1 == 9
 * like Python); y == 0 gives x / y (inf or nan). */
static inline double fdiv_d(double x, double y) {
  if (y == 0) return x / y;
  double mod = fmod(x, y), div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return copysign(0.0, x / y);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1.0 : fl;
}
/* Remainder with the sign of the divisor; y == 0 gives nan. */
static inline double rem_d(double x, double y) {
  double mod = fmod(x, y);
  if (mod != 0) return (y < 0) != (mod < 0) ? mod + y : mod;
  return copysign(0.0, y);
}
static inline float rem_f(float x, float y) {
  float mod = fmodf(x, y);
  if (mod != 0) return (y < 0) != (mod < 0) ? mod + y : mod;
  return copysignf(0.0f, y);
}
/* float32 (and 16-bit float) floor_divide and remainder without the
 * library's fmod (~60 instructions and unpredictable branches an
 * element): blocks of FM_BLK elements go through a branch-free pass that
 * vectorises, computing fmod as x - trunc(x / y) * y in double. That is
 * exact whenever |x / y| < 2^29 and y is finite: the truncated double
 * quotient is then the true one (x / y lies at least 2^-24 from any other
 * integer and the division errs by at most |x / y| 2^-53), the product is
 * exact (29 + 24 bits), and so is the difference (the remainder is
 * representable). A block with an element outside that range is
 * recomputed by fdiv_d / rem_f. The block buffer keeps the inputs intact
 * until then (the output may be a donated input). */
#define FM_BLK 256
#define FM_OK(q, y) (fabs(q) < 536870912.0 && fabs(y) <= 3.4028234663852886e38)
/* x // y where FM_OK; `bad` collects the elements where it does not hold. */
#define FDIV_FAST(xf, yf, bad)                                              \
  __extension__({                                                           \
    double x_ = (xf), y_ = (yf), q_ = x_ / y_;                              \
    int ok_ = FM_OK(q_, y_);                                                \
    bad |= !ok_;                                                            \
    double m_ = x_ - (double)(int32_t)(ok_ ? q_ : 0.0) * y_;                \
    m_ = m_ != 0 ? m_ : copysign(0.0, x_);                                  \
    /* x - m is n y exactly, so the quotient is the integer n: its floor */ \
    double d_ = (x_ - m_) / y_;                                             \
    d_ -= ((m_ != 0) & ((y_ < 0) != (m_ < 0))) ? 1.0 : 0.0;                 \
    (float)(d_ == 0 ? copysign(0.0, q_) : d_);                              \
  })
#define REM_FAST(xf, yf, bad)                                        \
  __extension__({                                                    \
    float xs_ = (xf), ys_ = (yf);                                    \
    double x_ = xs_, y_ = ys_, q_ = x_ / y_;                         \
    int ok_ = FM_OK(q_, y_);                                         \
    bad |= !ok_;                                                     \
    float m_ = (float)(x_ - (double)(int32_t)(ok_ ? q_ : 0.0) * y_); \
    m_ != 0 ? (((ys_ < 0) != (m_ < 0)) ? m_ + ys_ : m_)              \
            : copysignf(0.0f, ys_);                                  \
  })
#define FDIV_SLOW(x, y) ((float)fdiv_d((x), (y)))
#define FMOD_ROW(fn, T, LD, ST, FAST, SLOW)                               \
  static void fn(char* const* p, const int64_t* st, int64_t n,            \
                 const void* ctx) {                                       \
    (void)ctx;                                                            \
    T* o = (T*)p[0];                                                      \
    const T* a = (const T*)p[1];                                          \
    const T* b = (const T*)p[2];                                          \
    int64_t so = st[0], sa = st[1], sb = st[2];                           \
    float buf[FM_BLK];                                                    \
    for (int64_t i0 = 0; i0 < n; i0 += FM_BLK) {                          \
      int64_t m = n - i0 < FM_BLK ? n - i0 : FM_BLK;                      \
      const T* ab = a + i0 * sa;                                          \
      const T* bb = b + i0 * sb;                                          \
      int bad = 0;                                                        \
      if (sa == 1 && sb == 1) {                                           \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = FAST(LD(ab[k]), LD(bb[k]), bad);                       \
      } else if (sa == 0 && sb == 1) {                                    \
        float x = LD(ab[0]);                                              \
        for (int64_t k = 0; k < m; k++) buf[k] = FAST(x, LD(bb[k]), bad); \
      } else if (sa == 1 && sb == 0) {                                    \
        float y = LD(bb[0]);                                              \
        for (int64_t k = 0; k < m; k++) buf[k] = FAST(LD(ab[k]), y, bad); \
      } else {                                                            \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = FAST(LD(ab[k * sa]), LD(bb[k * sb]), bad);             \
      }                                                                   \
      if (bad)                                                            \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = SLOW(LD(ab[k * sa]), LD(bb[k * sb]));                  \
      T* ob = o + i0 * so;                                                \
      for (int64_t k = 0; k < m; k++) ob[k * so] = ST(buf[k]);            \
    }                                                                     \
  }
#define FMOD_ROWS(nm, FAST, SLOW)                         \
  FMOD_ROW(nm##_f16, uint16_t, LD_H, ST_H, FAST, SLOW)    \
  FMOD_ROW(nm##_bf16, uint16_t, LD_BF, ST_BF, FAST, SLOW) \
  FMOD_ROW(nm##_f32, float, LD_ID, ST_ID, FAST, SLOW)     \
  BIN_ROW(nm##_f64, double, double, double, LD_ID, ST_ID, nm##_d(x, y))
/* log(e^x + e^y) without overflow. */
static inline double lae_d(double x, double y) {
  if (x != x || y != y) return x + y;
  if (x == y) return x + M_LN2; /* also inf + inf and -inf + -inf */
  double m = x > y ? x : y, d = x > y ? y - x : x - y;
  return m + log1p(exp(d));
}
/* The float version branch-free (every value computed, then selected) so
 * loops vectorise: log1p(e) as log(u) + c / u with u = 1 + e rounded and
 * c = e - (u - 1) its rounding error (exact: e <= 1), which stays
 * accurate where u rounds away most of e (then log(u) = 0 and c = e). */
CMX__KINLINE float lae_f(float x, float y) {
  float m = x > y ? x : y, d = -fabsf(x - y);
  float e = cmx__vexpf(d), u = 1.0f + e;
  float r = m + (cmx__vlogf(u) + (e - (u - 1.0f)) / u);
  r = x == y ? x + (float)M_LN2 : r; /* also inf + inf and -inf + -inf */
  return x != x || y != y ? x + y : r;
}

/* ---------------- complex helpers ---------------- */
static inline bool cnan(cmx__c64 z) {
  return isnan(crealf(z)) || isnan(cimagf(z));
}
/* Lexicographic order (real part, then imaginary), as NumPy sorts. */
static inline bool cgt(cmx__c64 x, cmx__c64 y) {
  return crealf(x) > crealf(y) ||
         (crealf(x) == crealf(y) && cimagf(x) > cimagf(y));
}
static inline cmx__c64 cmax(cmx__c64 x, cmx__c64 y) {
  return cnan(x) ? x : cnan(y) ? y : cgt(y, x) ? y : x;
}
static inline cmx__c64 cmin(cmx__c64 x, cmx__c64 y) {
  return cnan(x) ? x : cnan(y) ? y : cgt(x, y) ? y : x;
}
/* Products and quotients in double: float products are exact there, so
 * the real part's cancellation (ac - bd) costs no accuracy. */
static inline cmx__c64 cmul(cmx__c64 x, cmx__c64 y) {
  double a = crealf(x), b = cimagf(x), c = crealf(y), d = cimagf(y);
  return cmx__cmake((float)(a * c - b * d), (float)(a * d + b * c));
}
static inline cmx__c64 cdiv(cmx__c64 x, cmx__c64 y) {
  double _Complex a = CMPLX(crealf(x), cimagf(x));
  double _Complex b = CMPLX(crealf(y), cimagf(y));
  return cmx__cfromd(a / b);
}
/* Complex power in double; small integer exponents by repeated squaring
 * (exact results such as (1+1j)**2 == 2j), x ** 0 == 1. */
static inline cmx__c64 cpow_(cmx__c64 x, cmx__c64 y) {
  double _Complex a = CMPLX(crealf(x), cimagf(x));
  double yr = crealf(y), yi = cimagf(y);
  if (yi == 0 && yr == floor(yr) && fabs(yr) <= 64) {
    long e = (long)fabs(yr);
    double _Complex r = 1.0;
    while (e) {
      if (e & 1) r *= a;
      e >>= 1;
      if (e) a *= a;
    }
    return cmx__cfromd(yr < 0 ? 1.0 / r : r);
  }
  return cmx__cfromd(cpow(a, CMPLX(yr, yi)));
}

/* ---------------- rows ---------------- */
ARITH_ROWS(add, uint8_t, uint16_t, x + y, (x | y))
C64_ROW(add, x + y)
ARITH_ROWS(subtract, uint8_t, uint16_t, x - y, (x ^ y))
C64_ROW(subtract, x - y)
ARITH_ROWS(multiply, unsigned, unsigned, x* y, (x & y))
C64_ROW(multiply, cmul(x, y))

FLOAT_ROWS(divide, x / y, x / y)
C64_ROW(divide, cdiv(x, y))

INT_ROWS(floor_divide, fdiv_u(x, y), fdiv_s(x, y), (x & y))
#define floor_divide_d fdiv_d
FMOD_ROWS(floor_divide, FDIV_FAST, FDIV_SLOW)

#define ZERO2 ((void)x, (void)y, 0)
INT_ROWS(remainder, rem_u(x, y), rem_s(x, y), ZERO2)
#define remainder_d rem_d
FMOD_ROWS(remainder, REM_FAST, rem_f)

INT_ROWS(power, ipow_u(x, y), ipow_s(x, y), (x | !y))
FLOAT_ROWS(power, powf(x, y), pow(x, y))
C64_ROW(power, cpow_(x, y))

/* NaN-propagating (NumPy's maximum/minimum). */
INT_ROWS(maximum, x > y ? x : y, x > y ? x : y, (x | y))
FLOAT_ROWS(maximum, (x > y || x != x) ? x : y, (x > y || x != x) ? x : y)
C64_ROW(maximum, cmax(x, y))
INT_ROWS(minimum, x < y ? x : y, x < y ? x : y, (x & y))
FLOAT_ROWS(minimum, (x < y || x != x) ? x : y, (x < y || x != x) ? x : y)
C64_ROW(minimum, cmin(x, y))

FLOAT_ROWS(arctan2, atan2f(x, y), atan2(x, y))
FLOAT_ROWS_A(CMX__SIMD_CLONES, logaddexp, lae_f(x, y), lae_d(x, y))

/* ---------------- tables ---------------- */
#define TABLE(nm, ...) \
  static const cmx__row_fn nm##_t[CMX_NUM_DTYPES] = {__VA_ARGS__};
TABLE(add, ALL_T(add))
TABLE(subtract, ALL_T(subtract))
TABLE(multiply, ALL_T(multiply))
TABLE(divide, FLOAT_T(divide), C64_T(divide))
TABLE(floor_divide, INT_T(floor_divide), FLOAT_T(floor_divide))
TABLE(remainder, INT_T(remainder), FLOAT_T(remainder))
TABLE(power, ALL_T(power))
TABLE(maximum, ALL_T(maximum))
TABLE(minimum, ALL_T(minimum))
TABLE(arctan2, FLOAT_T(arctan2))
TABLE(logaddexp, FLOAT_T(logaddexp))

static const cmx__row_fn* const k_rows[CMX__NUM_PRIMITIVES] = {
    [CMX__P_Add] = add_t,
    [CMX__P_Subtract] = subtract_t,
    [CMX__P_Multiply] = multiply_t,
    [CMX__P_Divide] = divide_t,
    [CMX__P_FloorDivide] = floor_divide_t,
    [CMX__P_Remainder] = remainder_t,
    [CMX__P_Power] = power_t,
    [CMX__P_Maximum] = maximum_t,
    [CMX__P_Minimum] = minimum_t,
    [CMX__P_ArcTan2] = arctan2_t,
    [CMX__P_LogAddExp] = logaddexp_t,
};

CMX__KERNEL(cmx__cpu_binary) {
  (void)nin;
  (void)nout;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  const cmx__row_fn* t =
      vt->id >= 0 && vt->id < CMX__NUM_PRIMITIVES ? k_rows[vt->id] : NULL;
  cmx__row_fn fn = t ? t[in[0]->dtype] : NULL;
  if (!fn)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", vt->name,
                            cmx_dtype_name(in[0]->dtype));
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 2);
  if (st != CMX_OK) return st;
  cmx__cpu_ew_run(out[0], in, 2, fn, NULL);
  return CMX_OK;
}
