/* The rope_multi pass: RoPE ops that share their parameters and their
 * offset become one RoPEMulti op (primitives/fast.h), whose outputs take
 * the RoPEs' places. Attention rotates q and k at one offset: one kernel
 * launch instead of two per layer.
 *
 * RoPE ops fuse into a group (at most CMX__ROPE_MULTI_MAX) when:
 * - their parameters are equal (dims, traditional, base, scale, freqs or
 *   not), they read the same offset value and, with freqs, the same freqs
 *   value;
 * - their x have one dtype that the kernels take (float16, bfloat16,
 *   float32);
 * - they are on one stream, whose device has a RoPEMulti kernel;
 * - the graph is not shapeless (kept as simple as add_rms_norm's rule).
 * The group's op is the last member's place: each earlier member's output
 * must be read by no op after it up to that place (the last member's x
 * included), so the op order stays a dependency order and no member's x
 * depends on another member's output. A group is grown in op order from
 * its first member and stops at the first op that reads a member's
 * output. CMX_COMPILE_ROPE_MULTI=0 turns the pass off for the traces made
 * while it is set (read at each trace: A/B comparisons in one process).
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/fast.h"
#include "primitives/registry.h"
#include "primitives/shapes.h"

static bool kernel_dtype(cmx_dtype dt) {
  return dt == CMX_FLOAT32 || dt == CMX_FLOAT16 || dt == CMX_BFLOAT16;
}

/* Whether op n is a RoPE the pass may group (one output, x of a kernel
 * dtype, a RoPEMulti kernel on its device). */
static bool candidate(const cmx__cgraph* g, int n) {
  const cmx__cop* op = &g->ops[n];
  if (cmx_primitive_vt(op->prim) != &cmx__vt_RoPE || op->nout != 1)
    return false;
  const cmx__fast_params* q = cmx_primitive_params(op->prim);
  if (op->nin != 2 + (q->has_freqs != 0)) return false;
  cmx_dtype dt = g->vals[op->in[0]].dtype;
  return kernel_dtype(dt) && g->vals[op->out[0]].dtype == dt &&
         cmx_primitive_has_kernel(&cmx__vt_RoPEMulti,
                                  cmx_primitive_stream(op->prim).device.type);
}

/* Whether candidates a and b may share one RoPEMulti. */
static bool compatible(const cmx__cgraph* g, int a, int b) {
  const cmx__cop *x = &g->ops[a], *y = &g->ops[b];
  if (!cmx__params_equal_bytes(x->prim, y->prim) || x->nin != y->nin)
    return false;
  for (int k = 1; k < x->nin; k++) /* offset, freqs: the same values */
    if (x->in[k] != y->in[k]) return false;
  return g->vals[x->in[0]].dtype == g->vals[y->in[0]].dtype &&
         cmx_stream_equal(cmx_primitive_stream(x->prim),
                          cmx_primitive_stream(y->prim));
}

/* Whether live op m reads an output of the group's members. */
static bool reads_member(const cmx__cgraph* g, int m, const int* grp, int n) {
  const cmx__cop* op = &g->ops[m];
  for (int k = 0; k < op->nin; k++)
    for (int i = 0; i < n; i++)
      if (op->in[k] == g->ops[grp[i]].out[0]) return true;
  return false;
}

/* Rewrites the group's last member as RoPEMulti over {x_1 .. x_n, offset,
 * [freqs]} with outputs {out_1 .. out_n}; the other members are marked
 * dead. Returns false (graph unchanged) when out of memory. */
static bool rewrite(cmx__cgraph* g, const int* grp, int n, bool* dead) {
  int at = grp[n - 1];
  cmx__cop* last = &g->ops[at];
  int shared = last->nin - 1; /* offset, [freqs] */
  int nin = n + shared;
  cmx_primitive* p = cmx_primitive_new(
      &cmx__vt_RoPEMulti, cmx_primitive_params(last->prim),
      cmx_primitive_params_size(last->prim), cmx_primitive_stream(last->prim));
  int* ids = malloc((size_t)(nin + n) * sizeof *ids);
  if (!p || !ids) {
    cmx_primitive_release(p);
    free(ids);
    cmx__error_reset_pending();
    return false;
  }
  for (int i = 0; i < n; i++) {
    ids[i] = g->ops[grp[i]].in[0];
    ids[nin + i] = g->ops[grp[i]].out[0];
  }
  for (int k = 0; k < shared; k++) ids[n + k] = last->in[1 + k];
  cmx__cgraph_set_op(g, at, p, ids, nin, n);
  /* the dead ops keep their prims and in/out (compact releases them), but
   * no longer define a value */
  for (int i = 0; i < n - 1; i++) dead[grp[i]] = true;
  return true;
}

cmx_status cmx__pass_rope_multi(cmx__cgraph* g) {
  if (g->shapeless || g->nops < 2 ||
      cmx__pass_switched_off("CMX_COMPILE_ROPE_MULTI"))
    return CMX_OK;
  bool* dead;
  if (!cmx__pass_begin(g, &dead, NULL)) return CMX_OK;
  bool any = false;
  for (int a = 0; a < g->nops; a++) {
    if (dead[a] || !candidate(g, a)) continue;
    int grp[CMX__ROPE_MULTI_MAX] = {a}, n = 1;
    for (int m = a + 1; m < g->nops && n < CMX__ROPE_MULTI_MAX; m++) {
      if (dead[m]) continue; /* its reads happen at its group's op */
      if (reads_member(g, m, grp, n)) break;
      if (candidate(g, m) && compatible(g, a, m)) grp[n++] = m;
    }
    if (n >= 2 && rewrite(g, grp, n, dead)) any = true;
  }
  return cmx__pass_end(g, dead, NULL, any);
}
