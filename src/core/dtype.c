/* Dtype sizes, names, categories, promotion, and 16-bit float conversion. */
#include <string.h>

#include "core/internal.h"

static const size_t k_sizes[CMX_NUM_DTYPES] = {1, 1, 2, 4, 8, 1, 2,
                                               4, 8, 2, 2, 4, 8, 8};
static const char* const k_names[CMX_NUM_DTYPES] = {
    "bool",  "uint8", "uint16",  "uint32",   "uint64",  "int8",    "int16",
    "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"};

bool cmx_dtype_valid(int t) {
  return t >= 0 && t < CMX_NUM_DTYPES;
}
size_t cmx_dtype_size(cmx_dtype t) {
  return cmx_dtype_valid(t) ? k_sizes[t] : 0;
}
const char* cmx_dtype_name(cmx_dtype t) {
  return cmx_dtype_valid(t) ? k_names[t] : "invalid";
}

bool cmx_dtype_is_integer(cmx_dtype t) {
  return t >= CMX_UINT8 && t <= CMX_INT64;
}
static bool is_unsigned(cmx_dtype t) {
  return t >= CMX_UINT8 && t <= CMX_UINT64;
}
bool cmx_dtype_is_floating(cmx_dtype t) {
  return t >= CMX_FLOAT16 && t <= CMX_FLOAT64;
}
bool cmx_dtype_is_complex(cmx_dtype t) {
  return t == CMX_COMPLEX64;
}
bool cmx_dtype_is_inexact(cmx_dtype t) {
  return cmx_dtype_is_floating(t) || cmx_dtype_is_complex(t);
}
bool cmx_dtype_is_signed(cmx_dtype t) {
  return (t >= CMX_INT8 && t <= CMX_INT64) || cmx_dtype_is_inexact(t);
}

cmx_dtype_category cmx_dtype_kind(cmx_dtype t) {
  if (t == CMX_BOOL) return CMX_CAT_BOOL;
  if (is_unsigned(t)) return CMX_CAT_UNSIGNEDINTEGER;
  if (cmx_dtype_is_integer(t)) return CMX_CAT_SIGNEDINTEGER;
  if (cmx_dtype_is_floating(t)) return CMX_CAT_FLOATING;
  return CMX_CAT_COMPLEXFLOATING;
}

static cmx_dtype_category parent(cmx_dtype_category c) {
  switch (c) {
    case CMX_CAT_SIGNEDINTEGER:
    case CMX_CAT_UNSIGNEDINTEGER:
      return CMX_CAT_INTEGER;
    case CMX_CAT_FLOATING:
    case CMX_CAT_COMPLEXFLOATING:
      return CMX_CAT_INEXACT;
    case CMX_CAT_INTEGER:
    case CMX_CAT_INEXACT:
      return CMX_CAT_NUMBER;
    case CMX_CAT_NUMBER:
    case CMX_CAT_BOOL:
      return CMX_CAT_GENERIC;
    case CMX_CAT_GENERIC:
      break;
  }
  return CMX_CAT_GENERIC;
}

bool cmx_category_issubcategory(cmx_dtype_category a, cmx_dtype_category b) {
  for (;;) {
    if (a == b) return true;
    if (a == CMX_CAT_GENERIC) return false;
    a = parent(a);
  }
}

bool cmx_dtype_issubdtype(cmx_dtype t, cmx_dtype_category c) {
  return cmx_category_issubcategory(cmx_dtype_kind(t), c);
}

static cmx_dtype signed_of_size(size_t bytes) {
  return bytes <= 1   ? CMX_INT8
         : bytes == 2 ? CMX_INT16
         : bytes == 4 ? CMX_INT32
                      : CMX_INT64;
}

/* MLX's table (JAX-style lattice without float64 as a default): unsigned
 * with signed widens to the next signed size; uint64 with signed gives
 * float32; float16 with bfloat16 gives float32; complex absorbs all. */
cmx_dtype cmx_dtype_promote(cmx_dtype a, cmx_dtype b) {
  if (a == b) return a;
  if (a == CMX_COMPLEX64 || b == CMX_COMPLEX64) return CMX_COMPLEX64;
  bool fa = cmx_dtype_is_floating(a), fb = cmx_dtype_is_floating(b);
  if (fa && fb) {
    if (a == CMX_FLOAT64 || b == CMX_FLOAT64) return CMX_FLOAT64;
    return CMX_FLOAT32; /* f32 with f16/bf16, or f16 with bf16 */
  }
  if (fa) return a;
  if (fb) return b;
  if (a == CMX_BOOL) return b;
  if (b == CMX_BOOL) return a;
  bool ua = is_unsigned(a), ub = is_unsigned(b);
  if (ua == ub) return k_sizes[a] >= k_sizes[b] ? a : b;
  cmx_dtype u = ua ? a : b, s = ua ? b : a;
  if (u == CMX_UINT64) return CMX_FLOAT32;
  size_t need = 2 * k_sizes[u];
  return signed_of_size(need > k_sizes[s] ? need : k_sizes[s]);
}

bool cmx_dtype_can_cast(cmx_dtype from, cmx_dtype to) {
  return cmx_dtype_promote(from, to) == to;
}

/* ---- 16-bit floats: bit manipulation, round to nearest even ---- */
static inline uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float cmx_float16_to_float(cmx_float16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return u2f(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

cmx_float16_t cmx_float_to_float16(float f) {
  uint32_t u = f2u(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) /* inf or nan */
    return sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0);
  if (a >= 0x477ff000u) return sign | 0x7c00; /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {
    /* subnormal half (or zero): value / 2^-24, round to nearest even */
    float v = u2f(a) * 16777216.0f; /* exact scaling */
    uint32_t m = (uint32_t)v;
    float rem = v - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
    return sign | (uint16_t)m;
  }
  uint32_t mant = a & 0x7fffff, exp = (a >> 23) - 112;
  uint32_t out = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (out & 1))) out++;
  return sign | (uint16_t)out;
}

float cmx_bfloat16_to_float(cmx_bfloat16_t h) {
  return u2f((uint32_t)h << 16);
}

cmx_bfloat16_t cmx_float_to_bfloat16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
