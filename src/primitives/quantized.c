/* The vtables of the quantization primitives (see primitives/quantized.h).
 * Their parameters are four ints: compared and hashed as bytes. */
#include "primitives/quantized.h"

#include <stdio.h>

#include "core/backend.h"
#include "core/internal.h"
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static cmx_status quantize_shapes(const cmx_primitive* p, const cmx_array* in,
                                  int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_shape w;
  cmx__shape_of(&w, in[0]);
  if (w.ndim < 1) return cmx__shape_fail(p, "w must have a dimension");
  int64_t K = w.dims[w.ndim - 1];
  for (int i = 0; i < 3; i++) out[i] = w;
  out[0].dims[w.ndim - 1] = K * q->bits / 32;
  out[1].dims[w.ndim - 1] = out[2].dims[w.ndim - 1] = K / q->group_size;
  return CMX_OK;
}

static cmx_status dequantize_shapes(const cmx_primitive* p, const cmx_array* in,
                                    int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx__shape_of(&out[0], in[0]);
  if (out[0].ndim < 1) return cmx__shape_fail(p, "w must have a dimension");
  out[0].dims[out[0].ndim - 1] = out[0].dims[out[0].ndim - 1] * 32 / q->bits;
  return CMX_OK;
}

/* QuantizedMatmul's output shape (parameters q; p names errors). */
static cmx_status qmm_shape_of(const cmx_primitive* p,
                               const cmx__quant_params* q, const cmx_array* in,
                               cmx_shape* out) {
  cmx_shape w;
  cmx__shape_of(&out[0], in[0]);
  cmx__shape_of(&w, in[1]);
  int nd = out[0].ndim;
  if (nd < 2 || w.ndim != nd)
    return cmx__shape_fail(p, "x and w must have the same rank (>= 2)");
  out[0].dims[nd - 1] =
      q->transpose ? w.dims[nd - 2] : w.dims[nd - 1] * 32 / q->bits;
  return CMX_OK;
}

static cmx_status qmm_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  return qmm_shape_of(p, cmx_primitive_params(p), in, out);
}

/* QuantizedMatmulSwiGLU: QuantizedMatmul's shape with half its columns. */
static cmx_status qmm_swiglu_shapes(const cmx_primitive* p, const cmx_array* in,
                                    int nin, cmx_shape* out, int nout) {
  cmx_status st = qmm_shapes(p, in, nin, out, nout);
  if (st != CMX_OK) return st;
  int64_t* n = &out[0].dims[out[0].ndim - 1];
  if (*n % 2) return cmx__shape_fail(p, "an odd number of columns");
  *n /= 2;
  return CMX_OK;
}

/* AddRMSNormQuantizedMatmul: in = {x, r, [weight], wq, scales, biases};
 * h of x's shape, o the consumer's shape for x (QuantizedMatmul's, half
 * its columns for the SwiGLU consumer). */
static cmx_status norm_qmm_shapes(const cmx_primitive* p, const cmx_array* in,
                                  int nin, cmx_shape* out, int nout) {
  const cmx__norm_qmm_params* q = cmx_primitive_params(p);
  int nw = q->norm.has_weight != 0;
  if (nout != 2 || nin != 5 + nw)
    return cmx__shape_fail(p, "expects x, r, [weight], wq, scales, biases");
  cmx__shape_of(&out[0], in[0]);
  /* the consumer's inputs: {y (x's shape), wq, scales, biases} */
  const cmx_array qin[4] = {in[0], in[2 + nw], in[3 + nw], in[4 + nw]};
  cmx_status st = qmm_shape_of(p, &q->q, qin, &out[1]);
  if (st != CMX_OK || !q->swiglu) return st;
  int64_t* n = &out[1].dims[out[1].ndim - 1];
  if (*n % 2) return cmx__shape_fail(p, "an odd number of columns");
  *n /= 2;
  return CMX_OK;
}

