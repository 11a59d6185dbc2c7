/* quantize, dequantize, quantized_matmul and gather_qmm (MLX's affine
 * format, see cmx/quantize.h, on the Quantize, Dequantize and
 * QuantizedMatmul primitives; the microscaled modes composed in
 * ops/quantized_fp.c), with MLX's checks and messages. */
#include "primitives/quantized.h"

#include <string.h>

#include "cmx/quantize.h"
#include "ops/ops_internal.h"
#include "ops/quantized_fp.h"

static cmx__quant_params make_params(int g, int bits, bool transpose) {
  cmx__quant_params q;
  memset(&q, 0, sizeof q);
  q.group_size = g;
  q.bits = bits;
  q.transpose = transpose;
  return q;
}

/* ---------------- quantize ---------------- */

static bool quantize_op(cmx_array* outs, cmx_array w, int g, int bits,
                        const char* mode, cmx_array gs, int* m, cmx_stream s) {
  if (!CMX__ARGS("quantize", w) ||
      (*m = cmx__qmode_check("quantize", mode, &g, &bits)) < 0 ||
      !cmx__qmode_check_global("quantize", *m, gs))
    return false;
  char buf[96];
  if (w->ndim < 2) {
    cmx__error(CMX_ERR_VALUE,
               "[quantize] The matrix to be quantized must have at least 2 "
               "dimension but it has only %d.",
               w->ndim);
    return false;
  }
  if (!cmx_dtype_is_floating(w->dtype)) {
    cmx__error(CMX_ERR_VALUE,
               "[quantize] Only real floating types can be quantized but w "
               "has type %s.",
               cmx_dtype_name(w->dtype));
    return false;
  }
  int64_t K = w->dims[w->ndim - 1];
  if (K % g) {
    cmx__error(CMX_ERR_VALUE,
               "[quantize] The last dimension of the matrix needs to be "
               "divisible by the quantization group size %d. However the "
               "provided matrix has shape %s",
               g, cmx__shape_str(w->dims, w->ndim, buf, sizeof buf));
    return false;
  }
  if (*m != CMX__QMODE_AFFINE)
    return cmx__fp_quantize(&outs[0], &outs[1], w, *m, gs, s);
  cmx__quant_params q = make_params(g, bits, false);
  int64_t shp[3][CMX_MAX_NDIM];
  for (int i = 0; i < 3; i++)
    memcpy(shp[i], w->dims, (size_t)w->ndim * sizeof(int64_t));
  shp[0][w->ndim - 1] = K * bits / 32;
  shp[1][w->ndim - 1] = shp[2][w->ndim - 1] = K / g;
  const int64_t* shapes[3] = {shp[0], shp[1], shp[2]};
  int nds[3] = {w->ndim, w->ndim, w->ndim};
  cmx_dtype dt = w->dtype == CMX_FLOAT64 ? CMX_FLOAT32 : w->dtype;
  cmx_dtype dts[3] = {CMX_UINT32, dt, dt};
  cmx_array x = cmx__as_dtype(w, dt, s);
  return x && cmx__apply_n(&cmx__vt_Quantize, &q, sizeof q, s, &x, 1, outs, 3,
                           shapes, nds, dts) == CMX_OK;
}

cmx_status cmx_quantize_global(cmx_array* wq, cmx_array* scales,
                               cmx_array* biases, cmx_array w, int group_size,
                               int bits, const char* mode,
                               cmx_array global_scale, cmx_stream s) {
  if (!wq || !scales || !biases)
    return cmx__error(CMX_ERR_VALUE, "[quantize] output pointer is NULL");
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx_array outs[3] = {NULL, NULL, NULL}, res[3] = {NULL, NULL, NULL};
  int m = CMX__QMODE_AFFINE;
  bool ok = quantize_op(outs, w, group_size, bits, mode, global_scale, &m, s);
  int n = m == CMX__QMODE_AFFINE ? 3 : 2; /* no biases in the fp modes */
  cmx_status st = cmx__scope_exit_multi(mark, ok, outs, n);
  memcpy(res, outs, (size_t)n * sizeof *res);
  *wq = res[0];
  *scales = res[1];
  *biases = res[2];
  return st;
}

