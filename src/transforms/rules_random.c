/* Transform rules of the random primitives (primitives/random.h).
 *
 * RandomBits: bits have no derivative (its key input is integer anyway),
 * and a batch of keys is what the primitive already takes (keys of shape
 * (K.., 2) give one block per key), so vmap moves the batch of keys to
 * the front: each key yields its own bits, exactly as a loop would.
 * CovSqrt: a stack of matrices, so vmap puts the batch in front. Its
 * vjp and jvp (through an eigendecomposition) are in rules_linalg.c. */
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

/* The primitive again on the input with its batch in front; the output
 * is (B, unbatched output dims). */
static cmx_status batch_front_apply(const cmx_primitive* p, cmx_array in,
                                    int axis, cmx_array out0, cmx_array* out,
                                    int* out_axes) {
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = cmx__batch_front(in, axis, 1, s);
  if (!x) return cmx_last_status();
  if (out0->ndim + 1 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions for %s",
                      cmx_primitive_name(p));
  int64_t shape[CMX_MAX_NDIM];
  shape[0] = x->dims[0];
  memcpy(shape + 1, out0->dims, (size_t)out0->ndim * sizeof *shape);
  out[0] =
      cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                                cmx_primitive_params_size(p), s, &x, 1, shape,
                                out0->ndim + 1, out0->dtype));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_random_bits) {
  (void)nin, (void)nout;
  return batch_front_apply(p, inputs[0], axes[0], outputs[0], out, out_axes);
}

/* The kernel reads a contiguous stack (the op makes it so), so the moved
 * batch is made contiguous too. */
CMX__RULE_VMAP(cmx__vmap_cov_sqrt) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x =
      cmx__contiguous(cmx__batch_front(inputs[0], axes[0], 1, s), false, s);
  if (!x) return cmx_last_status();
  return batch_front_apply(p, x, 0, outputs[0], out, out_axes);
}
