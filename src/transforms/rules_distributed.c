/* Transform rules of the collectives (contracts in
 * primitives/distributed.h), as MLX's: the vjp of an all-reduce passes the
 * cotangent through (each process differentiates its own replica of the
 * result; the identity rule), its jvp (sums only) reduces the tangent, and
 * vmap reduces the batched input as it is. all_gather's vjp takes this
 * rank's rows of the cotangent, its jvp gathers the tangent, and its vmap
 * gathers with the batch axis moved off axis 0 (to axis 1). sum_scatter has
 * no vjp (none in MLX either). */
#include "distributed/distributed.h"
#include "ops/ops_internal.h"
#include "primitives/distributed.h"
#include "transforms/rules.h"

static const cmx__dist_params* dp(const cmx_primitive* p) {
  return cmx_primitive_params(p);
}

CMX__RULE_JVP(cmx__jvp_all_reduce) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  if (dp(p)->red != CMX__RED_SUM)
    return cmx__error(CMX_ERR_NOT_IMPLEMENTED,
                      "[all_max/all_min] jvp is only defined for all_sum");
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(cmx__all_reduce(
      cmx__rule_as_like(tangents[0], primals[0], s), dp(p)->group, 0, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_all_reduce) {
  (void)nin, (void)outputs, (void)nout;
  out[0] = cmx__rule_keep(cmx__all_reduce(inputs[0], dp(p)->group, dp(p)->red,
                                          cmx__rule_stream(p)));
  out_axes[0] = axes[0];
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_all_gather) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int i = 0; i < x->ndim; i++) stop[i] = x->dims[i], step[i] = 1;
  start[0] = (int64_t)cmx_group_rank(dp(p)->group) * x->dims[0];
  stop[0] += start[0];
  out[0] = cmx__rule_keep(
      cmx__rule_as_like(cmx__slice(cotangents[0], start, stop, step, s), x, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_all_gather) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(cmx__all_gather(
      cmx__rule_as_like(tangents[0], primals[0], s), dp(p)->group, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_all_gather) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = inputs[0];
  if (x->ndim == 1) { /* a batch of 0-d inputs: (B,) -> (1, B) */
    int64_t shape[2] = {1, x->dims[0]};
    x = cmx__reshape(x, shape, 2, s);
  } else if (axes[0] != 1) {
    x = cmx__moveaxis(x, axes[0], 1, s);
  }
  out[0] = cmx__rule_keep(cmx__all_gather(x, dp(p)->group, s));
  out_axes[0] = 1;
  return out[0] ? CMX_OK : cmx_last_status();
}

/* sum_scatter is linear: its jvp scatters the tangent; vmap keeps the batch
 * axis off axis 0, which it splits. */
CMX__RULE_JVP(cmx__jvp_reduce_scatter) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(cmx__sum_scatter(
      cmx__rule_as_like(tangents[0], primals[0], s), dp(p)->group, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_reduce_scatter) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = inputs[0];
  int ax = axes[0];
  if (ax == 0) {
    x = cmx__moveaxis(x, 0, 1, s);
    ax = 1;
  }
  out[0] = cmx__rule_keep(cmx__sum_scatter(x, dp(p)->group, s));
  out_axes[0] = ax;
  return out[0] ? CMX_OK : cmx_last_status();
}
