/* Transform rules of Depends.
 *
 * Depends(inputs.., dependencies..) returns its first nout inputs
 * unchanged, only ordered after the dependencies (MLX's depends). As in
 * MLX, cotangents and tangents pass to and from those first inputs and
 * the dependencies get none. Under vmap the node is rebuilt on the batched
 * inputs, so the ordering survives, and each output keeps the batch axis
 * of its input. */
#include <stdlib.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

CMX__RULE_VJP(cmx__vjp_depends) {
  (void)p, (void)primals, (void)nin, (void)outputs;
  for (int k = 0; k < nargs; k++)
    out[k] =
        argnums[k] < nout ? cmx_array_retain(cotangents[argnums[k]]) : NULL;
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_depends) {
  (void)p, (void)primals, (void)nin, (void)outputs;
  for (int i = 0; i < nout; i++) {
    out[i] = NULL;
    for (int k = 0; k < nargs; k++)
      if (argnums[k] == i) out[i] = cmx_array_retain(tangents[k]);
  }
  return CMX_OK;
}

CMX__RULE_VMAP(cmx__vmap_depends) {
  (void)outputs;
  cmx_array* r = malloc((size_t)nout * sizeof *r + 1);
  if (!r) return cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
  bool ok = cmx__depends(r, inputs, nout, inputs + nout, nin - nout,
                         cmx__rule_stream(p));
  for (int i = 0; i < nout; i++) {
    out[i] = ok ? cmx__rule_keep(r[i]) : NULL;
    out_axes[i] = axes[i];
  }
  free(r);
  return ok ? CMX_OK : cmx_last_status();
}
