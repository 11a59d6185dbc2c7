/* The fused primitives of mx.fast (ops/fast.c): RMSNorm, LayerNorm, RoPE
 * and ScaledDotProductAttention, shared by the op layer, the vtables, the
 * CPU kernels and the transform rules; and AddRMSNorm, which only
 * compile's add_rms_norm pass makes (compile/add_rms_norm.c).
 *
 * Each is one node with a fused kernel; its transforms (vjp, jvp, vmap) go
 * through its composite form, cmx__fast_composite, built from ordinary ops
 * over the same inputs (transforms/rules_fast.c). The composite computes in
 * float32 and casts to the output dtype, as the kernels do.
 *
 * Inputs, all of the output's dtype unless said otherwise (the op casts):
 *   RMSNorm:   {x (..., D), [weight (D)]}
 *   AddRMSNorm: {x (..., D), r (x's shape), [weight (D)]}, two outputs of
 *               x's shape: h = x + r rounded to the dtype (exactly Add's
 *               result) and y = RMSNorm(h, weight) computed from that
 *               rounded h (exactly RMSNorm's result on it). Parameters as
 *               RMSNorm's (eps, has_weight). The residual add of a
 *               transformer block and the norm after it in one pass.
 *   LayerNorm: {x (..., D), [weight (D)], [bias (D)]}
 *   RoPE:      {x (B, ..., L, D), offset (int32, 0-d or (B)),
 *               [freqs (dims/2) float32]}: out = x with its first `dims`
 *               features of position offset[b] + l rotated by angle
 *               (offset[b] + l) * scale * f_i, f_i = base^(-2i/dims) or
 *               1/freqs[i]; pairs (i, i + dims/2), or (2i, 2i+1) when
 *               traditional; the rest passes through.
 *   RoPEMulti: {x_1 .. x_N, offset, [freqs]}, 2 <= N <=
 *               CMX__ROPE_MULTI_MAX, N outputs: out_i = RoPE(x_i, offset,
 *               [freqs]) with the one parameter set (RoPE's), bit for bit
 *               RoPE's result on each x_i. The x_i share a dtype but not a
 *               shape (each (B, ..., L_i, D_i), B as offset's when (B)).
 *               Only compile's rope_multi pass makes it (compile/
 *               rope_multi.c): attention's q and k roped in one launch.
 *   ScaledDotProductAttention: {q (B, Hq, L, D), k (B, Hk, S, D),
 *               v (B, Hk, S, Dv), [mask (B, Hq, L, S): bool (true keeps)
 *               or additive of the output dtype, broadcast views],
 *               [sinks (Hq)]}: out (B, Hq, L, Dv) = softmax(scale q k^T
 *               + mask) v, query head h reading kv head h / (Hq / Hk);
 *               "causal" keeps key j for query i when j <= i + S - L; a
 *               masked-out score is the lowest float (a row with every
 *               key masked and no sink averages v uniformly); a sink adds
 *               exp(sinks[h]) to the softmax's sum with no value.
 *   CrossEntropy: {logits (..., V) float16/bfloat16/float32, row
 *               contiguous; targets (...) int64, contiguous}: out (...)
 *               float32 = logsumexp(logits[..., :]) - logits[..., t],
 *               computed in float32, t = targets (a negative target
 *               counts from the end, as take_along_axis); a target outside
 *               [-V, V) is an IndexError naming cross_entropy. No
 *               parameters.
 */
#ifndef CMX_PRIMITIVES_FAST_H
#define CMX_PRIMITIVES_FAST_H

#include "cmx/primitive.h"

/* The most inputs RoPEMulti rotates (the GPU kernel's table size). */
#define CMX__ROPE_MULTI_MAX 4

enum {
  CMX__SDPA_MASK_NONE = 0,
  CMX__SDPA_MASK_CAUSAL = 1,
  CMX__SDPA_MASK_BOOL = 2,
  CMX__SDPA_MASK_ADD = 3
};

/* One parameter struct for the four (fields a primitive does not use stay
 * zero; every field is 4 bytes, so there is no padding and equality and
 * hashing compare bytes). */
typedef struct cmx__fast_params {
  float eps;       /* norms */
  float scale;     /* RoPE: of the positions; SDPA: of the scores */
  float base;      /* RoPE without freqs */
  int dims;        /* RoPE */
  int traditional; /* RoPE */
  int has_weight;  /* norms: weight follows x */
  int has_bias;    /* LayerNorm: bias is the last input */
  int has_freqs;   /* RoPE */
  int mask;        /* SDPA: CMX__SDPA_MASK_* (array masks are input 3) */
  int has_sinks;   /* SDPA: sinks is the last input */
} cmx__fast_params;

/* The composite form of fast primitive vt with params q over inputs (the
 * primitive's own inputs): a scope-owned array equal to the primitive's
 * output, or NULL with the error set. */
/* CrossEntropy's composite (ops/fast_loss.c): logsumexp - take_along_axis
 * in float32 over in = {logits, targets}; scope-owned, NULL on error. */
cmx_array cmx__fast_ce_composite(const cmx_array* in, cmx_stream s);

/* (Not AddRMSNorm nor RoPEMulti, which have several outputs: their
 * composites, built in transforms/rules_fast.c, are cmx__add then RMSNorm's
 * composite, and RoPE's composite of each x_i.) */
cmx_array cmx__fast_composite(const cmx_primitive_vtable* vt,
                              const cmx__fast_params* q, const cmx_array* in,
                              int nin, cmx_stream s);

#endif
