/* mx.fast: fused kernels for the common pieces of transformer models.
 *
 * Each op is one node with a fused kernel (the CPU's today); gradients,
 * tangents and vmap go through the same computation written in plain ops,
 * so every transform works through them. float16 and bfloat16 inputs are
 * computed in float32.
 *
 *     cmx_array y;
 *     cmx_fast_rms_norm(&y, x, w, 1e-5f, CMX_STREAM_DEFAULT);
 *     cmx_fast_scaled_dot_product_attention(&o, q, k, v, 0.125f, "causal",
 *                                           NULL, NULL, CMX_STREAM_DEFAULT);
 */
#ifndef CMX_FAST_H
#define CMX_FAST_H

#include <stdbool.h>
#include <stdint.h>

#include "cmx/array.h"
#include "cmx/device.h"
#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Root-mean-square normalisation over the last axis:
 * x / sqrt(mean(x^2) + eps) * weight. weight (1-d, x's last dimension) may
 * be NULL. Writes a new reference to *out of the promoted floating dtype of
 * x and weight. Errors: x 0-d, a weight of the wrong shape, a non-floating
 * result type. */
cmx_status cmx_fast_rms_norm(cmx_array* out, cmx_array x, cmx_array weight,
                             float eps, cmx_stream s);

/* Layer normalisation over the last axis: (x - mean) / sqrt(var + eps) *
 * weight + bias; weight and bias (1-d, x's last dimension) may be NULL.
 * Writes a new reference to *out; errors as cmx_fast_rms_norm. */
cmx_status cmx_fast_layer_norm(cmx_array* out, cmx_array x, cmx_array weight,
                               cmx_array bias, float eps, cmx_stream s);

/* Rotary positional encoding of x (at least 3-d, (B, ..., L, D), floating):
 * the first `dims` features (even, <= D) of position p = offset + l are
 * rotated by angles p * scale * f_i, f_i = base^(-2i/dims) (base non-NULL)
 * or 1 / freqs[i] (freqs 1-d of dims/2, base NULL); pairs (i, i + dims/2),
 * or (2i, 2i+1) when traditional. offset_array (integer, 0-d or with x's
 * first dimension: one offset per batch entry) replaces offset when not
 * NULL. Writes a new reference of x's dtype to *out. */
cmx_status cmx_fast_rope(cmx_array* out, cmx_array x, int dims,
                         bool traditional, const float* base, float scale,
                         int64_t offset, cmx_array offset_array,
                         cmx_array freqs, cmx_stream s);

/* softmax(scale * q k^T + mask) v for q (B, Hq, L, D), k (B, Hk, S, D), v
 * (B, Hk, S, Dv), Hq a multiple of Hk (grouped-query heads). mask_mode
 * NULL, "" or "array" uses mask (NULL: none; bool, true keeps a score; or
 * additive, of a type that promotes to the output's), broadcastable to
 * (B, Hq, L, S); "causal" keeps key j for query i when j <= i + S - L.
 * sinks (NULL or (Hq)) adds a per-head logit to each softmax's sum. Writes
 * a new reference to *out, (B, Hq, L, Dv), of q, k and v's promoted
 * floating dtype. Errors name scaled_dot_product_attention. */
cmx_status cmx_fast_scaled_dot_product_attention(
    cmx_array* out, cmx_array q, cmx_array k, cmx_array v, float scale,
    const char* mask_mode, cmx_array mask, cmx_array sinks, cmx_stream s);

/* Cross entropy with class indices: writes to *out a new float32 array
 * of targets' shape holding logsumexp(logits[..., :]) - logits[..., t]
 * for each row, accumulated in float32. logits (..., V) is floating with
 * at least 1 dimension; targets (...) has the other dimensions of logits
 * and an integer dtype; a negative target counts from the end (as
 * take_along_axis). Errors (naming cross_entropy): CMX_ERR_VALUE for the
 * cases above and empty logits; a target outside [-V, V) fails the
 * evaluation with CMX_ERR_INDEX. */
cmx_status cmx_fast_cross_entropy(cmx_array* out, cmx_array logits,
                                  cmx_array targets, cmx_stream s);

#ifdef __cplusplus
}
#endif

#endif
