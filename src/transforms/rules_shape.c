/* Transform rules of the shape and view primitives. */
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

CMX__RULE_VJP(cmx__vjp_broadcast) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  cmx_array x = primals[0];
  out[0] = cmx__rule_keep(
      cmx__sum_to_shape(cotangents[0], x->dims, x->ndim, cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_broadcast) {
  (void)primals, (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = cmx__rule_keep(cmx__broadcast_to(tangents[0], outputs[0]->dims,
                                            outputs[0]->ndim,
                                            cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* The batch axis goes first; the input's own axes align to the right of
 * the output's. */
CMX__RULE_VMAP(cmx__vmap_broadcast) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = cmx__batch_front(inputs[0], axes[0], 1, s);
  if (!x) return cmx_last_status();
  int od = outputs[0]->ndim, xd = x->ndim - 1;
  int64_t shape[CMX_MAX_NDIM];
  if (od + 1 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  shape[0] = x->dims[0];
  for (int d = 0; d < od - xd; d++) shape[1 + d] = 1;
  memcpy(shape + 1 + od - xd, x->dims + 1, (size_t)xd * 8);
  x = cmx__reshape(x, shape, od + 1, s);
  memcpy(shape + 1, outputs[0]->dims, (size_t)od * 8);
  out[0] = cmx__rule_keep(cmx__broadcast_to(x, shape, od + 1, s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}