cmx_status cmx_quantize(cmx_array* wq, cmx_array* scales, cmx_array* biases,
                        cmx_array w, int group_size, int bits, const char* mode,
                        cmx_stream s) {
  return cmx_quantize_global(wq, scales, biases, w, group_size, bits, mode,
                             NULL, s);
}

/* ---------------- dequantize ---------------- */

/* Checks that scales and biases fit packed w; false with MLX's message. */
static bool check_groups(const char* op, cmx_array w, cmx_array sc,
                         cmx_array bi, int g, int bits) {
  char a[96], b[96];
  bool ok = sc->ndim == w->ndim && bi->ndim == w->ndim &&
            (w->dims[w->ndim - 1] * 32) % bits == 0 &&
            (w->dims[w->ndim - 1] * 32 / bits) % g == 0;
  for (int d = 0; ok && d < w->ndim; d++) {
    int64_t want = d < w->ndim - 1 ? w->dims[d] : w->dims[d] * 32 / bits / g;
    ok = sc->dims[d] == want && bi->dims[d] == want;
  }
  if (!ok)
    cmx__error(CMX_ERR_VALUE,
               "[%s] Shape of scales and biases does not match the matrix "
               "given the quantization parameters. Provided matrix of shape "
               "%s and scales/biases of shape %s with group_size=%d and "
               "bits=%d.",
               op, cmx__shape_str(w->dims, w->ndim, a, sizeof a),
               cmx__shape_str(sc->dims, sc->ndim, b, sizeof b), g, bits);
  return ok;
}

static bool check_packed(const char* op, cmx_array w, cmx_array sc,
                         cmx_array bi) {
  if (!bi) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Biases must be provided for affine quantization.", op);
    return false;
  }
  if (w->dtype != CMX_UINT32) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The matrix should be given as a uint32 but it has type "
               "%s.",
               op, cmx_dtype_name(w->dtype));
    return false;
  }
  if (w->ndim < 1 || !cmx_dtype_is_floating(sc->dtype) ||
      !cmx_dtype_is_floating(bi->dtype)) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Expects a packed matrix with at least one dimension "
               "and floating scales and biases.",
               op);
    return false;
  }
  return true;
}

