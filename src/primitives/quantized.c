/* The vtables of the quantization primitives (see primitives/quantized.h).
 * Their parameters are four ints: compared and hashed as bytes. */
#include "primitives/quantized.h"

#include <stdio.h>

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

static cmx_status qmm_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
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

static void quant_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__quant_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "%s(group_size=%d, bits=%d%s)", cmx_primitive_vt(p)->name,
           q->group_size, q->bits, q->transpose ? ", transpose" : "");
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
