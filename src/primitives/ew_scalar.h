/* The scalar semantics of cmx's elementwise ops: one definition, compiled
 * by every backend.
 *
 * The op table (primitives/ew_ops.h) describes each elementwise op by an
 * expression per dtype class; the expressions call the helpers below. The
 * CPU backend compiles this header as C, the CUDA backend hands the same
 * text to NVRTC, and the code `compile` generates includes it too, so a
 * rule written here (integer wrap-around, division by zero, shifts past the
 * width, NaN in max/min, float -> int saturation, half rounding) holds on
 * every backend. The special values these rules decide are listed in
 * ew_ops.h and tested on every device by tests/c/test_ew_special.c.
 *
 * The header is written in the common subset of C11 and CUDA C++. What
 * differs between backends is bound before it is included (the CPU's
 * binding is backend/cpu/ew_scalar_cpu.h, CUDA's backend/cuda/kernels/
 * ew_bind.cu):
 *   CMX_EW_FN               qualifiers of the helpers (always inlined)
 *   uint8_t ... int64_t     fixed-width integers, and bool
 *   cmx_fbits(f), cmx_bitsf(u)        float <-> uint32_t bit casts
 *   CMX_INFF, CMX_NANF      float infinity and quiet NaN
 *   cmx_expf, cmx_logf, cmx_tanhf     the backend's float exp/log/tanh
 *     (the CPU's are the vectorisable ones of vmath.h; their accuracy is
 *     bounded by the sweeps in tests/c/test_unary.c)
 *   cmx_erff (optional)     the backend's float erf; libm's erff when the
 *     binding does not define it (the CPU's is vmath.h's)
 *   cmx_c64                 complex64 values (float parts), with + - *
 *     as complex arithmetic is not used: products and quotients go
 *     through cmx_c_mul / cmx_c_div below so every backend rounds alike
 *   cmx_cre(z), cmx_cim(z), cmx_c64_make(re, im)    its parts
 *   cmx_c128, cmx_zre, cmx_zim, cmx_z_make          double complex
 *   cmx_z_sqrt, _exp, _log, _sin, _cos, _tan, _asin, _acos, _atan,
 *     _sinh, _cosh, _tanh, _asinh, _acosh, _atanh, _pow: the backend's
 *     double complex functions (C99 Annex G on the CPU, libcu++ on CUDA)
 * Plain libm names (sqrtf, exp, fmod, erf, isnan ...) exist on both.
 */
#ifndef CMX_PRIMITIVES_EW_SCALAR_H
#define CMX_PRIMITIVES_EW_SCALAR_H

#ifndef cmx_erff
#define cmx_erff erff
#endif

/* ---------------- 16-bit floats ----------------
 * float16 and bfloat16 are stored as uint16_t and computed in float.
 * Conversions round to nearest even; NaN stays a quiet NaN of its sign;
 * float16 overflows to infinity from 65520 up. Branch-free so loops over
 * them vectorise. */