cmx_array cmx__dequantize(cmx_array w, cmx_array scales, cmx_array biases,
                          int g, int bits, cmx_dtype dt, cmx_stream s) {
  if (!CMX__ARGS("dequantize", w, scales) ||
      !check_packed("dequantize", w, scales, biases) ||
      !check_groups("dequantize", w, scales, biases, g, bits))
    return NULL;
  if (dt == CMX_DTYPE_AUTO) dt = scales->dtype;
  if (!cmx_dtype_is_floating(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[dequantize] The output dtype must be floating, not %s.",
                     cmx_dtype_name(dt));
  cmx_dtype kt = dt == CMX_FLOAT64 ? CMX_FLOAT32 : dt;
  cmx__quant_params q = make_params(g, bits, false);
  int64_t shp[CMX_MAX_NDIM];
  memcpy(shp, w->dims, (size_t)w->ndim * sizeof *shp);
  shp[w->ndim - 1] = w->dims[w->ndim - 1] * 32 / bits;
  cmx_array in[3] = {w, scales, biases};
  return cmx__as_dtype(
      cmx__apply(&cmx__vt_Dequantize, &q, sizeof q, s, in, 3, shp, w->ndim, kt),
      dt, s);
}

static cmx_array dequantize_op(cmx_array w, cmx_array sc, cmx_array bi, int g,
                               int bits, const char* mode, cmx_array gs,
                               cmx_dtype dt, cmx_stream s) {
  static const char* op = "dequantize";
  int m = cmx__qmode_check(op, mode, &g, &bits);
  if (m < 0 || !cmx__qmode_check_global(op, m, gs)) return NULL;
  if (m == CMX__QMODE_AFFINE) return cmx__dequantize(w, sc, bi, g, bits, dt, s);
  if (!CMX__ARGS(op, w, sc) || !cmx__fp_check_packed(op, w, sc, bi, m, true))
    return NULL;
  if (dt == CMX_DTYPE_AUTO) dt = CMX_BFLOAT16; /* MLX's default */
  if (!cmx_dtype_is_floating(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[dequantize] Only real floating types are supported but "
                     "output dtype == %s.",
                     cmx_dtype_name(dt));
  return cmx__fp_dequantize(w, sc, m, gs, dt, s);
}

cmx_status cmx_dequantize_global(cmx_array* out, cmx_array w, cmx_array scales,
                                 cmx_array biases, int group_size, int bits,
                                 const char* mode, cmx_array global_scale,
                                 cmx_dtype out_dtype, cmx_stream s) {
  CMX__PUBLIC(out, "dequantize",
              dequantize_op(w, scales, biases, group_size, bits, mode,
                            global_scale, out_dtype, s));
}

cmx_status cmx_dequantize(cmx_array* out, cmx_array w, cmx_array scales,
                          cmx_array biases, int group_size, int bits,
                          const char* mode, cmx_dtype out_dtype, cmx_stream s) {
  return cmx_dequantize_global(out, w, scales, biases, group_size, bits, mode,
                               NULL, out_dtype, s);
}

/* ---------------- quantized_matmul ---------------- */

cmx_array cmx__qmm_composite(const cmx__quant_params* q, const cmx_array* in,
                             cmx_stream s) {
  cmx_dtype dt = in[0] ? in[0]->dtype : CMX_FLOAT32;
  cmx_array W =
      q->mode == CMX__QMODE_AFFINE
          ? cmx__dequantize(in[1], in[2], in[3], q->group_size, q->bits, dt, s)
          : cmx__fp_dequantize(in[1], in[2], q->mode, NULL, dt, s);
  if (q->transpose) W = cmx__swapaxes(W, -1, -2, s);
  return cmx__matmul(in[0], W, s);
}

/* Checks that x (at least 1-d) meets the matrix that packed w (at least
 * 2-d) expands to; false with MLX's message naming op otherwise. */
bool cmx__qmm_check_k(const char* op, cmx_array x, cmx_array w, int g, int bits,
                      bool transpose) {
  char buf[96];
  if (w->ndim < 2 || x->ndim < 1) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The quantized matrix must have at least 2 dimensions "
               "and x at least 1.",
               op);
    return false;
  }
  int64_t rows = w->dims[w->ndim - 2], cols = w->dims[w->ndim - 1] * 32 / bits;
  int64_t K = transpose ? cols : rows, N = transpose ? rows : cols;
  if (x->dims[x->ndim - 1] == K) return true;
  cmx__error(CMX_ERR_VALUE,
             "[%s] Last dimension of first input with shape (..., %lld) does "
             "not match the expanded quantized matrix (%lld, %lld) computed "
             "from shape %s with group_size=%d, bits=%d and transpose=%s",
             op, (long long)x->dims[x->ndim - 1], (long long)K, (long long)N,
             cmx__shape_str(w->dims, w->ndim, buf, sizeof buf), g, bits,
             transpose ? "true" : "false");
  return false;
}

/* The QuantizedMatmul node of checked arguments: x (as dt, float32 for
 * float64) and the packed matrix broadcast to their common batch shape;
 * bi NULL in the microscaled modes. The result has dtype dt. */
