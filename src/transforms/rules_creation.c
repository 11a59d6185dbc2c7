/* Transform rules of the creation primitives.
 *
 * Arange, Linspace, Eye and Tri have no inputs: nothing to differentiate
 * (the zero rules) and nothing to map; their vmap rule only re-creates the
 * unbatched result, for completeness. Full copies its input, already
 * broadcast to the output's shape, so its cotangent and tangent pass
 * through. Tril and Triu mask the last two axes: their rules apply the same
 * mask to cotangents and tangents, and to a batch put in front. */
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

/* The same primitive (same parameters) applied to x, with output shape
 * `shape` (NULL: x's shape). */
static cmx_array reapply(const cmx_primitive* p, cmx_array x,
                         const int64_t* shape, int ndim, cmx_stream s) {
  if (!x) return NULL;
  if (!shape) shape = x->dims, ndim = x->ndim;
  return cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                    cmx_primitive_params_size(p), s, &x, 1, shape, ndim,
                    x->dtype);
}

CMX__RULE_VMAP(cmx__vmap_nullary) {
  (void)inputs, (void)axes;
  cmx_stream s = cmx__rule_stream(p);
  for (int i = 0; i < nout; i++) {
    out[i] = cmx__rule_keep(
        cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                   cmx_primitive_params_size(p), s, inputs, nin,
                   outputs[i]->dims, outputs[i]->ndim, outputs[i]->dtype));
    if (!out[i]) return cmx_last_status();
    out_axes[i] = -1;
  }
  return CMX_OK;
}

CMX__RULE_VMAP(cmx__vmap_full) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = cmx__batch_front(inputs[0], axes[0], 1, s);
  out[0] = cmx__rule_keep(reapply(p, x, NULL, 0, s));
  out_axes[0] = 0;
  (void)outputs;
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_mask) {
  (void)primals, (void)nin, (void)nout, (void)argnums, (void)outputs;
  for (int k = 0; k < nargs; k++)
    if (!(out[k] = cmx__rule_keep(
              reapply(p, cotangents[0], NULL, 0, cmx__rule_stream(p)))))
      return cmx_last_status();
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_mask) {
  (void)primals, (void)nin, (void)argnums, (void)nargs, (void)outputs;
  (void)nout;
  out[0] =
      cmx__rule_keep(reapply(p, tangents[0], NULL, 0, cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* The mask acts on the last two axes, so a batch in front is untouched. */
CMX__RULE_VMAP(cmx__vmap_mask) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = cmx__batch_front(inputs[0], axes[0], 1, s);
  out[0] = cmx__rule_keep(reapply(p, x, NULL, 0, s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}
