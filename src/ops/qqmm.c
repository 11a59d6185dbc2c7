/* qqmm and gather_qqmm: matrix products of a quantized-on-the-fly x with a
 * weight that is quantized (packed words and scales) or quantized on the
 * fly too, in a microscaled mode (ops/quantized_fp.h). Composed: both
 * sides are decoded to float32 and multiplied in float32, the result in
 * x's dtype. */
#include <string.h>

#include "cmx/quantize.h"
#include "ops/ops_internal.h"
#include "ops/quantized_fp.h"

/* Checks the mode (affine is refused: qqmm has no biases), x's dtype, the
 * global scales, and w with its scales: packed (uint32, scales required
 * and of the matching shape) or floating (no scales). Returns the mode or
 * -1 with the error set. */
static int qqmm_check(const char* op, cmx_array x, cmx_array w, cmx_array sc,
                      const char* mode, int* g, int* bits, cmx_array gsx,
                      cmx_array gsw) {
  char a[96], b[96];
  if (!CMX__ARGS(op, x, w)) return -1;
  if (!mode) mode = "nvfp4";
  int m = cmx__qmode_check(op, mode, g, bits);
  if (m < 0) return -1;
  if (m == CMX__QMODE_AFFINE) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Only the 'mxfp4', 'mxfp8' and 'nvfp4' modes are "
               "supported, not 'affine'.",
               op);
    return -1;
  }
  if (!cmx_dtype_is_floating(x->dtype) || x->dtype == CMX_FLOAT64) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Only real floating types except float64 are supported "
               "but first argument dtype == %s.",
               op, cmx_dtype_name(x->dtype));
    return -1;
  }
  if (!cmx__qmode_check_global(op, m, gsx) ||
      !cmx__qmode_check_global(op, m, gsw))
    return -1;
  if (w->dtype != CMX_UINT32) {
    if (!cmx_dtype_is_floating(w->dtype) || w->dtype == CMX_FLOAT64) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Only real floating types except float64 are supported "
                 "but second argument dtype == %s.",
                 op, cmx_dtype_name(w->dtype));
      return -1;
    }
    if (sc) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Scales were given but the second argument is not "
                 "quantized (uint32).",
                 op);
      return -1;
    }
    return m;
  }
  if (!sc) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Scales must be provided if second argument is quantized.",
               op);
    return -1;
  }
  bool ok = sc->dtype == CMX_UINT8 && cmx__quant_scales_fit(w, sc, *g, *bits);
  if (!ok)
    cmx__error(CMX_ERR_VALUE,
               "[%s] The shapes of the weight and scales are incompatible "
               "based on bits and group_size. w.shape() == %s and "
               "scales.shape() == %s with group_size=%d and bits=%d",
               op, cmx__shape_str(w->dims, w->ndim, a, sizeof a),
               cmx__shape_str(sc->dims, sc->ndim, b, sizeof b), *g, *bits);
  return ok ? m : -1;
}

/* a (floating, at least 1-d) quantized along its last axis and decoded
 * again to float32. */
static cmx_array round_trip(const char* op, cmx_array a, int m, cmx_array gs,
                            cmx_stream s) {
  char buf[96];
  int g = m == CMX__QMODE_NVFP4 ? 16 : 32;
  if (a->dims[a->ndim - 1] % g)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] The last dimension of the matrix needs to be "
                     "divisible by the quantization group size %d. However "
                     "the provided matrix has shape %s",
                     op, g, cmx__shape_str(a->dims, a->ndim, buf, sizeof buf));
  bool vec = a->ndim == 1;
  cmx_array a2 = vec ? cmx__expand_dims(a, (int[]){0}, 1, s) : a;
  cmx_array q, sc;
  if (!a2 || !cmx__fp_quantize(&q, &sc, a2, m, gs, s)) return NULL;
  cmx_array r = cmx__fp_dequantize(q, sc, m, gs, CMX_FLOAT32, s);
  return vec ? cmx__squeeze(r, (int[]){0}, 1, s) : r;
}

/* x @ W.T with x and W quantized: W decoded from (w, sc) when packed,
 * else w quantized on the fly. Shapes already checked. */