CMX_EW_FN float cmx_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t em = (uint32_t)(h & 0x7fff) << 13; /* exponent, mantissa */
  uint32_t e = em & 0x0f800000u;
  uint32_t norm = em + (112u << 23);      /* rebias 15 -> 127 */
  uint32_t special = norm + (112u << 23); /* inf, nan: exponent 255 */
  /* zero, subnormal: 2^-14 * (1 + man / 1024) - 2^-14 = man * 2^-24 */
  uint32_t sub = cmx_fbits(cmx_bitsf(em + (113u << 23)) - 6.103515625e-05f);
  uint32_t is_special = 0u - (uint32_t)(e == 0x0f800000u);
  uint32_t is_sub = 0u - (uint32_t)(e == 0);
  uint32_t u =
      (special & is_special) | (sub & is_sub) | (norm & ~(is_special | is_sub));
  return cmx_bitsf(u | sign);
}
CMX_EW_FN uint16_t cmx_f2h(float f) {
  uint32_t u = cmx_fbits(f), a = u & 0x7fffffffu;
  uint32_t sign = (u >> 16) & 0x8000u;
  /* normal: rebias 127 -> 15, round to nearest even at mantissa bit 13 */
  uint32_t n = a - (112u << 23);
  n = (n + 0xfffu + ((n >> 13) & 1u)) >> 13;
  /* subnormal: a + 0.5 rounds a to a multiple of 2^-24 (nearest even),
   * which its low mantissa bits then hold */
  uint32_t s = cmx_fbits(cmx_bitsf(a) + 0.5f) - 0x3f000000u;
  /* selects by masks: branches around the float add would keep loops
   * from vectorising (it may trap, as far as the compiler knows) */
  uint32_t is_sub = 0u - (uint32_t)(a < 0x38800000u);
  uint32_t r = (s & is_sub) | (n & ~is_sub);
  uint32_t is_inf = 0u - (uint32_t)(a >= 0x477ff000u); /* >= 65520 */
  r = (0x7c00u & is_inf) | (r & ~is_inf);
  uint32_t is_nan = 0u - (uint32_t)(a > 0x7f800000u);
  r = (0x7e00u & is_nan) | (r & ~is_nan);
  return (uint16_t)(sign | r);
}
CMX_EW_FN float cmx_bf2f(uint16_t h) {
  return cmx_bitsf((uint32_t)h << 16);
}
CMX_EW_FN uint16_t cmx_f2bf(float f) {
  uint32_t u = cmx_fbits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* ---------------- conversions (AsType) ----------------
 * To integers: float values truncate toward zero and saturate at the
 * destination's 64-bit range, NaN gives 0; the 64-bit value then wraps to
 * narrower integers (as C converts integers). Negative floats to uint64
 * wrap like C's int64 -> uint64. To bool: nonzero (either part of a
 * complex). To complex: a zero imaginary part. From complex: the real
 * part. */
CMX_EW_FN int64_t cmx_ew_sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return (int64_t)0x7fffffffffffffffll;
  if (d <= -9223372036854775808.0) return (int64_t)(-0x7fffffffffffffffll - 1);
  return (int64_t)d;
}
CMX_EW_FN uint64_t cmx_ew_sat_u64(double d) {
  if (d != d) return 0;
  if (d < 0)
    return (uint64_t)cmx_ew_sat_i64(d); /* wraps like C for negatives */
  if (d >= 18446744073709551615.0) return ~(uint64_t)0;
  return (uint64_t)d;
}

/* Storage types by dtype suffix (the suffixes of ew_ops.h's dtype list). */
typedef uint8_t cmx_b8_t;
typedef uint8_t cmx_u8_t;
typedef uint16_t cmx_u16_t;
typedef uint32_t cmx_u32_t;
typedef uint64_t cmx_u64_t;
typedef int8_t cmx_i8_t;
typedef int16_t cmx_i16_t;
typedef int32_t cmx_i32_t;
typedef int64_t cmx_i64_t;
typedef uint16_t cmx_f16_t;
typedef uint16_t cmx_bf16_t;
typedef float cmx_f32_t;
typedef double cmx_f64_t;
typedef cmx_c64 cmx_c64_t;

/* A source value of dtype suffix S read as: nonzero (cmx_nz_S), int64
 * (cmx_toi_S), uint64 (cmx_tou_S), double (cmx_tod_S), float (cmx_tof_S),
 * complex64 (cmx_toc_S). */
#define CMX__CVT_INT_SRC(S)                       \
  CMX_EW_FN bool cmx_nz_##S(cmx_##S##_t x) {      \
    return x != 0;                                \
  }                                               \
  CMX_EW_FN int64_t cmx_toi_##S(cmx_##S##_t x) {  \
    return (int64_t)x;                            \
  }                                               \
  CMX_EW_FN uint64_t cmx_tou_##S(cmx_##S##_t x) { \
    return (uint64_t)x;                           \
  }                                               \
  CMX_EW_FN double cmx_tod_##S(cmx_##S##_t x) {   \
    return (double)x;                             \
  }                                               \
  CMX_EW_FN float cmx_tof_##S(cmx_##S##_t x) {    \
    return (float)x;                              \
  }                                               \
  CMX_EW_FN cmx_c64 cmx_toc_##S(cmx_##S##_t x) {  \
    return cmx_c64_make((float)x, 0.0f);          \
  }
