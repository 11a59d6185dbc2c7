/* Transform rules of Hadamard (contract in primitives/hadamard.h): the
 * transform is linear, T = s (H_m (x) H_n), so jvp is T and vjp is T^T
 * (H_n is symmetric, H_m is transposed through the parameter); vmap keeps
 * any batch axis but the last. */
#include "ops/ops_internal.h"
#include "primitives/hadamard.h"
#include "transforms/rules.h"

static cmx_array hadamard(const cmx_primitive* p, cmx_array x, bool flip,
                          cmx_stream s) {
  if (!x) return NULL;
  cmx__hadamard_params q =
      *(const cmx__hadamard_params*)cmx_primitive_params(p);
  if (flip) q.transpose = !q.transpose;
  return cmx__apply(cmx_primitive_vt(p), &q, sizeof q, s, &x, 1, x->dims,
                    x->ndim, x->dtype);
}

CMX__RULE_VJP(cmx__vjp_hadamard) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(
      hadamard(p, cmx__rule_as_like(cotangents[0], primals[0], s), true, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_hadamard) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(
      hadamard(p, cmx__rule_as_like(tangents[0], primals[0], s), false, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* The transform acts on the last axis: any other vmapped axis stays. */
CMX__RULE_VMAP(cmx__vmap_hadamard) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = inputs[0];
  int bx = axes[0];
  if (bx == x->ndim - 1) {
    x = cmx__moveaxis(x, bx, 0, s);
    bx = 0;
  }
  out[0] = cmx__rule_keep(hadamard(p, x, false, s));
  out_axes[0] = bx;
  return out[0] ? CMX_OK : cmx_last_status();
}
