/* Quantization modes: parsing and checks for all of them, and the
 * microscaled modes mxfp4, mxfp8 and nvfp4 composed of existing ops
 * (format and rounding: ops/quantized_fp.h). */
#include "ops/quantized_fp.h"

#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"

static const char* const mode_names[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};

const char* cmx__qmode_name(int mode) {
  return mode >= 0 && mode <= CMX__QMODE_NVFP4 ? mode_names[mode] : "?";
}

/* The one group size and bit width of a microscaled mode. */
static int fp_group(int mode) {
  return mode == CMX__QMODE_NVFP4 ? 16 : 32;
}
static int fp_bits(int mode) {
  return mode == CMX__QMODE_MXFP8 ? 8 : 4;
}

static int affine_check(const char* op, int* g, int* bits) {
  if (!*g) *g = 64;
  if (!*bits) *bits = 4;
  if (*g != 32 && *g != 64 && *g != 128) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The requested group size %d is not supported. The "
               "supported group sizes are 32, 64, and 128.",
               op, *g);
    return -1;
  }
  if (*bits < 1 || *bits > 8 || *bits == 7) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The requested number of bits %d is not supported. The "
               "supported bits are 1, 2, 3, 4, 5, 6 and 8.",
               op, *bits);
    return -1;
  }
  return CMX__QMODE_AFFINE;
}

int cmx__qmode_check(const char* op, const char* mode, int* g, int* bits) {
  int m = -1;
  if (!mode || !*mode) mode = "affine";
  for (int i = 0; i <= CMX__QMODE_NVFP4; i++)
    if (!strcmp(mode, mode_names[i])) m = i;
  if (m < 0) {
    cmx__error(CMX_ERR_VALUE, "[%s] Invalid quantization mode '%s'.", op, mode);
    return -1;
  }
  if (m == CMX__QMODE_AFFINE) return affine_check(op, g, bits);
  int want_g = fp_group(m), want_b = fp_bits(m);
  if (!*g) *g = want_g;
  if (!*bits) *bits = want_b;
  if (*g != want_g) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] %s quantization requires group size %d but got %d.", op,
               mode, want_g, *g);
    return -1;
  }
  if (*bits != want_b) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] %s quantization requires bits to be %d but got %d.", op,
               mode, want_b, *bits);
    return -1;
  }
  return m;
}

bool cmx__qmode_check_global(const char* op, int mode, cmx_array gs) {
  if (!gs) return true;
  char buf[96];
  if (mode != CMX__QMODE_NVFP4)
    cmx__error(CMX_ERR_VALUE,
               "[%s] Global scale is only supported for 'nvfp4' quantization "
               "mode.",
               op);
  else if (gs->size != 1)
    cmx__error(CMX_ERR_VALUE,
               "[%s] Global scale must be a scalar but got shape %s.", op,
               cmx__shape_str(gs->dims, gs->ndim, buf, sizeof buf));
  else if (gs->dtype != CMX_FLOAT32)
    cmx__error(CMX_ERR_VALUE,
               "[%s] Global scale must have dtype float32 but got %s.", op,
               cmx_dtype_name(gs->dtype));
  else
    return true;
  return false;
}

bool cmx__quant_scales_fit(cmx_array w, cmx_array sc, int g, int bits) {
  int64_t per_word = 32 / bits;
  bool ok = w->ndim >= 1 && sc->ndim == w->ndim &&
            (w->dims[w->ndim - 1] * per_word) % g == 0;
  for (int d = 0; ok && d < w->ndim; d++)
    ok = sc->dims[d] ==
         (d < w->ndim - 1 ? w->dims[d] : w->dims[d] * per_word / g);
  return ok;
}

bool cmx__fp_check_packed(const char* op, cmx_array w, cmx_array sc,
                          cmx_array bi, int mode, bool min2d) {
  char a[96], b[96];
  if (bi) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Biases must be null for quantization mode '%s'.", op,
               cmx__qmode_name(mode));
    return false;
  }
  if (w->dtype != CMX_UINT32) {
    cmx__error(CMX_ERR_VALUE, "[%s] The matrix should be given as a uint32",
               op);
    return false;
  }
  if (sc->dtype != CMX_UINT8) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Scale type must be uint8 but received type %s.", op,
               cmx_dtype_name(sc->dtype));
    return false;
  }
  if (min2d && w->ndim < 2) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The matrix to be dequantized must have at least 2 "
               "dimension but it has only %d.",
               op, w->ndim);
    return false;
  }
  bool ok = cmx__quant_scales_fit(w, sc, fp_group(mode), fp_bits(mode));
  if (!ok)
    cmx__error(CMX_ERR_VALUE,
               "[%s] Shape of scales does not match the matrix given the "
               "quantization parameters. Provided matrix of shape %s and "
               "scales of shape %s.",
               op, cmx__shape_str(w->dims, w->ndim, a, sizeof a),
               cmx__shape_str(sc->dims, sc->ndim, b, sizeof b));
  return ok;
}

/* ---------------- code tables ---------------- */