#define CMX__CVT_FLOAT_SRC(S, LOADF)              \
  CMX_EW_FN bool cmx_nz_##S(cmx_##S##_t x) {      \
    return LOADF(x) != 0;                         \
  }                                               \
  CMX_EW_FN int64_t cmx_toi_##S(cmx_##S##_t x) {  \
    return cmx_ew_sat_i64(LOADF(x));              \
  }                                               \
  CMX_EW_FN uint64_t cmx_tou_##S(cmx_##S##_t x) { \
    return cmx_ew_sat_u64(LOADF(x));              \
  }                                               \
  CMX_EW_FN double cmx_tod_##S(cmx_##S##_t x) {   \
    return (double)LOADF(x);                      \
  }                                               \
  CMX_EW_FN float cmx_tof_##S(cmx_##S##_t x) {    \
    return (float)LOADF(x);                       \
  }                                               \
  CMX_EW_FN cmx_c64 cmx_toc_##S(cmx_##S##_t x) {  \
    return cmx_c64_make((float)LOADF(x), 0.0f);   \
  }
#define cmx__cvt_id(x) (x)
CMX__CVT_INT_SRC(b8)
CMX__CVT_INT_SRC(u8)
CMX__CVT_INT_SRC(u16)
CMX__CVT_INT_SRC(u32)
CMX__CVT_INT_SRC(u64)
CMX__CVT_INT_SRC(i8)
CMX__CVT_INT_SRC(i16)
CMX__CVT_INT_SRC(i32)
CMX__CVT_INT_SRC(i64)
CMX__CVT_FLOAT_SRC(f16, cmx_h2f)
CMX__CVT_FLOAT_SRC(bf16, cmx_bf2f)
CMX__CVT_FLOAT_SRC(f32, cmx__cvt_id)
CMX__CVT_FLOAT_SRC(f64, cmx__cvt_id)
CMX_EW_FN bool cmx_nz_c64(cmx_c64 x) {
  return cmx_cre(x) != 0 || cmx_cim(x) != 0;
}
CMX_EW_FN int64_t cmx_toi_c64(cmx_c64 x) {
  return cmx_ew_sat_i64(cmx_cre(x));
}
CMX_EW_FN uint64_t cmx_tou_c64(cmx_c64 x) {
  return cmx_ew_sat_u64(cmx_cre(x));
}
CMX_EW_FN double cmx_tod_c64(cmx_c64 x) {
  return cmx_cre(x);
}
CMX_EW_FN float cmx_tof_c64(cmx_c64 x) {
  return cmx_cre(x);
}
CMX_EW_FN cmx_c64 cmx_toc_c64(cmx_c64 x) {
  return x;
}
/* cmx_cvt_D(S, x): source value x of suffix S converted to dtype suffix
 * D's storage. float16 from float64 rounds through float32. */
#define cmx_cvt_b8(S, x) ((uint8_t)cmx_nz_##S(x))
#define cmx_cvt_u8(S, x) ((uint8_t)cmx_toi_##S(x))
#define cmx_cvt_u16(S, x) ((uint16_t)cmx_toi_##S(x))
#define cmx_cvt_u32(S, x) ((uint32_t)cmx_toi_##S(x))
#define cmx_cvt_u64(S, x) (cmx_tou_##S(x))
#define cmx_cvt_i8(S, x) ((int8_t)cmx_toi_##S(x))
#define cmx_cvt_i16(S, x) ((int16_t)cmx_toi_##S(x))
#define cmx_cvt_i32(S, x) ((int32_t)cmx_toi_##S(x))
#define cmx_cvt_i64(S, x) (cmx_toi_##S(x))
#define cmx_cvt_f16(S, x) (cmx_f2h(cmx_tof_##S(x)))
#define cmx_cvt_bf16(S, x) (cmx_f2bf(cmx_tof_##S(x)))
#define cmx_cvt_f32(S, x) (cmx_tof_##S(x))
#define cmx_cvt_f64(S, x) (cmx_tod_##S(x))
#define cmx_cvt_c64(S, x) (cmx_toc_##S(x))

