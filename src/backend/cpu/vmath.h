/* Vectorisable float32 math for the elementwise kernels (exp, tanh, log;
 * the always-inline helper convention and float bit casts they share).
 *
 * libm's expf is a call per element, which keeps loops scalar; exp is hot
 * (softmax, sigmoid, silu), so it gets a branch-free version that gcc turns
 * into SIMD code: range reduction x = k*ln2 + r (|r| <= ln2/2), a degree 7
 * polynomial for e^r, and the scaling by 2^k done as two exact multiplies
 * so that subnormal results round once. Accuracy: within 1.1 ulp over
 * every float (1.03 with SSE2, 1.06 with FMA contraction; the sweep in
 * tests/c/test_unary.c checks it).
 */
#ifndef CMX_BACKEND_CPU_VMATH_H
#define CMX_BACKEND_CPU_VMATH_H

#include <stdint.h>
#include <string.h>

/* Helpers the row functions call: always inlined, also into the AVX2 /
 * AVX-512 clones of CMX__SIMD_CLONES (gcc does not inline a plain inline
 * function into a caller compiled for another arch, and a call per
 * element keeps the loop scalar). */
#define CMX__KINLINE static inline __attribute__((always_inline))

/* A float's bits and back. */
CMX__KINLINE uint32_t cmx__fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
CMX__KINLINE float cmx__bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* e^x for float32: inf for x > ~88.72, 0 below ~-103.97 (subnormals in
 * between are rounded correctly to within 1 ulp), NaN stays NaN. */
CMX__KINLINE float cmx__vexpf(float x) {
  /* Clamp so k stays in [-150, 129]; comparisons are false for NaN, which
   * therefore passes through to the polynomial and comes out NaN. The
   * clamp is written with bit masks: as conditionals gcc turns it into
   * branches and the loop no longer vectorises. */
  uint32_t hi = 0u - (uint32_t)(x > 88.8f), lo = 0u - (uint32_t)(x < -104.0f);
  x = cmx__bitsf((cmx__fbits(x) & ~(hi | lo)) | (cmx__fbits(88.8f) & hi) |
                 (cmx__fbits(-104.0f) & lo));
  /* k = round(x / ln2) with the 1.5 * 2^23 trick: the integer sits in the
   * low mantissa bits of t (no float -> int conversion, so no UB). */
  const float shifter = 12582912.0f; /* 0x1.8p23 */
  float t = x * 1.44269504088896341f + shifter;
  float kf = t - shifter;
  /* r = x - k*ln2 in two pieces (Cody-Waite); k*LN2_HI is exact. */
  float r = x - kf * 0.693145751953125f;
  r = r - kf * 1.428606765330187045e-6f;
  /* e^r = 1 + r + r^2 (1/2 + r/6 + ... + r^5/5040) */
  float q = 1.98412698412698413e-4f;
  q = q * r + 1.38888888888888889e-3f;
  q = q * r + 8.33333333333333333e-3f;
  q = q * r + 4.16666666666666667e-2f;
  q = q * r + 1.66666666666666667e-1f;
  q = q * r + 0.5f;
  float pr = 1.0f + (r + r * r * q);
  /* 2^k = 2^k1 * 2^k2 with k1 = floor(k/2), both normal floats; computed
   * in unsigned arithmetic from the biased bits (kb = k + 512). */
  uint32_t kb = cmx__fbits(t) - 0x4B400000u + 512u;
  uint32_t k1b = kb >> 1;                         /* k1 + 256 */
  float s1 = cmx__bitsf((k1b - 129u) << 23);      /* 2^k1 */
  float s2 = cmx__bitsf((kb - k1b - 129u) << 23); /* 2^(k - k1) */
  return pr * s1 * s2;
}

/* tanh for float32, branch-free so loops vectorise. Below |x| = 0.5625
 * the odd Taylor series of tanh through x^19 (truncation under 0.1 ulp
 * there); above, 1 - 2 / (e^(2|x|) + 1), which no longer cancels (the
 * result is over 0.5), with the sign put back. Saturates to +-1, keeps
 * -0 and NaN. The sweep in tests/c/test_unary.c bounds its error. */
CMX__KINLINE float cmx__vtanhf(float x) {
  float a = cmx__bitsf(cmx__fbits(x) & 0x7fffffffu);
  float z = x * x;
  float p = -2.39129114e-4f;   /* -443861162 / 1856156927625 */
  p = p * z + 5.90027441e-4f;  /* 6404582 / 10854718875 */
  p = p * z - 1.45583439e-3f;  /* -929569 / 638512875 */
  p = p * z + 3.59212804e-3f;  /* 21844 / 6081075 */
  p = p * z - 8.86323553e-3f;  /* -1382 / 155925 */
  p = p * z + 2.18694885e-2f;  /* 62 / 2835 */
  p = p * z - 5.39682540e-2f;  /* -17 / 315 */
  p = p * z + 1.33333333e-1f;  /* 2 / 15 */
  p = p * z - 3.33333333e-1f;  /* -1 / 3 */
  float small = a + a * z * p; /* both on |x|, the sign put back after */
  float big = 1.0f - 2.0f / (cmx__vexpf(2.0f * a) + 1.0f);
  uint32_t is_small = 0u - (uint32_t)(a < 0.5625f);
  uint32_t r = (cmx__fbits(small) & is_small) | (cmx__fbits(big) & ~is_small);
  return cmx__bitsf(r | (cmx__fbits(x) & 0x80000000u));
}