static cmx_array qmm_apply(const char* op, cmx_array x, cmx_array w,
                           cmx_array sc, cmx_array bi, bool transpose, int m,
                           int g, int bits, cmx_dtype dt, cmx_stream s) {
  int64_t rows = w->dims[w->ndim - 2], cols = w->dims[w->ndim - 1] * 32 / bits;
  int64_t K = transpose ? cols : rows, N = transpose ? rows : cols;
  bool vec = x->ndim == 1;
  cmx_array xx = vec ? cmx__expand_dims(x, (int[]){0}, 1, s) : x;
  if (!xx) return NULL;
  /* batch shape: broadcast of x's and w's leading dimensions */
  int64_t bshape[CMX_MAX_NDIM];
  int bnd;
  if (!cmx__broadcast_shape(op, xx->dims, xx->ndim - 2, w->dims, w->ndim - 2,
                            bshape, &bnd))
    return NULL;
  int64_t M = xx->dims[xx->ndim - 2];
  cmx_dtype kt = dt == CMX_FLOAT64 ? CMX_FLOAT32 : dt;
  int64_t xs[CMX_MAX_NDIM], ws[CMX_MAX_NDIM], ss[CMX_MAX_NDIM],
      os[CMX_MAX_NDIM];
  memcpy(xs, bshape, (size_t)bnd * sizeof *xs);
  memcpy(ws, bshape, (size_t)bnd * sizeof *ws);
  memcpy(ss, bshape, (size_t)bnd * sizeof *ss);
  memcpy(os, bshape, (size_t)bnd * sizeof *os);
  xs[bnd] = M;
  xs[bnd + 1] = K;
  ws[bnd] = ss[bnd] = w->dims[w->ndim - 2];
  ws[bnd + 1] = w->dims[w->ndim - 1];
  ss[bnd + 1] = sc->dims[sc->ndim - 1];
  os[bnd] = M;
  os[bnd + 1] = N;
  cmx__quant_params q = make_params(g, bits, transpose);
  q.mode = m;
  cmx_array in[4] = {
      cmx__broadcast_to(cmx__as_dtype(xx, kt, s), xs, bnd + 2, s),
      cmx__broadcast_to(cmx__contiguous(w, false, s), ws, bnd + 2, s),
      cmx__broadcast_to(cmx__contiguous(sc, false, s), ss, bnd + 2, s),
      bi ? cmx__broadcast_to(cmx__contiguous(bi, false, s), ss, bnd + 2, s)
         : NULL};
  cmx_array r = cmx__apply(&cmx__vt_QuantizedMatmul, &q, sizeof q, s, in,
                           bi ? 4 : 3, os, bnd + 2, kt);
  r = cmx__as_dtype(r, dt, s);
  if (vec) r = cmx__squeeze(r, (int[]){-2}, 1, s);
  return r;
}

/* quantized_matmul in a microscaled mode: x @ the dequantized matrix (x's
 * dtype), composed. */