/* ---------------- integer arithmetic ----------------
 * Integers never hit undefined behaviour: +, -, * and negation wrap
 * (computed in unsigned types, stored back truncated). */
#define cmx_ew_negw(x) ((uint64_t)0 - (uint64_t)(x))
#define cmx_ew_mulw(x, y) ((uint64_t)(x) * (uint64_t)(y))
/* |x| of a signed integer, wrapping (|INT_MIN| is INT_MIN). */
#define cmx_ew_iabs(x) ((x) < 0 ? cmx_ew_negw(x) : (uint64_t)(x))

/* Floor division (NumPy): rounds toward -inf; y == 0 gives 0; y == -1
 * negates with wrap-around so INT_MIN / -1 stays defined. */
CMX_EW_FN int64_t cmx_ew_fdiv_s(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return (int64_t)((uint64_t)0 - (uint64_t)x);
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
  return q;
}
CMX_EW_FN uint64_t cmx_ew_fdiv_u(uint64_t x, uint64_t y) {
  return y == 0 ? 0 : x / y;
}
/* Remainder with the sign of the divisor (NumPy); y == 0 gives x (MLX). */
CMX_EW_FN int64_t cmx_ew_rem_s(int64_t x, int64_t y) {
  if (y == 0) return x;
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
CMX_EW_FN uint64_t cmx_ew_rem_u(uint64_t x, uint64_t y) {
  return y == 0 ? x : x % y;
}
/* Integer power by squaring, wrapping. Negative exponents give 0 for
 * every base (MLX). */
CMX_EW_FN uint64_t cmx_ew_ipow_u(uint64_t x, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= x;
    e >>= 1;
    x *= x;
  }
  return r;
}
CMX_EW_FN int64_t cmx_ew_ipow_s(int64_t x, int64_t e) {
  if (e < 0) return 0;
  return (int64_t)cmx_ew_ipow_u((uint64_t)x, (uint64_t)e);
}

/* Shifts by a count y of a `bits`-wide integer: counts below 0 or at
 * least the width give 0 for left shifts and the sign fill (0 or -1) for
 * right shifts. The result's low `bits` bits are stored. */
CMX_EW_FN uint64_t cmx_ew_lsh_u(uint64_t x, uint64_t y, unsigned bits) {
  return y >= bits ? 0 : x << y;
}
CMX_EW_FN uint64_t cmx_ew_lsh_s(int64_t x, int64_t y, unsigned bits) {
  return (y < 0 || y >= (int64_t)bits) ? 0 : (uint64_t)x << y;
}
CMX_EW_FN uint64_t cmx_ew_rsh_u(uint64_t x, uint64_t y, unsigned bits) {
  return y >= bits ? 0 : x >> y;
}
/* Arithmetic right shift written with non-negative operands only. */
CMX_EW_FN int64_t cmx_ew_rsh_s(int64_t x, int64_t y, unsigned bits) {
  if (y < 0 || y >= (int64_t)bits) return x < 0 ? -1 : 0;
  return x < 0 ? ~(~x >> y) : x >> y;
}

/* ---------------- float arithmetic ---------------- */
/* Sign: -1, 0 or 1; -0 and NaN give 0 (MLX). */
CMX_EW_FN float cmx_ew_signf(float x) {
  return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
}
CMX_EW_FN double cmx_ew_sign(double x) {
  return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}
/* Floor division as NumPy computes it (through fmod, so 1 // 0.1 == 9
 * like Python); y == 0 gives x / y (inf or nan). */
