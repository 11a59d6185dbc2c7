/* The vtables of mx.fast's fused primitives (see primitives/fast.h). Their
 * transform rules run the composite form (transforms/rules_fast.c); only
 * the kernels are fused. */
#include "primitives/fast.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* SDPA: q's shape with v's last dimension. */
static cmx_status sdpa_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)nout;
  if (nin < 3) return cmx__shape_fail(p, "expects q, k and v");
  cmx__shape_of(&out[0], in[0]);
  cmx_shape v;
  cmx__shape_of(&v, in[2]);
  if (out[0].ndim != 4 || v.ndim != 4)
    return cmx__shape_fail(p, "q and v must have 4 dimensions");
  out[0].dims[3] = v.dims[3];
  return CMX_OK;
}

/* RoPEMulti: out_i of x_i's shape (the inputs before offset and freqs). */
static cmx_status rope_multi_shapes(const cmx_primitive* p, const cmx_array* in,
                                    int nin, cmx_shape* out, int nout) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  if (nout < 2 || nin != nout + 1 + (q->has_freqs != 0))
    return cmx__shape_fail(p, q->has_freqs
                                  ? "expects one x per output, offset, freqs"
                                  : "expects one x per output and offset");
  for (int i = 0; i < nout; i++) cmx__shape_of(&out[i], in[i]);
  return CMX_OK;
}

static void fast_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  const char* name = cmx_primitive_vt(p)->name;
  if (cmx_primitive_vt(p) == &cmx__vt_RoPE ||
      cmx_primitive_vt(p) == &cmx__vt_RoPEMulti)
    snprintf(buf, size, "%s(dims=%d%s, base=%g, scale=%g%s)", name, q->dims,
             q->traditional ? ", traditional" : "", q->base, q->scale,
             q->has_freqs ? ", freqs" : "");
  else if (cmx_primitive_vt(p) == &cmx__vt_ScaledDotProductAttention)
    snprintf(buf, size, "ScaledDotProductAttention(scale=%g, mask=%s%s)",
             q->scale,
             (const char*[]){"none", "causal", "bool", "additive"}[q->mask],
             q->has_sinks ? ", sinks" : "");
  else
    snprintf(buf, size, "%s(eps=%g)", name, q->eps);
}

#define FAST_VTABLE(Name, shapes)                                        \
  CMX__VTABLE(Name, .vjp = cmx__vjp_fast, .jvp = cmx__jvp_fast,          \
              .vmap = cmx__vmap_fast, .print = fast_print,               \
              .output_shapes = shapes, .equal = cmx__params_equal_bytes, \
              .hash = cmx__params_hash_bytes)

FAST_VTABLE(RMSNorm, cmx__shapes_like_input);
/* AddRMSNorm: h and y, both of x's shape. */
FAST_VTABLE(AddRMSNorm, cmx__shapes_like_input);
FAST_VTABLE(LayerNorm, cmx__shapes_like_input);
FAST_VTABLE(RoPE, cmx__shapes_like_input);
FAST_VTABLE(RoPEMulti, rope_multi_shapes);
FAST_VTABLE(ScaledDotProductAttention, sdpa_shapes);

/* CrossEntropy: the targets' shape; its own VJP (softmax - one_hot). */
static cmx_status ce_shapes(const cmx_primitive* p, const cmx_array* in,
                            int nin, cmx_shape* out, int nout) {
  (void)nout;
  if (nin != 2) return cmx__shape_fail(p, "expects logits and targets");
  cmx__shape_of(&out[0], in[1]);
  return CMX_OK;
}

CMX__VTABLE(CrossEntropy, .vjp = cmx__vjp_cross_entropy, .jvp = cmx__jvp_fast,
            .vmap = cmx__vmap_fast, .output_shapes = ce_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