/* A scope-owned float32 constant of n values. */
static cmx_array table(const char* op, const float* v, int64_t n) {
  cmx_array t = cmx__node_from_data(op, v, &n, 1, CMX_FLOAT32);
  return t ? cmx__own(t) : NULL;
}

/* The float32 values of uint8 scale bytes b: E8M0 (mx) or E4M3 (nvfp4). */
static cmx_array scale_values(cmx_array b, int mode, cmx_stream s) {
  if (mode == CMX__QMODE_NVFP4) return cmx__from_fp8(b, CMX_FLOAT32, s);
  float v[256];
  for (int i = 0; i < 255; i++) v[i] = ldexpf(1.0f, i - 127);
  v[255] = NAN;
  return cmx__take(table("dequantize", v, 256), cmx__astype(b, CMX_INT32, s),
                   NULL, s);
}

/* The E2M1 code of float32 v: the count of thresholds below |v| (ties go
 * toward zero, |v| > 5 saturates to 6), the sign bit (8) only on nonzero
 * codes, infinities and NaN 0. */
static cmx_array e2m1_code(cmx_array v, cmx_stream s) {
  static const float th[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  cmx_array a = cmx__abs(v, s), c = cmx__scalar(0, CMX_UINT8);
  for (int i = 0; i < 7; i++)
    c = cmx__add(
        c,
        cmx__astype(cmx__greater(a, cmx__scalar(th[i], CMX_FLOAT32), s),
                    CMX_UINT8, s),
        s);
  c = cmx__where(cmx__isinf(a, s), cmx__scalar(0, CMX_UINT8), c, s);
  cmx_array neg =
      cmx__logical_and(cmx__less(v, cmx__scalar(0, CMX_FLOAT32), s),
                       cmx__greater(c, cmx__scalar(0, CMX_UINT8), s), s);
  return cmx__add(c,
                  cmx__multiply(cmx__astype(neg, CMX_UINT8, s),
                                cmx__scalar(8, CMX_UINT8), s),
                  s);
}

/* The float32 values of E2M1 codes c (uint8, 0..15). */
static cmx_array e2m1_value(cmx_array c, cmx_stream s) {
  static const float v[16] = {0,  0.5f,  1,  1.5f,  2,  3,  4,  6,
                              -0, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  return cmx__take(table("dequantize", v, 16), cmx__astype(c, CMX_INT32, s),
                   NULL, s);
}

cmx_array cmx__quant_groups(cmx_array a, int64_t g, cmx_stream s) {
  if (!a) return NULL;
  int64_t shp[CMX_MAX_NDIM + 1];
  memcpy(shp, a->dims, (size_t)a->ndim * sizeof *shp);
  shp[a->ndim - 1] = a->dims[a->ndim - 1] / g;
  shp[a->ndim] = g;
  return cmx__reshape(a, shp, a->ndim + 1, s);
}

/* a with its last two axes merged. */
static cmx_array merge_last(cmx_array a, cmx_stream s) {
  return a ? cmx__flatten(a, a->ndim - 2, a->ndim - 1, s) : NULL;
}

/* The effective scale multiplier of nvfp4 with a global scale:
 * global_scale / 2688 (float32). */
static cmx_array global_factor(cmx_array gs, cmx_stream s) {
  return cmx__divide(cmx__reshape(gs, NULL, 0, s),
                     cmx__scalar(2688.0, CMX_FLOAT32), s);
}

/* ---------------- quantize ---------------- */

/* 2688 / global_scale (float32). */
static cmx_array inv_global_factor(cmx_array gs, cmx_stream s) {
  return cmx__divide(cmx__scalar(2688.0, CMX_FLOAT32),
                     cmx__reshape(gs, NULL, 0, s), s);
}

/* E8M0 bytes of float32 s >= 0 (or NaN): ceil(log2 s) + 127 from s's
 * bits (the exponent, plus one when the mantissa is nonzero), 127 for 0,
 * 255 for infinity and NaN. */
static cmx_array e8m0_code(cmx_array sv, cmx_stream s) {
  cmx_array bits = cmx__view(sv, CMX_UINT32, s);
  cmx_array e =
      cmx__bitwise_and(cmx__right_shift(bits, cmx__scalar(23, CMX_UINT32), s),
                       cmx__scalar(255, CMX_UINT32), s);
  cmx_array m = cmx__bitwise_and(bits, cmx__scalar(0x7FFFFF, CMX_UINT32), s);
  e = cmx__add(e,
               cmx__astype(cmx__greater(m, cmx__scalar(0, CMX_UINT32), s),
                           CMX_UINT32, s),
               s);
  e = cmx__minimum(e, cmx__scalar(255, CMX_UINT32), s);
  e = cmx__where(cmx__equal(sv, cmx__scalar(0, CMX_FLOAT32), s),
                 cmx__scalar(127, CMX_UINT32), e, s);
  return cmx__astype(e, CMX_UINT8, s);
}

bool cmx__fp_quantize(cmx_array* wq, cmx_array* scales, cmx_array w, int mode,
                      cmx_array gs, cmx_stream s) {
  int64_t g = fp_group(mode);
  cmx_dtype dt = w->dtype == CMX_FLOAT64 ? CMX_FLOAT32 : w->dtype;
  if (w->size == 0) { /* nothing to reduce: empty outputs */
    int64_t shp[CMX_MAX_NDIM];
    memcpy(shp, w->dims, (size_t)w->ndim * sizeof *shp);
    shp[w->ndim - 1] = w->dims[w->ndim - 1] * fp_bits(mode) / 32;
    *wq = cmx__zeros(shp, w->ndim, CMX_UINT32, s);
    shp[w->ndim - 1] = w->dims[w->ndim - 1] / g;
    *scales = cmx__zeros(shp, w->ndim, CMX_UINT8, s);
    return *wq && *scales;
  }
  cmx_array wg = cmx__quant_groups(cmx__as_dtype(w, dt, s), g, s);
  int last = -1;
  /* s = amax / emax, rounded to w's dtype */
  cmx_array amax = cmx__max(cmx__abs(wg, s), &last, 1, true, s);
  double emax = mode == CMX__QMODE_MXFP8 ? 448.0 : 6.0;
  cmx_array sv =
      cmx__astype(cmx__divide(amax, cmx__scalar(emax, dt), s), CMX_FLOAT32, s);
  cmx_array code, val;
  if (mode == CMX__QMODE_NVFP4) {
    if (gs) sv = cmx__multiply(sv, inv_global_factor(gs, s), s);
    code = cmx__to_fp8(sv, s);
    val = cmx__from_fp8(code, CMX_FLOAT32, s);
  } else {
    code = e8m0_code(sv, s);
    val = scale_values(code, mode, s);
  }
  /* w / scale rounded to w's dtype, then times 2688 / global_scale */
  cmx_array v = cmx__astype(
      cmx__astype(cmx__divide(cmx__astype(wg, CMX_FLOAT32, s), val, s), dt, s),
      CMX_FLOAT32, s);
  if (gs) v = cmx__multiply(v, inv_global_factor(gs, s), s);
  cmx_array q;
  if (mode == CMX__QMODE_MXFP8) {
    q = merge_last(cmx__to_fp8(v, s), s);
  } else { /* pairs of codes into bytes: low nibble first */
    static const uint8_t nib[2] = {1, 16};
    int64_t two = 2;
    cmx_array mul = cmx__node_from_data("quantize", nib, &two, 1, CMX_UINT8);
    if (!mul) return false;
    mul = cmx__own(mul);
    q = cmx__quant_groups(merge_last(e2m1_code(v, s), s), 2, s);
    q = cmx__astype(cmx__sum(cmx__multiply(q, mul, s), &last, 1, false, s),
                    CMX_UINT8, s);
  }
  *wq = cmx__view(cmx__contiguous(q, false, s), CMX_UINT32, s);
  *scales = cmx__squeeze(code, &last, 1, s);
  return *wq && *scales;
}

/* ---------------- dequantize ---------------- */

cmx_array cmx__fp_dequantize(cmx_array w, cmx_array scales, int mode,
                             cmx_array gs, cmx_dtype dt, cmx_stream s) {
  if (w->size == 0) {
    int64_t shp[CMX_MAX_NDIM];
    memcpy(shp, w->dims, (size_t)w->ndim * sizeof *shp);
    shp[w->ndim - 1] = w->dims[w->ndim - 1] * 32 / fp_bits(mode);
    return cmx__zeros(shp, w->ndim, dt, s);
  }
  /* integer codes and scales carry no gradient */
  w = cmx__stop_gradient(w, s);
  scales = cmx__stop_gradient(scales, s);
  cmx_array bytes = cmx__view(cmx__contiguous(w, false, s), CMX_UINT8, s);
  cmx_array v;
  if (mode == CMX__QMODE_MXFP8) {
    v = cmx__from_fp8(bytes, CMX_FLOAT32, s);
  } else {
    cmx_array lo = cmx__bitwise_and(bytes, cmx__scalar(15, CMX_UINT8), s);
    cmx_array hi = cmx__right_shift(bytes, cmx__scalar(4, CMX_UINT8), s);
    cmx_array pair[2] = {lo, hi};
    v = e2m1_value(merge_last(cmx__stack(pair, 2, -1, s), s), s);
  }
  cmx_array sv = scale_values(scales, mode, s);
  if (gs) sv = cmx__multiply(sv, global_factor(gs, s), s);
  /* the product in the output dtype (float32 for float64), as MLX's */
  cmx_dtype kt = dt == CMX_FLOAT64 ? CMX_FLOAT32 : dt;
  int last = -1;
  cmx_array r =
      cmx__multiply(cmx__quant_groups(cmx__astype(v, kt, s), fp_group(mode), s),
                    cmx__expand_dims(cmx__astype(sv, kt, s), &last, 1, s), s);
  return cmx__astype(merge_last(r, s), dt, s);
}
