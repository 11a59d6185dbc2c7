/* Transform rules of the fast primitives (primitives/fast.h) and of
 * QuantizedMatmul (primitives/quantized.h): each
 * transforms the primitive's composite form, a closure over the same
 * inputs, so gradients, tangents and batching are those of the plain ops
 * (as MLX's fallbacks). The fused kernel runs only in forward passes. */
#include <stdlib.h>

#include "ops/ops_internal.h"
#include "primitives/fast.h"
#include "primitives/quantized.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

typedef struct {
  const cmx_primitive* p;
} fast_payload;

/* QuantizedMatmulSwiGLU's composite: y = the QuantizedMatmul composite,
 * then silu(y[..., :n]) * y[..., n:] as nn.silu traces it (a *
 * sigmoid(a)); scope-owned, NULL on error. */
static cmx_array qmm_swiglu_composite(const cmx__quant_params* q,
                                      const cmx_array* in, cmx_stream s) {
  cmx_array y = cmx__qmm_composite(q, in, s);
  if (!y) return NULL;
  int nd = y->ndim;
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) stop[d] = y->dims[d], step[d] = 1;
  int64_t n = y->dims[nd - 1] / 2;
  stop[nd - 1] = n;
  cmx_array a = cmx__slice(y, start, stop, step, s);
  start[nd - 1] = n;
  stop[nd - 1] = 2 * n;
  cmx_array b = cmx__slice(y, start, stop, step, s);
  return cmx__multiply(cmx__multiply(a, cmx__sigmoid(a, s), s), b, s);
}

/* AddRMSNormQuantizedMatmul's composite: h = x + r (the Add AddRMSNorm
 * replaced), y = RMSNorm's composite of h, then the consumer's composite
 * on y; r[0] = h, r[1] = the product. in = {x, r, [w], wq, scales,
 * biases}. */
static void norm_qmm_composite(const cmx__norm_qmm_params* q,
                               const cmx_array* in, int nin, cmx_array* r,
                               cmx_stream s) {
  int nw = q->norm.has_weight != 0;
  if (nin != 5 + nw) {
    cmx__error(CMX_ERR_VALUE, "[add_rms_norm_quantized_matmul] %d inputs",
               nin);
    return;
  }
  r[0] = cmx__add(in[0], in[1], s);
  cmx_array nin_[2] = {r[0], nw ? in[2] : NULL};
  cmx_array y =
      r[0] ? cmx__fast_composite(&cmx__vt_RMSNorm, &q->norm, nin_, 1 + nw, s)
           : NULL;
  if (!y) return;
  const cmx_array qin[4] = {y, in[2 + nw], in[3 + nw], in[4 + nw]};
  r[1] = q->swiglu ? qmm_swiglu_composite(&q->q, qin, s)
                   : cmx__qmm_composite(&q->q, qin, s);
}

/* The closure: the composite of the primitive on the given inputs (one
 * output, QuantizedMatmulSwiGLU's qmm_swiglu_composite; AddRMSNorm's two: h = x
 * + r, as the Add it replaced, and RMSNorm's composite of h;
 * AddRMSNormQuantizedMatmul's two: h and the product on that norm (its
 * norm_qmm_composite); RoPEMulti's N:
 * RoPE's composite of each x_i with the shared offset and freqs). */
static cmx_status composite_fn(void* payload, const cmx_array* in, int nin,
                               cmx_array** out, int* nout) {
  const cmx_primitive* p = ((const fast_payload*)payload)->p;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_stream s = cmx__rule_stream(p);
  int n = vt == &cmx__vt_AddRMSNorm ||
                  vt == &cmx__vt_AddRMSNormQuantizedMatmul
              ? 2
              : 1;
  if (vt == &cmx__vt_RoPEMulti) {
    const cmx__fast_params* q = cmx_primitive_params(p);
    n = nin - 1 - (q->has_freqs != 0);
    if (n < 1 || n > CMX__ROPE_MULTI_MAX)
      return cmx__error(CMX_ERR_VALUE, "[rope_multi] %d inputs", nin);
  }
  cmx_array* res = calloc(CMX__ROPE_MULTI_MAX, sizeof *res);
  if (!res) return cmx__error(CMX_ERR_MEMORY, "[fast] out of memory");
  size_t mark = cmx__scope_enter();
  cmx_array r[CMX__ROPE_MULTI_MAX] = {NULL};
  if (vt == &cmx__vt_RoPEMulti) {
    /* x_i followed by the shared {offset, [freqs]}, as RoPE's inputs */
    for (int i = 0; i < n; i++) {
      cmx_array one[3] = {in[i], in[n], nin > n + 1 ? in[n + 1] : NULL};
      r[i] = cmx__fast_composite(&cmx__vt_RoPE, cmx_primitive_params(p), one,
                                 nin - n + 1, s);
      if (!r[i]) break;
    }
  } else if (vt == &cmx__vt_QuantizedMatmul) {
    r[0] = cmx__qmm_composite(cmx_primitive_params(p), in, s);
  } else if (vt == &cmx__vt_QuantizedMatmulSwiGLU) {
    r[0] = qmm_swiglu_composite(cmx_primitive_params(p), in, s);
  } else if (vt == &cmx__vt_AddRMSNormQuantizedMatmul) {
    norm_qmm_composite(cmx_primitive_params(p), in, nin, r, s);
  } else if (vt == &cmx__vt_AddRMSNorm) {
    /* {x, r, [w]}: the norm reads h in x's place */
    r[0] = nin >= 2 ? cmx__add(in[0], in[1], s) : NULL;
    cmx_array nin_[2] = {r[0], nin > 2 ? in[2] : NULL};
    if (r[0])
      r[1] = cmx__fast_composite(&cmx__vt_RMSNorm, cmx_primitive_params(p),
                                 nin_, nin - 1, s);
  } else {
    r[0] = cmx__fast_composite(vt, cmx_primitive_params(p), in, nin, s);
  }
  cmx_status st = cmx__scope_exit_n(mark, r, res, (size_t)n);
  if (st != CMX_OK) {
    free(res);
    return st;
  }
  *out = res;
  *nout = n;
  return CMX_OK;
}