CMX_EW_FN double cmx_ew_fdiv_d(double x, double y) {
  if (y == 0) return x / y;
  double mod = fmod(x, y), div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return copysign(0.0, x / y);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1.0 : fl;
}
/* Remainder with the sign of the divisor; y == 0 gives nan. */
CMX_EW_FN double cmx_ew_rem_d(double x, double y) {
  double mod = fmod(x, y);
  if (mod != 0) return (y < 0) != (mod < 0) ? mod + y : mod;
  return copysign(0.0, y);
}
CMX_EW_FN float cmx_ew_rem_f(float x, float y) {
  float mod = fmodf(x, y);
  if (mod != 0) return (y < 0) != (mod < 0) ? mod + y : mod;
  return copysignf(0.0f, y);
}
/* NaN-propagating maximum/minimum (NumPy's). */
#define cmx_ew_fmax(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define cmx_ew_fmin(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
/* log(e^x + e^y) without overflow; equal arguments (inf + inf and
 * -inf + -inf too) give x + log 2; NaN propagates. */
CMX_EW_FN double cmx_ew_logaddexp(double x, double y) {
  if (x != x || y != y) return x + y;
  if (x == y) return x + 0.69314718055994530942;
  double m = x > y ? x : y, d = x > y ? y - x : x - y;
  return m + log1p(exp(d));
}
/* The float version branch-free (every value computed, then selected) so
 * loops vectorise: log1p(e) as log(u) + c / u with u = 1 + e rounded and
 * c = e - (u - 1) its rounding error (exact: e <= 1), which stays
 * accurate where u rounds away most of e (then log(u) = 0 and c = e). */
CMX_EW_FN float cmx_ew_logaddexpf(float x, float y) {
  float m = x > y ? x : y, d = -fabsf(x - y);
  float e = cmx_expf(d), u = 1.0f + e;
  float r = m + (cmx_logf(u) + (e - (u - 1.0f)) / u);
  r = x == y ? x + 0.693147180559945309f : r;
  return x != x || y != y ? x + y : r;
}
/* sigmoid as e / (1 + e) with e = exp(-|x|) <= 1: no overflow, and tiny
 * results for very negative x stay accurate (subnormals included). */
