/* The add_rms_norm pass: a residual Add feeding an RMSNorm becomes one
 * AddRMSNorm op (primitives/fast.h), whose h output takes the Add's place
 * and whose y output the RMSNorm's. A transformer block's `h = x + f(x)`
 * followed by `norm(h)` is then one kernel instead of two.
 *
 * An Add(a, b) -> RMSNorm pair fuses when:
 * - the Add's output is the RMSNorm's x, and the RMSNorm reads it nowhere
 *   else (not as its weight);
 * - a, b and the output have one shape and one dtype (no broadcast, no
 *   promotion), a dtype the kernels take (float16, bfloat16, float32);
 * - both ops are on one stream, whose device has an AddRMSNorm kernel;
 * - the graph is not shapeless (a later call could broadcast the Add).
 * The fused op replaces one of the two ops in place, so the op order stays
 * a dependency order: the RMSNorm's when nothing between the two reads
 * the Add's output, else the Add's when the weight is defined before the
 * Add; otherwise the pair is left alone. Several RMSNorms reading one Add:
 * the first fuses (the others then read h).
 * CMX_COMPILE_ADD_RMS_NORM=0 turns the pass off for the traces made while
 * it is set (read at each trace: A/B comparisons in one process).
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/fast.h"
#include "primitives/registry.h"

static bool same_desc(const cmx__cval* a, const cmx__cval* b) {
  return a->dtype == b->dtype && a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t));
}

/* The Add op that RMSNorm op n could fuse with, or -1. */
static int fusable_add(const cmx__cgraph* g, int n) {
  const cmx__cop* norm = &g->ops[n];
  const cmx__fast_params* q = cmx_primitive_params(norm->prim);
  if (norm->nout != 1 || norm->nin != 1 + (q->has_weight != 0)) return -1;
  int xv = norm->in[0];
  int a = cmx__cgraph_def_op(g, xv);
  if (a < 0) return -1;
  const cmx__cop* add = &g->ops[a];
  if (cmx_primitive_vt(add->prim) != &cmx__vt_Add || add->nin != 2 ||
      add->nout != 1)
    return -1;
  const cmx__cval* h = &g->vals[xv];
  if (h->dtype != CMX_FLOAT32 && h->dtype != CMX_FLOAT16 &&
      h->dtype != CMX_BFLOAT16)
    return -1;
  if (!same_desc(&g->vals[add->in[0]], h) ||
      !same_desc(&g->vals[add->in[1]], h) ||
      !same_desc(&g->vals[norm->out[0]], h))
    return -1;
  if (q->has_weight && norm->in[1] == xv) return -1;
  cmx_stream s = cmx_primitive_stream(norm->prim);
  if (!cmx_stream_equal(s, cmx_primitive_stream(add->prim)) ||
      !cmx_primitive_has_kernel(&cmx__vt_AddRMSNorm, s.device.type))
    return -1;
  return a;
}

/* Rewrites op `at` (the Add a or the RMSNorm n) as AddRMSNorm over
 * {Add's operands, [weight]} with outputs {Add's value, RMSNorm's value};
 * the other op is marked dead. Returns false (graph unchanged) when out of
 * memory. */
static bool rewrite(cmx__cgraph* g, int a, int n, int at, bool* dead) {
  cmx__cop *add = &g->ops[a], *norm = &g->ops[n];
  cmx_primitive* p = cmx_primitive_new(
      &cmx__vt_AddRMSNorm, cmx_primitive_params(norm->prim),
      cmx_primitive_params_size(norm->prim), cmx_primitive_stream(norm->prim));
  int nin = 1 + norm->nin;
  int* ids = malloc((size_t)(nin + 2) * sizeof *ids);
  if (!p || !ids) {
    cmx_primitive_release(p);
    free(ids);
    cmx__error_reset_pending();
    return false;
  }
  ids[0] = add->in[0];
  ids[1] = add->in[1];
  if (norm->nin > 1) ids[2] = norm->in[1];
  ids[nin] = add->out[0];
  ids[nin + 1] = norm->out[0];
  cmx__cgraph_set_op(g, at, p, ids, nin, 2);
  int other = at == a ? n : a;
  /* the dead op keeps its prim and in/out (compact releases them), but no
   * longer defines a value */
  dead[other] = true;
  return true;
}

cmx_status cmx__pass_add_rms_norm(cmx__cgraph* g) {
  if (g->shapeless || g->nops < 2 ||
      cmx__pass_switched_off("CMX_COMPILE_ADD_RMS_NORM"))
    return CMX_OK;
  bool* dead;
  if (!cmx__pass_begin(g, &dead, NULL)) return CMX_OK;
  bool any = false;
  for (int n = 0; n < g->nops; n++) {
    if (dead[n] || cmx_primitive_vt(g->ops[n].prim) != &cmx__vt_RMSNorm)
      continue;
    int a = fusable_add(g, n);
    if (a < 0 || dead[a]) continue;
    const cmx__cop* norm = &g->ops[n];
    int hv = g->ops[a].out[0];
    int at = -1;
    if (!cmx__cgraph_read_between(g, hv, a, n))
      at = n;
    else if (norm->nin == 1 || cmx__cgraph_def_op(g, norm->in[1]) < a)
      at = a;
    if (at >= 0 && rewrite(g, a, n, at, dead)) any = true;
  }
  return cmx__pass_end(g, dead, NULL, any);
}
