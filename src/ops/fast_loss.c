/* mx.fast.cross_entropy: the per-row loss logsumexp(logits) - logits[t]
 * with MLX's checks, as one CrossEntropy node (primitives/fast.h) whose
 * kernels read each row once and accumulate in float32; float64 logits,
 * and devices without the kernel, take the composite below. */
#include <string.h>

#include "cmx/fast.h"
#include "ops/ops_internal.h"
#include "primitives/fast.h"

#define OP "cross_entropy"

cmx_array cmx__fast_ce_composite(const cmx_array* in, cmx_stream s) {
  cmx_array x = in[0], t = in[1];
  if (!x || !t) return NULL;
  int last = -1;
  cmx_dtype AT = x->dtype == CMX_FLOAT64 ? CMX_FLOAT64 : CMX_FLOAT32;
  cmx_array xf = cmx__astype(x, AT, s);
  cmx_array lse = cmx__logsumexp(xf, &last, 1, false, s);
  cmx_array xt = cmx__squeeze(
      cmx__take_along_axis(xf, cmx__expand_dims(t, &last, 1, s), &last, s),
      &last, 1, s);
  return cmx__astype(cmx__subtract(lse, xt, s), CMX_FLOAT32, s);
}

static cmx_array ce_op(cmx_array logits, cmx_array targets, cmx_stream s) {
  if (!CMX__ARGS(OP, logits, targets)) return NULL;
  char b1[96], b2[96];
  if (logits->ndim == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[" OP
                     "] logits must have at least 1 dimension but got input "
                     "with 0 dimensions.");
  if (!cmx_dtype_is_floating(logits->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[" OP "] Received unsupported logits type %s.",
                     cmx_dtype_name(logits->dtype));
  int nd = logits->ndim - 1;
  if (targets->ndim != nd ||
      memcmp(targets->dims, logits->dims, (size_t)nd * sizeof *targets->dims))
    return CMX__FAIL(
        CMX_ERR_VALUE,
        "[" OP
        "] targets shape %s does not match logits shape %s with the "
        "last axis removed.",
        cmx__shape_str(targets->dims, targets->ndim, b1, sizeof b1),
        cmx__shape_str(logits->dims, logits->ndim, b2, sizeof b2));
  if (!cmx_dtype_is_integer(targets->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[" OP
                     "] targets must be integer class indices but got %s.",
                     cmx_dtype_name(targets->dtype));
  if (cmx_array_size(logits) == 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[" OP "] Received empty array.");
  const cmx__stream* st = cmx__stream_resolve(s, OP);
  if (!st) return NULL;
  cmx_array in[2] = {
      cmx__contiguous(logits, false, s),
      cmx__contiguous(cmx__as_dtype(targets, CMX_INT64, s), false, s)};
  if (logits->dtype == CMX_FLOAT64 ||
      !cmx_primitive_has_kernel(&cmx__vt_CrossEntropy, st->device.type))
    return cmx__fast_ce_composite(in, s);
  return cmx__apply(&cmx__vt_CrossEntropy, NULL, 0, s, in, 2, targets->dims,
                    targets->ndim, CMX_FLOAT32);
}

cmx_status cmx_fast_cross_entropy(cmx_array* out, cmx_array logits,
                                  cmx_array targets, cmx_stream s) {
  CMX__PUBLIC(out, OP, ce_op(logits, targets, s));
}
