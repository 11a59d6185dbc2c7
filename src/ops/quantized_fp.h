/* The quantization modes (ops/quantized_fp.c): MLX's "affine" and the
 * microscaled floating-point modes "mxfp4", "mxfp8" and "nvfp4".
 * quantize and dequantize of these modes are composed of existing ops (so
 * they run on every device and under every transform); quantized_matmul
 * has a CPU kernel (QuantizedMatmul with params.mode) and composes
 * dequantize + matmul elsewhere. Internal to the ops layer.
 *
 * Microscaled format: a row of K values is cut into groups of g (32 for
 * the mx modes, 16 for nvfp4); each group shares one uint8 scale and each
 * value is a small float code packed LSB-first into uint32 words (4 bits:
 * E2M1, element 2i in the low nibble of byte i; 8 bits: E4M3, one byte
 * each). Scales: E8M0 (2^(b - 127); 255 is NaN) for mx, E4M3 for nvfp4.
 * With amax the group's largest |w| and emax the largest code value (6 for
 * E2M1, 448 for E4M3), s = amax / emax is computed in w's dtype (float32
 * for float64); mx modes store ceil(log2 s) + 127 (127 when s is 0),
 * nvfp4 stores s as E4M3 (nearest even, saturating), multiplied first by
 * 2688 / global_scale when one is given. Each value w / scale, rounded to
 * w's dtype (then times 2688 / global_scale with one), is then encoded:
 * E4M3 nearest even, or E2M1 nearest with ties toward zero, saturating at
 * +-6, -0 and non-finite quotients (a zero scale's included) giving code 0.
 * Decoding multiplies code value and scale (times global_scale / 2688 with
 * one) in the output dtype (float32 for float64). All of this equals MLX
 * 0.32.4 bit for bit on finite inputs; groups holding an infinity or NaN,
 * and float32 groups whose s is subnormal, follow these rules (E8M0 255
 * for a non-finite s), where MLX's results differ between dtypes.
 */
#ifndef CMX_OPS_QUANTIZED_FP_H
#define CMX_OPS_QUANTIZED_FP_H

#include <stdbool.h>

#include "cmx/array.h"
#include "cmx/device.h"
#include "primitives/quantized.h" /* cmx__qmode */

/* Parses mode (NULL or "" is affine), fills the mode's defaults for
 * group_size and bits left 0 and checks them (MLX's messages naming op).
 * Returns the mode, or -1 with the error set. */
int cmx__qmode_check(const char* op, const char* mode, int* group_size,
                     int* bits);
/* The mode's name ("affine", "mxfp4", ...). */
const char* cmx__qmode_name(int mode);
/* Checks an optional global scale: only nvfp4 takes one, a float32 array
 * of one element. False with the error (naming op) set otherwise. */
bool cmx__qmode_check_global(const char* op, int mode, cmx_array global_scale);

/* Quantizes floating w (>= 2-d, last axis divisible by the group size) in a
 * microscaled mode; writes the scope-owned packed words and scales. */
bool cmx__fp_quantize(cmx_array* wq, cmx_array* scales, cmx_array w, int mode,
                      cmx_array global_scale, cmx_stream s);
/* Decodes packed w (uint32 (..., K * bits / 32)) with its uint8 scales
 * (..., K / g) to dtype dt (floating); scope-owned result or NULL. Shapes
 * and dtypes are the caller's to check (cmx__fp_check_packed). */
cmx_array cmx__fp_dequantize(cmx_array w, cmx_array scales, int mode,
                             cmx_array global_scale, cmx_dtype dt,
                             cmx_stream s);
/* Whether scales (or biases) sc have packed w's shape with the last axis
 * counting groups of g values of the given bit width. */
bool cmx__quant_scales_fit(cmx_array w, cmx_array sc, int g, int bits);
/* Checks packed w and scales of a microscaled mode (w uint32, at least
 * 2-d when min2d, scales uint8 of the matching shape, biases NULL). False
 * with MLX's message naming op otherwise. */
bool cmx__fp_check_packed(const char* op, cmx_array w, cmx_array scales,
                          cmx_array biases, int mode, bool min2d);

/* Checks that x (at least 1-d) meets the matrix that packed w (at least
 * 2-d) expands to (x @ W.T when transpose); false with MLX's message
 * naming op otherwise (ops/quantized.c). */
bool cmx__qmm_check_k(const char* op, cmx_array x, cmx_array w, int g, int bits,
                      bool transpose);

/* The matrices idx of a's batch (a (..., R, C), its batch dimensions
 * flattened): (idx's shape..., R, C); idx NULL takes every batch entry in
 * order, in a's batch shape (ops/quantized.c). */
cmx_array cmx__gather_batch(cmx_array a, cmx_array idx, cmx_stream s);

/* to_fp8 / from_fp8 as internal ops (ops/fp8.c). */
cmx_array cmx__to_fp8(cmx_array x, cmx_stream s);
cmx_array cmx__from_fp8(cmx_array x, cmx_dtype dtype, cmx_stream s);

#endif
