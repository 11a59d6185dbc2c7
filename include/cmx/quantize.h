/* Quantization in MLX's formats. The "affine" mode: a matrix w (..., K) is
 * split into
 * groups of group_size consecutive elements of its last axis; each group
 * stores bits-bit integers q and a scale and a bias, w ~ scale * q + bias.
 * The integers are packed LSB-first into uint32 words, element i of a row
 * at bits [i*bits, (i+1)*bits) of the row's little-endian bit stream, so a
 * row of K elements takes K*bits/32 words. Scales and biases have w's
 * dtype and shape (..., K / group_size).
 *
 * The microscaled modes have no biases: "mxfp4" (group 32, 4-bit E2M1
 * values, uint8 E8M0 scales 2^(b - 127)), "mxfp8" (group 32, 8-bit E4M3
 * values, E8M0 scales) and "nvfp4" (group 16, E2M1 values, uint8 E4M3
 * scales, with an optional float32 global scale). Values are packed into
 * uint32 words LSB-first as above; scales are uint8 (..., K / group_size).
 * Rounding rules: src/ops/quantized_fp.h.
 *
 *     cmx_array wq, sc, bi, y;
 *     cmx_quantize(&wq, &sc, &bi, w, 64, 4, "affine", CMX_STREAM_DEFAULT);
 *     cmx_quantized_matmul(&y, x, wq, sc, bi, true, 64, 4, "affine",
 *                          CMX_STREAM_DEFAULT);   // x @ dequantize(...).T
 */
#ifndef CMX_QUANTIZE_H
#define CMX_QUANTIZE_H

#include <stdbool.h>

#include "cmx/array.h"
#include "cmx/device.h"
#include "cmx/dtype.h"
#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quantizes w (at least 2-d, floating, last axis divisible by group_size)
 * in mode (NULL: "affine"): affine takes group_size 32, 64 or 128 (0: 64)
 * and bits 1, 2, 3, 4, 5, 6 or 8 (0: 4); the microscaled modes only their
 * own (0: theirs). Writes new references to the packed uint32 integers
 * *wq, *scales and, for affine, *biases (NULL for the other modes). Errors
 * (ValueError) name quantize. */
cmx_status cmx_quantize(cmx_array* wq, cmx_array* scales, cmx_array* biases,
                        cmx_array w, int group_size, int bits, const char* mode,
                        cmx_stream s);

/* cmx_quantize with nvfp4's global_scale (a float32 array of one element,
 * or NULL; only nvfp4 takes one): the group scales are stored multiplied
 * by 2688 / global_scale. */
cmx_status cmx_quantize_global(cmx_array* wq, cmx_array* scales,
                               cmx_array* biases, cmx_array w, int group_size,
                               int bits, const char* mode,
                               cmx_array global_scale, cmx_stream s);

/* scales * q + biases of packed w (uint32 (..., K*bits/32)) with scales
 * and biases (..., K/group_size); out_dtype CMX_DTYPE_AUTO means the
 * scales' dtype. The microscaled modes take uint8 scales, biases NULL, w
 * at least 2-d, and default to bfloat16. Writes a new reference to *out
 * (..., K). */
cmx_status cmx_dequantize(cmx_array* out, cmx_array w, cmx_array scales,
                          cmx_array biases, int group_size, int bits,
                          const char* mode, cmx_dtype out_dtype, cmx_stream s);

/* cmx_dequantize with nvfp4's global_scale (as cmx_quantize_global's,
 * NULL for none): the scales are multiplied by global_scale / 2688. */
cmx_status cmx_dequantize_global(cmx_array* out, cmx_array w, cmx_array scales,
                                 cmx_array biases, int group_size, int bits,
                                 const char* mode, cmx_array global_scale,
                                 cmx_dtype out_dtype, cmx_stream s);

/* x @ W.T (transpose) or x @ W, W the matrix that w, scales, biases
 * quantize ((..., N, K) for transpose, else (..., K, N)); batch dimensions
 * broadcast. Reads the packed weights directly. Writes a new reference to
 * *out (..., M, N) of the promoted type of x, scales and biases (x's
 * dtype in the microscaled modes, where biases must be NULL). */
