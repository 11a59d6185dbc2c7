/* to_fp8 and from_fp8: MLX's 8-bit float E4M3 codes (bias 7, no infinity,
 * 0x7F / 0xFF NaN) stored as uint8. Composed of existing ops, so they run
 * on every device and under every transform. */
#include <math.h>
#include <string.h>

#include "cmx/quantize.h"
#include "ops/ops_internal.h"
#include "ops/quantized_fp.h"

/* ---------------- to_fp8 ---------------- */
/* Codes of |x| (not NaN, below 448) in the work dtype w (float32, or
 * float64 for float64 input, so that nothing is rounded twice). With
 * e = max(floor(log2 |x|), -6), the code is (e + 6) * 8 +
 * round_half_even(|x| * 2^(3 - e)): the mantissa scaled to [8, 16], a
 * carry to 16 being the next exponent's code, and e = -6 giving the
 * subnormals in units of 2^-9. */
static cmx_array magnitude_code(cmx_array a, cmx_dtype w, cmx_stream s) {
  bool f64 = w == CMX_FLOAT64;
  cmx_dtype u = f64 ? CMX_UINT64 : CMX_UINT32;
  int mant = f64 ? 52 : 23, bias = f64 ? 1023 : 127;
  cmx_array biased = cmx__bitwise_and(
      cmx__right_shift(cmx__view(a, u, s), cmx__scalar(mant, u), s),
      cmx__scalar(f64 ? 0x7FF : 0xFF, u), s);
  cmx_array e = cmx__maximum(cmx__subtract(cmx__astype(biased, CMX_INT32, s),
                                           cmx__scalar(bias, CMX_INT32), s),
                             cmx__scalar(-6, CMX_INT32), s);
  /* 2^(3 - e) built from its exponent bits (3 - e lies in [-5, 9]). */
  cmx_array pbits = cmx__left_shift(
      cmx__astype(cmx__subtract(cmx__scalar(bias + 3, CMX_INT32), e, s), u, s),
      cmx__scalar(mant, u), s);
  cmx_array m = cmx__round(cmx__multiply(a, cmx__view(pbits, w, s), s), 0, s);
  return cmx__add(cmx__multiply(cmx__add(e, cmx__scalar(6, CMX_INT32), s),
                                cmx__scalar(8, CMX_INT32), s),
                  cmx__astype(m, CMX_INT32, s), s);
}

cmx_array cmx__to_fp8(cmx_array x, cmx_stream s) {
  if (!CMX__ARGS("to_fp8", x)) return NULL;
  if (!cmx_dtype_is_floating(x->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[to_fp8] Only real floating types are supported but "
                     "x.dtype() == %s.",
                     cmx_dtype_name(x->dtype));
  /* The sign bit from x's own bits (kept for -0.0 and negative NaN). */
  size_t bytes = cmx_dtype_size(x->dtype);
  cmx_dtype u = bytes == 2 ? CMX_UINT16 : bytes == 4 ? CMX_UINT32 : CMX_UINT64;
  cmx_array sign = cmx__left_shift(
      cmx__astype(cmx__right_shift(cmx__view(x, u, s),
                                   cmx__scalar((double)(bytes * 8 - 1), u), s),
                  CMX_INT32, s),
      cmx__scalar(7, CMX_INT32), s);
  cmx_dtype w = x->dtype == CMX_FLOAT64 ? CMX_FLOAT64 : CMX_FLOAT32;
  cmx_array a = cmx__abs(cmx__astype(x, w, s), s);
  if (!a) return NULL;
  /* NaN and |x| >= 448 (infinity included) saturate to 448's code 126. */
  cmx_array big = cmx__logical_or(
      cmx__isnan(a, s), cmx__greater_equal(a, cmx__scalar(448.0, w), s), s);
  /* (Those become 0 before the code math: no NaN reaches an int cast.) */
  cmx_array finite = cmx__where(big, cmx__scalar(0.0, w), a, s);
  cmx_array code = cmx__where(big, cmx__scalar(126, CMX_INT32),
                              magnitude_code(finite, w, s), s);
  return cmx__astype(cmx__bitwise_or(code, sign, s), CMX_UINT8, s);
}

cmx_status cmx_to_fp8(cmx_array* out, cmx_array x, cmx_stream s) {
  CMX__PUBLIC(out, "to_fp8", cmx__to_fp8(x, s));
}

/* ---------------- from_fp8 ---------------- */
/* The value of E4M3 code c (exact in float32). */
static float fp8_value(int c) {
  int e = (c >> 3) & 15, m = c & 7;
  float v;
  if (e == 15 && m == 7)
    v = NAN;
  else if (e == 0)
    v = ldexpf((float)m, -9);
  else
    v = ldexpf((float)(8 + m), e - 10);
  return (c & 128) ? -v : v;
}

cmx_array cmx__from_fp8(cmx_array x, cmx_dtype dtype, cmx_stream s) {
  if (!CMX__ARGS("from_fp8", x)) return NULL;
  if (x->dtype != CMX_UINT8)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[from_fp8] Input must have type uint8 but x.dtype() == "
                     "%s.",
                     cmx_dtype_name(x->dtype));
  if (!cmx_dtype_is_floating(dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[from_fp8] Only real floating types are supported but "
                     "dtype == %s.",
                     cmx_dtype_name(dtype));
  float table[256];
  for (int c = 0; c < 256; c++) table[c] = fp8_value(c);
  int64_t n = 256;
  cmx_array t = cmx__node_from_data("from_fp8", table, &n, 1, CMX_FLOAT32);
  if (!t) return NULL;
  t = cmx__own(t);
  return cmx__astype(cmx__take(t, cmx__astype(x, CMX_INT32, s), NULL, s), dtype,
                     s);
}

cmx_status cmx_from_fp8(cmx_array* out, cmx_array x, cmx_dtype dtype,
                        cmx_stream s) {
  CMX__PUBLIC(out, "from_fp8", cmx__from_fp8(x, dtype, s));
}