static cmx_array qq_product(const char* op, cmx_array x, cmx_array w,
                            cmx_array sc, int m, cmx_array gsx, cmx_array gsw,
                            cmx_stream s) {
  cmx_array W = w->dtype == CMX_UINT32
                    ? cmx__fp_dequantize(w, sc, m, gsw, CMX_FLOAT32, s)
                    : round_trip(op, w, m, gsw, s);
  cmx_array r =
      cmx__matmul(round_trip(op, x, m, gsx, s), cmx__swapaxes(W, -1, -2, s), s);
  return cmx__astype(r, x->dtype, s);
}

/* The packed-or-not w's expanded (N, K) check, as quantized_matmul's. */
static bool check_k(const char* op, cmx_array x, cmx_array w, int g, int bits) {
  if (w->dtype == CMX_UINT32) return cmx__qmm_check_k(op, x, w, g, bits, true);
  char buf[96];
  if (x->ndim >= 1 && w->ndim >= 2 &&
      x->dims[x->ndim - 1] == w->dims[w->ndim - 1])
    return true;
  cmx__error(CMX_ERR_VALUE,
             "[%s] Last dimension of first input with shape (..., %lld) does "
             "not match the second input with shape %s.",
             op, x->ndim ? (long long)x->dims[x->ndim - 1] : 0LL,
             cmx__shape_str(w->dims, w->ndim, buf, sizeof buf));
  return false;
}

static cmx_array qqmm_op(cmx_array x, cmx_array w, cmx_array sc, int g,
                         int bits, const char* mode, cmx_array gsx,
                         cmx_array gsw, cmx_stream s) {
  static const char* op = "qqmm";
  int m = qqmm_check(op, x, w, sc, mode, &g, &bits, gsx, gsw);
  if (m < 0) return NULL;
  if (w->ndim != 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[qqmm] Only 2D inputs are supported but x.ndim() == %d "
                     "and w.ndim() == %d.",
                     x->ndim, w->ndim);
  if (!check_k(op, x, w, g, bits)) return NULL;
  return qq_product(op, x, w, sc, m, gsx, gsw, s);
}

cmx_status cmx_qqmm(cmx_array* out, cmx_array x, cmx_array w, cmx_array scales,
                    int group_size, int bits, const char* mode,
                    cmx_array global_scale_x, cmx_array global_scale_w,
                    cmx_stream s) {
  CMX__PUBLIC(out, "qqmm",
              qqmm_op(x, w, scales, group_size, bits, mode, global_scale_x,
                      global_scale_w, s));
}

/* ---------------- gather_qqmm ---------------- */

static cmx_array gather_qqmm_op(cmx_array x, cmx_array w, cmx_array sc,
                                cmx_array lhs, cmx_array rhs, int g, int bits,
                                const char* mode, cmx_array gsx, cmx_array gsw,
                                cmx_stream s) {
  static const char* op = "gather_qqmm";
  int m = qqmm_check(op, x, w, sc, mode, &g, &bits, gsx, gsw);
  if (m < 0) return NULL;
  if (x->ndim < 2 || w->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather_qqmm] x and w must have at least 2 dimensions.");
  if ((lhs && !cmx_dtype_is_integer(lhs->dtype)) ||
      (rhs && !cmx_dtype_is_integer(rhs->dtype)))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather_qqmm] Got lhs_indices or rhs_indices with a "
                     "non-integer type.");
  if (!check_k(op, x, w, g, bits)) return NULL;
  /* the gathered operands broadcast against each other as gather_mm's */
  cmx_array xs = cmx__gather_batch(x, lhs, s),
            ws = cmx__gather_batch(w, rhs, s);
  cmx_array ss = sc ? cmx__gather_batch(sc, rhs, s) : NULL;
  if (!xs || !ws || (sc && !ss)) return NULL;
  return qq_product(op, xs, ws, ss, m, gsx, gsw, s);
}

cmx_status cmx_gather_qqmm(cmx_array* out, cmx_array x, cmx_array w,
                           cmx_array scales, cmx_array lhs_indices,
                           cmx_array rhs_indices, int group_size, int bits,
                           const char* mode, cmx_array global_scale_x,
                           cmx_array global_scale_w, bool sorted_indices,
                           cmx_stream s) {
  (void)sorted_indices; /* a hint for kernels that group by index */
  CMX__PUBLIC(out, "gather_qqmm",
              gather_qqmm_op(x, w, scales, lhs_indices, rhs_indices, group_size,
                             bits, mode, global_scale_x, global_scale_w, s));
}
