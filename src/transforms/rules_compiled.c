/* Transform rules of the Compiled primitive: the region's primitives are
 * applied again, unfused, inside the transform (MLX: a transformed
 * compiled function is not compiled; compile the transformed function to
 * fuse its result). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/compiled.h"
#include "transforms/rules.h"

/* The region as a closure over the Compiled node's inputs. */
static cmx_status region_fn(void* payload, const cmx_array* in, int nin,
                            cmx_array** outputs, int* nout) {
  const cmx__fused_program* prog = payload;
  if (nin != prog->nargs)
    return cmx__error(CMX_ERR_VALUE, "[%s] expected %d inputs, got %d",
                      prog->label, prog->nargs, nin);
  int nv = prog->nin + prog->nsteps;
  cmx_array* v = calloc((size_t)nv + 1, sizeof *v);
  cmx_array* out = malloc((size_t)prog->nout * sizeof *out);
  if (!v || !out) {
    free(v);
    free(out);
    return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
  }
  for (int i = 0; i < prog->nin; i++)
    v[i] = prog->in[i].konst ? prog->in[i].konst : in[prog->in[i].arg];
  /* Every step has the region's shape: the traced one, or the inputs'
   * broadcast shape when the program derives it. */
  cmx_shape S = {.ndim = prog->ndim};
  memcpy(S.dims, prog->shape, (size_t)prog->ndim * sizeof(int64_t));
  cmx_status st = CMX_OK;
  if (prog->shapeless_ok)
    for (int i = 0; st == CMX_OK && i < prog->nin; i++) {
      int nd;
      int64_t r[CMX_MAX_NDIM];
      st = cmx__broadcast_shape(prog->label, i ? S.dims : NULL, i ? S.ndim : 0,
                                v[i]->dims, v[i]->ndim, r, &nd)
               ? CMX_OK
               : cmx_last_status();
      S.ndim = nd;
      memcpy(S.dims, r, (size_t)nd * sizeof *r);
    }
  for (int s = 0; st == CMX_OK && s < prog->nsteps; s++) {
    const cmx__fused_step* step = &prog->steps[s];
    cmx_array ins[3];
    for (int k = 0; k < step->nin; k++) {
      int o = step->in[k];
      ins[k] = o >= 0 ? v[o] : v[prog->nin + CMX__FUSED_STEP(o)];
    }
    const int64_t* shapes[1] = {S.dims};
    cmx_primitive_retain(step->prim);
    st = cmx_primitive_apply(&v[prog->nin + s], 1, step->prim, ins, step->nin,
                             shapes, &S.ndim, &step->dtype);
  }
  for (int k = 0; st == CMX_OK && k < prog->nout; k++)
    out[k] = cmx_array_retain(v[prog->nin + prog->out[k]]);
  for (int s = 0; s < prog->nsteps; s++) cmx_array_release(v[prog->nin + s]);
  free(v);
  if (st != CMX_OK) {
    free(out);
    return st;
  }
  *outputs = out;
  *nout = prog->nout;
  return CMX_OK;
}

static cmx_closure region_of(const cmx_primitive* p) {
  return (cmx_closure){region_fn, cmx__compiled_program(p)};
}

CMX__RULE_VJP(cmx__vjp_compiled) {
  (void)outputs;
  cmx_array* vjps = calloc((size_t)nin + 1, sizeof *vjps);
  if (!vjps) return cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
  cmx_status st =
      cmx_vjp(region_of(p), primals, nin, cotangents, nout, NULL, NULL, vjps);
  for (int k = 0; k < nargs; k++) {
    out[k] = st == CMX_OK ? vjps[argnums[k]] : NULL;
    if (st == CMX_OK) vjps[argnums[k]] = NULL;
  }
  for (int i = 0; i < nin; i++) cmx_array_release(vjps[i]);
  free(vjps);
  return st;
}

CMX__RULE_JVP(cmx__jvp_compiled) {
  (void)outputs;
  cmx_array* tans = calloc((size_t)nin + 1, sizeof *tans);
  if (!tans) return cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
  cmx_status st = CMX_OK;
  for (int k = 0; k < nargs; k++)
    tans[argnums[k]] = cmx_array_retain(tangents[k]);
  for (int i = 0; st == CMX_OK && i < nin; i++)
    if (!tans[i])
      st = cmx_zeros_like(&tans[i], primals[i], cmx_primitive_stream(p));
  cmx_array* jv = NULL;
  int no = 0;
  if (st == CMX_OK)
    st = cmx_jvp(region_of(p), primals, nin, tans, NULL, &jv, &no);
  for (int i = 0; i < nout; i++) out[i] = st == CMX_OK && i < no ? jv[i] : NULL;
  if (st == CMX_OK)
    for (int i = nout; i < no; i++) cmx_array_release(jv[i]);
  free(jv);
  for (int i = 0; i < nin; i++) cmx_array_release(tans[i]);
  free(tans);
  return st;
}

CMX__RULE_VMAP(cmx__vmap_compiled) {
  (void)outputs;
  int* in_axes = malloc((size_t)(nin + 1) * sizeof *in_axes);
  if (!in_axes) return cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
  for (int i = 0; i < nin; i++)
    in_axes[i] = axes[i] < 0 ? CMX_VMAP_NONE : axes[i];
  int zero = 0;
  cmx_array* res = NULL;
  int no = 0;
  cmx_status st =
      cmx_vmap(region_of(p), inputs, nin, in_axes, &zero, 1, &res, &no);
  free(in_axes);
  for (int i = 0; i < nout; i++) {
    out[i] = st == CMX_OK && i < no ? res[i] : NULL;
    out_axes[i] = 0;
  }
  if (st == CMX_OK)
    for (int i = nout; i < no; i++) cmx_array_release(res[i]);
  free(res);
  return st;
}