CMX__RULE_VJP(cmx__vjp_fast) {
  (void)outputs;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  fast_payload pl = {p};
  cmx_closure f = {composite_fn, &pl};
  cmx_array* vjps = calloc((size_t)nin, sizeof *vjps);
  if (!vjps) return cmx__error(CMX_ERR_MEMORY, "[fast] out of memory");
  cmx_status st = cmx_vjp(f, primals, nin, cotangents, nout, NULL, NULL, vjps);
  if (st == CMX_OK)
    for (int k = 0; k < nargs; k++) out[k] = cmx_array_retain(vjps[argnums[k]]);
  for (int i = 0; i < nin; i++) cmx_array_release(vjps[i]);
  free(vjps);
  return st;
}

CMX__RULE_JVP(cmx__jvp_fast) {
  (void)outputs;
  fast_payload pl = {p};
  cmx_closure f = {composite_fn, &pl};
  cmx_array* tan = calloc((size_t)nin, sizeof *tan);
  if (!tan) return cmx__error(CMX_ERR_MEMORY, "[fast] out of memory");
  cmx_status st = CMX_OK;
  for (int i = 0; i < nin && st == CMX_OK; i++) {
    for (int k = 0; k < nargs; k++)
      if (argnums[k] == i) tan[i] = cmx_array_retain(tangents[k]);
    if (!tan[i]) st = cmx_zeros_like(&tan[i], primals[i], cmx__rule_stream(p));
  }
  cmx_array* res = NULL;
  int nres = 0;
  if (st == CMX_OK) st = cmx_jvp(f, primals, nin, tan, NULL, &res, &nres);
  if (st == CMX_OK) {
    for (int i = 0; i < nres; i++)
      if (i < nout)
        out[i] = res[i];
      else
        cmx_array_release(res[i]);
    free(res);
  }
  for (int i = 0; i < nin; i++) cmx_array_release(tan[i]);
  free(tan);
  return st;
}

CMX__RULE_VMAP(cmx__vmap_fast) {
  (void)outputs;
  fast_payload pl = {p};
  cmx_closure f = {composite_fn, &pl};
  int* ax = malloc((size_t)nin * sizeof *ax);
  if (!ax) return cmx__error(CMX_ERR_MEMORY, "[fast] out of memory");
  for (int i = 0; i < nin; i++) ax[i] = axes[i] < 0 ? CMX_VMAP_NONE : axes[i];
  cmx_array* res = NULL;
  int nres = 0, zero[CMX__ROPE_MULTI_MAX] = {0}; /* nout of them */
  cmx_status st = cmx_vmap(f, inputs, nin, ax, zero, nout, &res, &nres);
  free(ax);
  if (st != CMX_OK) return st;
  for (int i = 0; i < nres; i++) {
    if (i < nout) {
      out[i] = res[i];
      out_axes[i] = 0;
    } else {
      cmx_array_release(res[i]);
    }
  }
  free(res);
  return CMX_OK;
}

/* CrossEntropy: d loss / d logits = (softmax(logits) - one_hot(targets))
 * times the cotangent, in float32, cast to the logits' dtype. The targets
 * (class indices) take no derivative: asking for one is MLX's error. */
CMX__RULE_VJP(cmx__vjp_cross_entropy) {
  (void)nin, (void)nout, (void)outputs;
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] == 1)
      return cmx__error(CMX_ERR_VALUE,
                        "[cross_entropy] Cannot calculate VJP with respect to "
                        "indices (the targets). Use stop_gradient on targets "
                        "to stop gradients from being computed.");
  }
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], t = primals[1];
  if (!x || !t) return cmx_last_status();
  int last = -1;
  int64_t V = x->dims[x->ndim - 1];
  cmx_array sm =
      cmx__softmax(cmx__astype(x, CMX_FLOAT32, s), &last, 1, true, s);
  /* a negative target counts from the end, as the forward pass reads it */
  cmx_array tw =
      cmx__where(cmx__less(t, cmx__scalar(0, t->dtype), s),
                 cmx__add(t, cmx__scalar((double)V, t->dtype), s), t, s);
  cmx_array onehot = cmx__equal(cmx__arange(0, (double)V, 1, t->dtype, s),
                                cmx__expand_dims(tw, &last, 1, s), s);
  cmx_array d = cmx__subtract(sm, cmx__astype(onehot, CMX_FLOAT32, s), s);
  cmx_array c =
      cmx__expand_dims(cmx__astype(cotangents[0], CMX_FLOAT32, s), &last, 1, s);
  cmx_array g = cmx__astype(cmx__multiply(d, c, s), x->dtype, s);
  for (int k = 0; k < nargs; k++) out[k] = cmx__rule_keep(g);
  return g ? CMX_OK : cmx_last_status();
}
