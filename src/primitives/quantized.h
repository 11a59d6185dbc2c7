/* The quantization primitives (ops/quantized.c), shared by the op layer,
 * the vtables, the CPU kernels and the transform rules. Format: see
 * cmx/quantize.h (affine mode).
 *
 * Quantize: in = {w (..., K) float16/bfloat16/float32}; out = {wq uint32
 *   (..., K*bits/32), scales (..., K/g), biases (..., K/g)} of w's dtype.
 *   Per group, in float32: lo/hi = min/max; the edge is the one of larger
 *   magnitude (lo on ties of |lo| > |hi|, else hi); scale = max((hi - lo) /
 *   (2^bits - 1), 1e-7), negated when the edge is hi; q0 = round(edge /
 *   scale); when q0 != 0, scale = edge / q0 and bias = edge, else bias =
 *   0; q = clip(round((w - bias) / scale), 0, 2^bits - 1) (MLX's rule;
 *   one bit: scale = max(hi - lo, 1e-7), bias = lo).
 * Dequantize: in = {wq, scales, biases} (scales, biases any float dtype);
 *   out (..., K) = scale * q + bias in the output dtype.
 * QuantizedMatmul: in = {x (..., M, K'), wq, scales, biases}, all of the
 *   output's batch shape (broadcast views), x of the output dtype; out
 *   (..., M, N) = x @ W.T (transpose) or x @ W, W = dequantize(...). In
 *   a microscaled mode (CPU only) in = {x, wq, scales}, scales uint8.
 * QuantizedMatmulSwiGLU (made only by compile's qmm_swiglu pass): the
 *   inputs and parameters of a QuantizedMatmul (transpose, affine mode),
 *   x of one row (M = 1); with y = x @ W.T of N = 2n columns, rounded to
 *   the output dtype, out (..., 1, n) = silu(y[..., :n]) * y[..., n:],
 *   each step rounded to the output dtype as the ops it replaces round
 *   (s = sigmoid(a), t = a * s, out = t * b). A primitive of its own, not
 *   a QuantizedMatmul flag: its output shape and meaning differ, and code
 *   that reads QuantizedMatmul nodes (rules, kernels) never sees it.
 * AddRMSNormQuantizedMatmul (made only by compile's norm_qmm pass):
 *   AddRMSNorm (primitives/fast.h) whose normed output y feeds one
 *   one-row QuantizedMatmul (swiglu 0) or QuantizedMatmulSwiGLU (swiglu
 *   1), as one op. in = {x (..., 1, K), r (x's shape), [weight (K)],
 *   wq, scales, biases}, x, r, weight and the output of one float dtype;
 *   out = {h (x's shape), o (..., 1, N or N / 2)}: h = x + r rounded to
 *   the dtype (AddRMSNorm's h), o = the consumer's result on y =
 *   RMSNorm(h, weight) rounded to the dtype (AddRMSNorm's y), bit for bit
 *   what the two ops give on each device. Parameters: the norm's (eps,
 *   has_weight), the product's (transpose, affine mode) and which
 *   consumer. One primitive with a flag rather than two: both consumers
 *   read the same inputs in the same order and give outputs of the same
 *   form, so one output_shapes, one rule, one kernel entry per backend
 *   and one pass cover both.
 */
#ifndef CMX_PRIMITIVES_QUANTIZED_H
#define CMX_PRIMITIVES_QUANTIZED_H

#include "cmx/primitive.h"
#include "primitives/fast.h"

/* The quantization modes (ops/quantized_fp.h describes the microscaled
 * ones). */
typedef enum cmx__qmode {
  CMX__QMODE_AFFINE,
  CMX__QMODE_MXFP4,
  CMX__QMODE_MXFP8,
  CMX__QMODE_NVFP4
} cmx__qmode;

typedef struct cmx__quant_params {
  int group_size;
  int bits;
  int transpose; /* QuantizedMatmul */
  int mode;      /* cmx__qmode; Quantize and Dequantize: affine only */
} cmx__quant_params;

/* AddRMSNormQuantizedMatmul's parameters (every field 4 bytes: no
 * padding, so equality and hashing compare bytes). */
typedef struct cmx__norm_qmm_params {
  cmx__fast_params norm; /* eps, has_weight; the rest zero */
  cmx__quant_params q;   /* transpose, affine mode */
  int swiglu;            /* 1: the consumer is QuantizedMatmulSwiGLU */
} cmx__norm_qmm_params;

/* Runs AddRMSNormQuantizedMatmul p as its two ops' kernels on p's device
 * type (the backend's AddRMSNorm kernel into h and a scratch y, then its
 * QuantizedMatmul or QuantizedMatmulSwiGLU kernel on y), so the outputs
 * are the unfused ops' by construction: the CPU's kernel, and the GPU's
 * where its one-launch kernel does not apply. A kernel (in, out as the
 * primitive's). */
cmx_status cmx__norm_qmm_two_step(const cmx_primitive* p, const cmx_array* in,
                                  int nin, const cmx_array* out, int nout);

/* The composite form of QuantizedMatmul (matmul with the dequantized
 * matrix): the transforms' fallback. Scope-owned result or NULL. */
cmx_array cmx__qmm_composite(const cmx__quant_params* q, const cmx_array* in,
                             cmx_stream s);
/* dequantize as an internal op (scope-owned; dt CMX_DTYPE_AUTO: the
 * scales' dtype). */
cmx_array cmx__dequantize(cmx_array w, cmx_array scales, cmx_array biases,
                          int group_size, int bits, cmx_dtype dt, cmx_stream s);

/* a (..., n) as (..., n / g, g) (ops/quantized_fp.c; scope-owned). */
cmx_array cmx__quant_groups(cmx_array a, int64_t g, cmx_stream s);

#endif