cmx_status cmx__norm_qmm_two_step(const cmx_primitive* p, const cmx_array* in,
                                  int nin, const cmx_array* out, int nout) {
  const cmx__norm_qmm_params* q = cmx_primitive_params(p);
  const char* op = "add_rms_norm_quantized_matmul";
  int nw = q->norm.has_weight != 0;
  if (nin != 5 + nw || nout != 2)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] %d inputs, %d outputs", op,
                            nin, nout);
  cmx_stream s = cmx_primitive_stream(p);
  const cmx_primitive_vtable* cvt = q->swiglu ? &cmx__vt_QuantizedMatmulSwiGLU
                                              : &cmx__vt_QuantizedMatmul;
  cmx_kernel_fn kn = cmx__kernel_lookup(&cmx__vt_AddRMSNorm, s.device.type);
  cmx_kernel_fn kq = cmx__kernel_lookup(cvt, s.device.type);
  if (!kn || !kq)
    return cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] no kernel on this device",
                            op);
  cmx_primitive* pn =
      cmx_primitive_new(&cmx__vt_AddRMSNorm, &q->norm, sizeof q->norm, s);
  cmx_primitive* pq = pn ? cmx_primitive_new(cvt, &q->q, sizeof q->q, s) : NULL;
  /* y: AddRMSNorm's second output, which only this kernel sees */
  cmx_array x = in[0];
  cmx_array y = pq ? cmx__node_new(op, x->dims, x->ndim, x->dtype) : NULL;
  cmx_status st = y ? CMX_OK : cmx_last_status();
  if (st == CMX_OK) {
    y->stream = out[0]->stream;
    const cmx_array nout_[2] = {out[0], y};
    st = kn(pn, in, 2 + nw, nout_, 2);
  }
  if (st == CMX_OK) {
    const cmx_array qin[4] = {y, in[2 + nw], in[3 + nw], in[4 + nw]};
    st = kq(pq, qin, 4, &out[1], 1);
  }
  cmx_array_release(y);
  cmx_primitive_release(pq);
  cmx_primitive_release(pn);
  return st;
}

static void quant_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__quant_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "%s(group_size=%d, bits=%d%s)", cmx_primitive_vt(p)->name,
           q->group_size, q->bits, q->transpose ? ", transpose" : "");
}

static void norm_qmm_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__norm_qmm_params* q = cmx_primitive_params(p);
  snprintf(buf, size,
           "AddRMSNormQuantizedMatmul(eps=%g%s, group_size=%d, bits=%d%s)",
           q->norm.eps, q->norm.has_weight ? ", weight" : "", q->q.group_size,
           q->q.bits, q->swiglu ? ", swiglu" : "");
}

CMX__VTABLE(Quantize, .vjp = cmx__vjp_quantize, .jvp = cmx__jvp_quantize,
            .vmap = cmx__vmap_quantized, .print = quant_print,
            .output_shapes = quantize_shapes, .equal = cmx__params_equal_bytes,
            .hash = cmx__params_hash_bytes);
CMX__VTABLE(Dequantize, .vjp = cmx__vjp_dequantize, .jvp = cmx__jvp_dequantize,
            .vmap = cmx__vmap_quantized, .print = quant_print,
            .output_shapes = dequantize_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(QuantizedMatmul, .vjp = cmx__vjp_fast, .jvp = cmx__jvp_fast,
            .vmap = cmx__vmap_fast, .print = quant_print,
            .output_shapes = qmm_shapes, .equal = cmx__params_equal_bytes,
            .hash = cmx__params_hash_bytes);
CMX__VTABLE(QuantizedMatmulSwiGLU, .vjp = cmx__vjp_fast, .jvp = cmx__jvp_fast,
            .vmap = cmx__vmap_fast, .print = quant_print,
            .output_shapes = qmm_swiglu_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(AddRMSNormQuantizedMatmul, .vjp = cmx__vjp_fast,
            .jvp = cmx__jvp_fast, .vmap = cmx__vmap_fast,
            .print = norm_qmm_print, .output_shapes = norm_qmm_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