cmx_status cmx_quantized_matmul(cmx_array* out, cmx_array x, cmx_array w,
                                cmx_array scales, cmx_array biases,
                                bool transpose, int group_size, int bits,
                                const char* mode, cmx_stream s);

/* quantized_matmul with matrix-level gather (as cmx_gather_mm):
 * out[i] = x[lhs_indices[i]] @ W[rhs_indices[i]] (.T when transpose), the
 * indices flat over the batch dimensions of x and of w; either index array
 * may be NULL (all batches, in order). */
cmx_status cmx_gather_qmm(cmx_array* out, cmx_array x, cmx_array w,
                          cmx_array scales, cmx_array biases,
                          cmx_array lhs_indices, cmx_array rhs_indices,
                          bool transpose, int group_size, int bits,
                          const char* mode, bool sorted_indices, cmx_stream s);

/* cmx_gather_qmm with nvfp4's global_scale (NULL for none). */
cmx_status cmx_gather_qmm_global(cmx_array* out, cmx_array x, cmx_array w,
                                 cmx_array scales, cmx_array biases,
                                 cmx_array lhs_indices, cmx_array rhs_indices,
                                 bool transpose, int group_size, int bits,
                                 const char* mode, cmx_array global_scale,
                                 bool sorted_indices, cmx_stream s);

/* x @ W.T with x quantized on the fly in a microscaled mode (NULL:
 * "nvfp4"; affine is refused) and W either packed w (uint32 (N, K * bits /
 * 32)) with its uint8 scales, or floating w (N, K) quantized on the fly
 * (scales NULL). x is real floating (not float64), at least 1-d; w is 2-d.
 * global_scale_x / global_scale_w (nvfp4 only, NULL for none) are x's and
 * w's global scales. Both sides are decoded and multiplied in float32.
 * Writes a new reference to *out (..., N) of x's dtype. Errors
 * (ValueError) name qqmm. */
cmx_status cmx_qqmm(cmx_array* out, cmx_array x, cmx_array w, cmx_array scales,
                    int group_size, int bits, const char* mode,
                    cmx_array global_scale_x, cmx_array global_scale_w,
                    cmx_stream s);

/* cmx_qqmm with matrix-level gather (as cmx_gather_qmm): out[i] =
 * qqmm(x[lhs_indices[i]], W[rhs_indices[i]]), the indices flat over the
 * batch dimensions of x and of w (at least 2-d each); either may be NULL
 * (every batch entry, in order). Errors name gather_qqmm. */
cmx_status cmx_gather_qqmm(cmx_array* out, cmx_array x, cmx_array w,
                           cmx_array scales, cmx_array lhs_indices,
                           cmx_array rhs_indices, int group_size, int bits,
                           const char* mode, cmx_array global_scale_x,
                           cmx_array global_scale_w, bool sorted_indices,
                           cmx_stream s);

/* MLX's 8-bit float E4M3 (bias 7, no infinity, codes 0x7F and 0xFF NaN)
 * stored as uint8: to_fp8 encodes a real floating x (float16, bfloat16,
 * float32 or float64), rounding to nearest even and saturating (|x| >= 448,
 * infinities included, give +-448; NaN gives 0x7E, 0xFE when its sign bit
 * is set). Writes a new reference to *out (uint8, x's shape). Errors
 * (ValueError) name to_fp8: x not real floating. */
cmx_status cmx_to_fp8(cmx_array* out, cmx_array x, cmx_stream s);

/* Decodes uint8 E4M3 codes x exactly to dtype (real floating; MLX's default
 * is bfloat16). Writes a new reference to *out (x's shape). Errors
 * (ValueError) name from_fp8: x not uint8, dtype not real floating. */
cmx_status cmx_from_fp8(cmx_array* out, cmx_array x, cmx_dtype dtype,
                        cmx_stream s);

#ifdef __cplusplus
}
#endif

#endif