CMX_EW_FN float cmx_ew_sigmoidf(float x) {
  float e = cmx_expf(-fabsf(x));
  return (x >= 0 ? 1.0f : e) / (1.0f + e);
}
CMX_EW_FN double cmx_ew_sigmoid(double x) {
  double e = exp(-fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
/* erfinv: a closed-form first guess (Winitzki's approximation), then
 * Halley steps on erf(y) = x; for |x| > 0.5 the residual is taken with
 * erfc so that values near +-1 keep full precision. Outside [-1, 1]: NaN;
 * +-1: +-inf. */
CMX_EW_FN double cmx_ew_erfinv(double x) {
  if (x != x || x < -1 || x > 1) return (double)CMX_NANF;
  if (x == 1) return (double)CMX_INFF;
  if (x == -1) return -(double)CMX_INFF;
  if (x == 0) return x;
  double ax = fabs(x), a = 0.147;
  double l = log1p(-ax) + log1p(ax); /* log(1 - x^2) */
  double t = 2.0 / (3.14159265358979323846 * a) + 0.5 * l;
  double y = sqrt(sqrt(t * t - l / a) - t);
  for (int i = 0; i < 3; i++) {
    double f = ax <= 0.5 ? erf(y) - ax : (1.0 - ax) - erfc(y);
    double d = 1.1283791670955126 * exp(-y * y); /* 2/sqrt(pi) e^-y^2 */
    if (d == 0) break;
    y -= f / (d + y * f);
  }
  return copysign(y, x);
}

/* ---------------- round ----------------
 * Half to even at `decimals` places (negative: tens, hundreds ...). The
 * kernel's parameters hold the clamped decimals and, for integers with
 * negative decimals, q = 10^-decimals (0 when it exceeds 64 bits: every
 * value rounds to 0). cmx_ew_params holds the parameters of every
 * elementwise op that has some (Round only, today); expressions name
 * them CMX_EW_P. */
#ifndef CMX_EW_PARAMS_DEFINED /* also in ew_ops.h, for the host */
#define CMX_EW_PARAMS_DEFINED
typedef struct cmx_ew_params {
  int decimals;
  uint64_t q;
} cmx_ew_params;
#endif
/* Large d where x * 10^d overflows leave x unchanged; 10^-d beyond the
 * range of doubles gives 0. */
CMX_EW_FN double cmx_ew_round_d(double x, cmx_ew_params p) {
  int d = p.decimals;
  if (d == 0 || !isfinite(x)) return rint(x);
  if (d > 0) {
    double s = pow(10.0, d), y = x * s;
    return isfinite(y) ? rint(y) / s : x;
  }
  double s = pow(10.0, -d);
  return isinf(s) ? copysign(0.0, x) : rint(x / s) * s;
}
CMX_EW_FN float cmx_ew_round_f(float x, cmx_ew_params p) {
  return p.decimals == 0 ? rintf(x) : (float)cmx_ew_round_d(x, p);
}
/* Magnitude m rounded half to even to a multiple of q (wraps on
 * overflow, as integer arithmetic does). */
CMX_EW_FN uint64_t cmx_ew_round_mag(uint64_t m, uint64_t q) {
  if (q == 0) return 0;
  uint64_t r = m % q, b = m - r;
  if (r > q - r || (r == q - r && ((b / q) & 1))) b += q;
  return b;
}
CMX_EW_FN uint64_t cmx_ew_round_u(uint64_t x, cmx_ew_params p) {
  return p.decimals >= 0 ? x : cmx_ew_round_mag(x, p.q);
}
CMX_EW_FN uint64_t cmx_ew_round_s(int64_t x, cmx_ew_params p) {
  if (p.decimals >= 0) return (uint64_t)x;
  uint64_t b = cmx_ew_round_mag(x < 0 ? cmx_ew_negw(x) : (uint64_t)x, p.q);
  return x < 0 ? 0 - b : b;
}

/* ---------------- double complex arithmetic ----------------
 * Through the parts, so every backend rounds alike. */
CMX_EW_FN cmx_c128 cmx_z_add(cmx_c128 x, cmx_c128 y) {
  return cmx_z_make(cmx_zre(x) + cmx_zre(y), cmx_zim(x) + cmx_zim(y));
}
/* z / r for a real r, per part. */
CMX_EW_FN cmx_c128 cmx_z_divr(cmx_c128 z, double r) {
  return cmx_z_make(cmx_zre(z) / r, cmx_zim(z) / r);
}
/* x / y by Smith's scaling; a zero y divides each part by +-0 (IEEE:
 * infinities, or NaN for 0 / 0). */
CMX_EW_FN cmx_c128 cmx_z_div(cmx_c128 x, cmx_c128 y) {
  double a = cmx_zre(x), b = cmx_zim(x), c = cmx_zre(y), d = cmx_zim(y);
  if (fabs(c) >= fabs(d)) {
    if (c == 0 && d == 0) return cmx_z_make(a / fabs(c), b / fabs(c));
    double r = d / c, den = c + d * r;
    return cmx_z_make((a + b * r) / den, (b - a * r) / den);
  }
  double r = c / d, den = c * r + d;
  return cmx_z_make((a * r + b) / den, (b * r - a) / den);
}

/* ---------------- complex64 ----------------
 * Products, quotients and functions are computed in double and rounded
 * once: float products are exact there, so ac - bd loses nothing. */
CMX_EW_FN cmx_c128 cmx_c_widen(cmx_c64 z) {
  return cmx_z_make((double)cmx_cre(z), (double)cmx_cim(z));
}
CMX_EW_FN cmx_c64 cmx_c_narrow(cmx_c128 z) {
  return cmx_c64_make((float)cmx_zre(z), (float)cmx_zim(z));
}
CMX_EW_FN cmx_c64 cmx_c_add(cmx_c64 x, cmx_c64 y) {
  return cmx_c64_make(cmx_cre(x) + cmx_cre(y), cmx_cim(x) + cmx_cim(y));
}
CMX_EW_FN cmx_c64 cmx_c_sub(cmx_c64 x, cmx_c64 y) {
  return cmx_c64_make(cmx_cre(x) - cmx_cre(y), cmx_cim(x) - cmx_cim(y));
}
CMX_EW_FN cmx_c64 cmx_c_mul(cmx_c64 x, cmx_c64 y) {
  double a = cmx_cre(x), b = cmx_cim(x), c = cmx_cre(y), d = cmx_cim(y);
  return cmx_c64_make((float)(a * c - b * d), (float)(a * d + b * c));
}
CMX_EW_FN cmx_c64 cmx_c_div(cmx_c64 x, cmx_c64 y) {
  return cmx_c_narrow(cmx_z_div(cmx_c_widen(x), cmx_c_widen(y)));
}
CMX_EW_FN cmx_c64 cmx_c_neg(cmx_c64 z) {
  return cmx_c64_make(-cmx_cre(z), -cmx_cim(z));
}
CMX_EW_FN cmx_c64 cmx_c_conj(cmx_c64 z) {
  return cmx_c64_make(cmx_cre(z), -cmx_cim(z));
}
CMX_EW_FN float cmx_c_abs(cmx_c64 z) {
  return (float)hypot((double)cmx_cre(z), (double)cmx_cim(z));
}
CMX_EW_FN bool cmx_c_isnan(cmx_c64 z) {
  return isnan(cmx_cre(z)) || isnan(cmx_cim(z));
}
CMX_EW_FN bool cmx_c_isinf(cmx_c64 z) {
  return isinf(cmx_cre(z)) || isinf(cmx_cim(z));
}
CMX_EW_FN bool cmx_c_isfinite(cmx_c64 z) {
  return isfinite(cmx_cre(z)) && isfinite(cmx_cim(z));
}
CMX_EW_FN bool cmx_c_nz(cmx_c64 z) {
  return cmx_cre(z) != 0 || cmx_cim(z) != 0;
}
/* Equality by both parts; order lexicographic (real part, then imaginary),
 * as NumPy sorts. */
CMX_EW_FN bool cmx_c_eq(cmx_c64 x, cmx_c64 y) {
  return cmx_cre(x) == cmx_cre(y) && cmx_cim(x) == cmx_cim(y);
}
CMX_EW_FN bool cmx_c_lt(cmx_c64 x, cmx_c64 y) {
  return cmx_cre(x) < cmx_cre(y) ||
         (cmx_cre(x) == cmx_cre(y) && cmx_cim(x) < cmx_cim(y));
}
CMX_EW_FN bool cmx_c_le(cmx_c64 x, cmx_c64 y) {
  return cmx_cre(x) < cmx_cre(y) ||
         (cmx_cre(x) == cmx_cre(y) && cmx_cim(x) <= cmx_cim(y));
}
/* NaN-propagating maximum/minimum in that order. */
CMX_EW_FN cmx_c64 cmx_c_max(cmx_c64 x, cmx_c64 y) {
  return cmx_c_isnan(x) ? x : cmx_c_isnan(y) ? y : cmx_c_lt(x, y) ? y : x;
}
CMX_EW_FN cmx_c64 cmx_c_min(cmx_c64 x, cmx_c64 y) {
  return cmx_c_isnan(x) ? x : cmx_c_isnan(y) ? y : cmx_c_lt(y, x) ? y : x;
}
CMX_EW_FN cmx_c64 cmx_c_square(cmx_c64 z) {
  return cmx_c_mul(z, z);
}
/* z / |z|; 0 stays 0. */
CMX_EW_FN cmx_c64 cmx_c_sign(cmx_c64 z) {
  double re = cmx_cre(z), im = cmx_cim(z), m = hypot(re, im);
  return m == 0 ? z : cmx_c64_make((float)(re / m), (float)(im / m));
}
/* The complex functions need the backend's cmx_z_* functions; a binding
 * that provides them only on request (CUDA: libcu++'s headers are slow to
 * compile) defines CMX_EW_NO_Z_FUNCTIONS when not asked. */
#ifndef CMX_EW_NO_Z_FUNCTIONS
/* Power in double; small integer exponents by repeated squaring (exact
 * results such as (1+1j)**2 == 2j), x ** 0 == 1. */
CMX_EW_FN cmx_c64 cmx_c_pow(cmx_c64 x, cmx_c64 y) {
  double yr = cmx_cre(y), yi = cmx_cim(y);
  if (yi == 0 && yr == floor(yr) && fabs(yr) <= 64) {
    long e = (long)fabs(yr);
    double ar = cmx_cre(x), ai = cmx_cim(x), rr = 1, ri = 0;
    while (e) {
      if (e & 1) {
        double t = rr * ar - ri * ai;
        ri = rr * ai + ri * ar;
        rr = t;
      }
      e >>= 1;
      if (e) {
        double t = ar * ar - ai * ai;
        ai = 2 * ar * ai;
        ar = t;
      }
    }
    cmx_c128 r = cmx_z_make(rr, ri);
    if (yr < 0) r = cmx_z_div(cmx_z_make(1, 0), r);
    return cmx_c_narrow(r);
  }
  return cmx_c_narrow(cmx_z_pow(cmx_c_widen(x), cmx_c_widen(y)));
}
/* Functions: the backend's double complex function, rounded once. */
#define CMX__C_FN(name, expr)                  \
  CMX_EW_FN cmx_c64 cmx_c_##name(cmx_c64 z0) { \
    cmx_c128 z = cmx_c_widen(z0);              \
    return cmx_c_narrow(expr);                 \
  }
CMX__C_FN(sqrt, cmx_z_sqrt(z))
CMX__C_FN(rsqrt, cmx_z_div(cmx_z_make(1, 0), cmx_z_sqrt(z)))
CMX__C_FN(exp, cmx_z_exp(z))
CMX__C_FN(log, cmx_z_log(z))
CMX__C_FN(log2, cmx_z_divr(cmx_z_log(z), 0.69314718055994530942))
CMX__C_FN(log10, cmx_z_divr(cmx_z_log(z), 2.30258509299404568402))
CMX__C_FN(sin, cmx_z_sin(z))
CMX__C_FN(cos, cmx_z_cos(z))
CMX__C_FN(tan, cmx_z_tan(z))
CMX__C_FN(arcsin, cmx_z_asin(z))
CMX__C_FN(arccos, cmx_z_acos(z))
CMX__C_FN(arctan, cmx_z_atan(z))
CMX__C_FN(sinh, cmx_z_sinh(z))
CMX__C_FN(cosh, cmx_z_cosh(z))
CMX__C_FN(tanh, cmx_z_tanh(z))
CMX__C_FN(arcsinh, cmx_z_asinh(z))
CMX__C_FN(arccosh, cmx_z_acosh(z))
CMX__C_FN(arctanh, cmx_z_atanh(z))
CMX__C_FN(sigmoid,
          cmx_z_div(cmx_z_make(1, 0),
                    cmx_z_add(cmx_z_make(1, 0),
                              cmx_z_exp(cmx_z_make(-cmx_zre(z), -cmx_zim(z))))))
/* exp(z) - 1 without cancellation for small z: the real part is
 * expm1(x) cos(y) - 2 sin^2(y/2). */
CMX_EW_FN cmx_c64 cmx_c_expm1(cmx_c64 z) {
  double x = cmx_cre(z), y = cmx_cim(z), h = sin(0.5 * y);
  return cmx_c64_make((float)(expm1(x) * cos(y) - 2.0 * h * h),
                      (float)(exp(x) * sin(y)));
}
/* log(1 + z) accurate for small z: |1+z|^2 = 1 + (2x + x^2 + y^2). */
CMX_EW_FN cmx_c64 cmx_c_log1p(cmx_c64 z) {
  double x = cmx_cre(z), y = cmx_cim(z);
  double im = atan2(y, 1.0 + x);
  if (hypot(x, y) < 0.5)
    return cmx_c64_make((float)(0.5 * log1p(x * (2.0 + x) + y * y)), (float)im);
  return cmx_c64_make((float)log(hypot(1.0 + x, y)), (float)im);
}

#endif /* CMX_EW_NO_Z_FUNCTIONS */

#endif