/* log for float32, branch-free so loops vectorise: x = 2^k * m with m in
 * [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1
 * (exact), s = f / (2 + f), and log(1 + f) = 2 atanh(s) = f - s (f - 2T)
 * with T = s^2/3 + s^4/5 + ... + s^10/11 (|s| < 0.1716: the next term is
 * below 1e-10 of the result); then k ln2 in two pieces. log(0) = -inf,
 * negatives give NaN, inf and NaN pass through. Error bounded by the
 * sweep in tests/c/test_unary.c. */
CMX__KINLINE float cmx__vlogf(float x) {
  uint32_t u0 = cmx__fbits(x);
  uint32_t is_sub = 0u - (uint32_t)(u0 < 0x00800000u);
  uint32_t u = (cmx__fbits(x * 8388608.0f) & is_sub) | (u0 & ~is_sub);
  int32_t k = (int32_t)(u - 0x3f3504f3u) >> 23; /* sqrt(1/2)'s bits */
  float m = cmx__bitsf(u - ((uint32_t)k << 23));
  float f = m - 1.0f;
  float s = f / (2.0f + f), z = s * s;
  float t = 9.09090909e-2f; /* 1/11 */
  t = t * z + 1.11111111e-1f;
  t = t * z + 1.42857143e-1f;
  t = t * z + 2.00000000e-1f;
  t = t * z + 3.33333333e-1f;
  t = t * z;
  float kf = (float)(k - (int32_t)(is_sub & 23u));
  float r = kf * 0.693145751953125f +
            ((f - s * (f - 2.0f * t)) + kf * 1.428606765330187045e-6f);
  uint32_t a = u0 & 0x7fffffffu;
  uint32_t special = 0u - (uint32_t)(a >= 0x7f800000u); /* inf, NaN */
  uint32_t zero = 0u - (uint32_t)(a == 0);
  uint32_t neg = 0u - (uint32_t)((u0 >> 31) & (a != 0));
  uint32_t out = (cmx__fbits(r) & ~special) | (u0 & special);
  out = (0xff800000u & zero) | (out & ~zero); /* -inf */
  out = (0x7fc00000u & neg) | (out & ~neg);   /* NaN */
  return cmx__bitsf(out);
}

/* erf for float32, branch-free so loops vectorise (libm's erff is a call
 * per element). Below |x| = 1: x + x S(x^2), S a degree-6 fit of
 * erf(x)/x - 1 (kept small, so its rounding barely shows); up to 3.92:
 * 1 - e^(-x^2) R(|x| - 2.46), R a degree-11 fit of erfc(x) e^(x^2); above,
 * +-1 (erfc rounds away). The fits are least squares on Chebyshev nodes,
 * made for cmx. Odd, keeps -0; NaN stays NaN. Within 1.5 ulp: the sweep in
 * tests/c/test_unary.c bounds it. */
CMX__KINLINE float cmx__verff(float x) {
  uint32_t ux = cmx__fbits(x), ua = ux & 0x7fffffffu;
  float a = cmx__bitsf(ua);
  uint32_t in_a = 0u - (uint32_t)(a < 1.0f), in_b = 0u - (uint32_t)(a < 3.92f);
  /* each branch on a clamped argument, so no branch makes inf or NaN */
  float xa = cmx__bitsf((ua & in_a) | (0x3f800000u & ~in_a)); /* min(a, 1) */
  float t = xa * xa;
  float p = 7.89820988e-05f;
  p = p * t - 8.02435388e-04f;
  p = p * t + 5.19005349e-03f;
  p = p * t - 2.68548094e-02f;
  p = p * t + 1.12836123e-01f;
  p = p * t - 3.76126289e-01f;
  p = p * t + 1.28379166e-01f;
  float ra = xa + xa * p;
  float xb = cmx__bitsf((ua & in_b) | (0x407ae148u & ~in_b)); /* min(a, 3.92) */
  float u = xb - 2.46f;
  float q = -4.25755303e-07f;
  q = q * u + 1.82280644e-06f;
  q = q * u - 4.46657441e-06f;
  q = q * u + 1.60159580e-05f;
  q = q * u - 6.42968735e-05f;
  q = q * u + 2.29966288e-04f;
  q = q * u - 7.86384975e-04f;
  q = q * u + 2.61810282e-03f;
  q = q * u - 8.40822607e-03f;
  q = q * u + 2.59224977e-02f;
  q = q * u - 7.63814449e-02f;
  q = q * u + 2.13820666e-01f;
  float rb = 1.0f - cmx__vexpf(-(xb * xb)) * q;
  uint32_t r = (cmx__fbits(ra) & in_a) |
               (((cmx__fbits(rb) & in_b) | (0x3f800000u & ~in_b)) & ~in_a);
  uint32_t is_nan = 0u - (uint32_t)(ua > 0x7f800000u);
  r = (ux & is_nan) | ((r | (ux & 0x80000000u)) & ~is_nan);
  return cmx__bitsf(r);
}

#endif