static cmx_array fp_qmm(const char* op, cmx_array x, cmx_array w, cmx_array sc,
                        cmx_array bi, cmx_array gs, bool transpose, int m,
                        int g, int bits, cmx_stream s) {
  if (!cmx__fp_check_packed(op, w, sc, bi, m, false) ||
      !cmx__qmm_check_k(op, x, w, g, bits, transpose))
    return NULL;
  if (!cmx_dtype_is_floating(x->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Only real floating types are supported but "
                     "x.dtype() == %s.",
                     op, cmx_dtype_name(x->dtype));
  /* the CPU kernel (no global scale); elsewhere composed */
  const cmx__stream* st = cmx__stream_resolve(s, op);
  if (!st) return NULL;
  if (!gs && st->device.type == CMX_CPU)
    return qmm_apply(op, x, w, sc, NULL, transpose, m, g, bits, x->dtype, s);
  cmx_array W = cmx__fp_dequantize(w, sc, m, gs, x->dtype, s);
  if (transpose) W = cmx__swapaxes(W, -1, -2, s);
  return cmx__matmul(x, W, s);
}

static cmx_array qmm_op(const char* op, cmx_array x, cmx_array w, cmx_array sc,
                        cmx_array bi, cmx_array gs, bool transpose, int g,
                        int bits, const char* mode, cmx_stream s) {
  int m;
  if (!CMX__ARGS(op, x, w, sc) ||
      (m = cmx__qmode_check(op, mode, &g, &bits)) < 0 ||
      !cmx__qmode_check_global(op, m, gs))
    return NULL;
  if (m != CMX__QMODE_AFFINE)
    return fp_qmm(op, x, w, sc, bi, gs, transpose, m, g, bits, s);
  if (!check_packed(op, w, sc, bi) || !check_groups(op, w, sc, bi, g, bits) ||
      !cmx__qmm_check_k(op, x, w, g, bits, transpose))
    return NULL;
  cmx_array ops_[3] = {x, sc, bi};
  cmx_dtype dt = cmx__result_type(ops_, 3);
  if (!cmx_dtype_is_floating(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Only real floating types are supported but the "
                     "inputs promote to %s.",
                     op, cmx_dtype_name(dt));
  return qmm_apply(op, x, w, sc, bi, transpose, m, g, bits, dt, s);
}

cmx_status cmx_quantized_matmul(cmx_array* out, cmx_array x, cmx_array w,
                                cmx_array scales, cmx_array biases,
                                bool transpose, int group_size, int bits,
                                const char* mode, cmx_stream s) {
  CMX__PUBLIC(out, "quantized_matmul",
              qmm_op("quantized_matmul", x, w, scales, biases, NULL, transpose,
                     group_size, bits, mode, s));
}

/* ---------------- gather_qmm ---------------- */

cmx_array cmx__gather_batch(cmx_array a, cmx_array idx, cmx_stream s) {
  if (!a) return NULL;
  int nb = a->ndim - 2;
  int64_t shp[3] = {1, a->dims[nb], a->dims[nb + 1]};
  for (int d = 0; d < nb; d++) shp[0] *= a->dims[d];
  if (!idx)
    idx = cmx__reshape(cmx__arange(0, (double)shp[0], 1, CMX_UINT32, s),
                       a->dims, nb, s);
  int zero = 0;
  return cmx__take(cmx__reshape(a, shp, 3, s), idx, &zero, s);
}

static cmx_array gather_qmm_op(cmx_array x, cmx_array w, cmx_array sc,
                               cmx_array bi, cmx_array gs, cmx_array lhs,
                               cmx_array rhs, bool transpose, int g, int bits,
                               const char* mode, cmx_stream s) {
  static const char* op = "gather_qmm";
  int m;
  if (!CMX__ARGS(op, x, w, sc) ||
      (m = cmx__qmode_check(op, mode, &g, &bits)) < 0 ||
      !cmx__qmode_check_global(op, m, gs))
    return NULL;
  if (m == CMX__QMODE_AFFINE ? !check_packed(op, w, sc, bi) ||
                                   !check_groups(op, w, sc, bi, g, bits)
                             : !cmx__fp_check_packed(op, w, sc, bi, m, true))
    return NULL;
  if (x->ndim < 2 || w->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather_qmm] x and w must have at least 2 dimensions.");
  if ((lhs && !cmx_dtype_is_integer(lhs->dtype)) ||
      (rhs && !cmx_dtype_is_integer(rhs->dtype)))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather_qmm] Got lhs_indices or rhs_indices with a "
                     "non-integer type.");
  cmx_array bt = bi ? cmx__gather_batch(bi, rhs, s) : NULL;
  if (bi && !bt) return NULL;
  return qmm_op(op, cmx__gather_batch(x, lhs, s), cmx__gather_batch(w, rhs, s),
                cmx__gather_batch(sc, rhs, s), bt, gs, transpose, g, bits, mode,
                s);
}

cmx_status cmx_gather_qmm_global(cmx_array* out, cmx_array x, cmx_array w,
                                 cmx_array scales, cmx_array biases,
                                 cmx_array lhs_indices, cmx_array rhs_indices,
                                 bool transpose, int group_size, int bits,
                                 const char* mode, cmx_array global_scale,
                                 bool sorted_indices, cmx_stream s) {
  (void)sorted_indices; /* a hint for kernels that group by index */
  CMX__PUBLIC(out, "gather_qmm",
              gather_qmm_op(x, w, scales, biases, global_scale, lhs_indices,
                            rhs_indices, transpose, group_size, bits, mode, s));
}

cmx_status cmx_gather_qmm(cmx_array* out, cmx_array x, cmx_array w,
                          cmx_array scales, cmx_array biases,
                          cmx_array lhs_indices, cmx_array rhs_indices,
                          bool transpose, int group_size, int bits,
                          const char* mode, bool sorted_indices, cmx_stream s) {
  return cmx_gather_qmm_global(out, x, w, scales, biases, lhs_indices,
                               rhs_indices, transpose, group_size, bits, mode,
                               NULL, sorted_indices, s);
}
