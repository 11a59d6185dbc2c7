/* Transform rules of the reductions. */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/reduce.h"
#include "transforms/rules.h"

/* The cotangent of a reduction's output reshaped with its reduced axes
 * kept as size 1 (so it broadcasts against the input). */
static cmx_array keepdims_shape(cmx_array c, cmx_array x,
                                const cmx__reduce_params* q, cmx_stream s) {
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, x->dims, (size_t)x->ndim * 8);
  for (int i = 0; i < q->naxes; i++) shape[q->axes[i]] = 1;
  return cmx__reshape(c, shape, x->ndim, s);
}

CMX__RULE_VJP(cmx__vjp_reduce) {
  (void)nin, (void)nout, (void)argnums;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], c = cotangents[0], r = NULL;
  (void)outputs;
  if (nargs == 0) return CMX_OK;
  switch (q->kind) {
    case CMX__RED_SUM:
    case CMX__RED_MEAN: {
      r = cmx__broadcast_to(keepdims_shape(c, x, q, s), x->dims, x->ndim, s);
      if (q->kind == CMX__RED_MEAN) {
        int64_t n = 1;
        for (int i = 0; i < q->naxes; i++) n *= x->dims[q->axes[i]];
        r = cmx__multiply(r, cmx__scalar(n ? 1.0 / (double)n : 0.0, r ? r->dtype : CMX_FLOAT32), s);
      }
      break;
    }
    default:
      return cmx__error(CMX_ERR_VALUE,
                        "[vjp] Not implemented for Reduce(%s).",
                        cmx__reduce_kind_name(q->kind));
  }
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_reduce) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  switch (q->kind) {
    case CMX__RED_SUM:
    case CMX__RED_MEAN: {
      int axes[CMX_MAX_NDIM];
      for (int i = 0; i < q->naxes; i++) axes[i] = q->axes[i];
      r = q->kind == CMX__RED_SUM
              ? cmx__sum(tangents[0], axes, q->naxes, false, s)
              : cmx__mean(tangents[0], axes, q->naxes, false, s);
      r = cmx__reshape(r, outputs[0]->dims, outputs[0]->ndim, s);
      break;
    }
    default:
      return cmx__error(CMX_ERR_VALUE,
                        "[jvp] Not implemented for Reduce(%s).",
                        cmx__reduce_kind_name(q->kind));
  }
  (void)primals;
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

/* The reduction again with the batch axis moved to the front and skipped:
 * reduced axes shift by one. */
CMX__RULE_VMAP(cmx__vmap_reduce) {
  (void)nin, (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = cmx__batch_front(inputs[0], axes[0], 1, s);
  cmx__reduce_params b = *q;
  for (int i = 0; i < b.naxes; i++) b.axes[i] = q->axes[i] + 1;
  int64_t shape[CMX_MAX_NDIM];
  shape[0] = inputs[0]->dims[axes[0]];
  memcpy(shape + 1, outputs[0]->dims, (size_t)outputs[0]->ndim * 8);
  out[0] = cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &x,
                                     1, shape, outputs[0]->ndim + 1,
                                     outputs[0]->dtype));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}
