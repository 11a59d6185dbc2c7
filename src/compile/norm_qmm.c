/* The norm_qmm pass: an AddRMSNorm whose normed output y feeds one
 * one-row quantized mat-vec becomes one AddRMSNormQuantizedMatmul op
 * (primitives/quantized.h) with outputs (h, o): h takes AddRMSNorm's h,
 * o the mat-vec's output. In a decoding step (examples/llm/model.py) each
 * layer's input norm feeds the fused qkv projection and its post-attention
 * norm the MLP's gate_up + SwiGLU: the GPU then runs the add and norm in
 * the mat-vec's prologue, one launch instead of two.
 *
 * An AddRMSNorm op n -> consumer c pair fuses when:
 * - n's y (output 1) has exactly one use: c's x (input 0), and is no graph
 *   output; h (output 0) keeps all its uses;
 * - c is a QuantizedMatmul of transposed weights in the affine mode, bits
 *   2, 3, 4, 5, 6 or 8, whose output has one row (the mat-vec shape), or a
 *   QuantizedMatmulSwiGLU (made by the qmm_swiglu pass, which runs first);
 * - y and c's output share a dtype the kernels take (float16, bfloat16,
 *   float32; AddRMSNorm's x, r and weight have it too);
 * - both ops are on one stream, whose device has the fused op's kernel;
 * - the graph is not shapeless (a later call could change the rows).
 * The fused op replaces one of the two in place, so the op order stays a
 * dependency order: c's when no op between n and c reads h, else n's when
 * c's other inputs (packed weights, scales, biases) are defined before n;
 * otherwise the pair is left alone.
 *
 * The pass is opt-in: CMX_COMPILE_NORM_QMV=1 turns it on for the traces
 * made while it is set (read at each trace: A/B comparisons in one
 * process). Off by default because it costs more than it saves: on an
 * H200 (2026-11-28, synthetic SmolLM2-135M, 4 interleaved rounds of 200
 * tokens) decoding ran 741-777 tokens/s with it against 757-824 without,
 * and 778-807 against 817-990 with programmatic launches
 * (CMX_CUDA_PDL=1); the kernels' time a token was 1117 us against 1058.
 * Each block's prologue (the norm's reduction, then the scaling) is
 * latency the two-launch form hides in the launch it saves.
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/fast.h"
#include "primitives/quantized.h"
#include "primitives/registry.h"

/* The one op reading value v (uses[v] == 1 and no graph output), or -1. */
static int sole_reader(const cmx__cgraph* g, const int* uses, int v, int from) {
  if (uses[v] != 1) return -1;
  for (int i = from; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++)
      if (g->ops[i].in[k] == v) return i;
  return -1; /* a graph output */
}

/* Whether op c (reading y as its x) is a one-row mat-vec the fused kernels
 * take; *swiglu tells which consumer. */
static bool fusable_consumer(const cmx__cgraph* g, int c, int yv,
                             bool* swiglu) {
  const cmx__cop* op = &g->ops[c];
  const cmx_primitive_vtable* vt = cmx_primitive_vt(op->prim);
  *swiglu = vt == &cmx__vt_QuantizedMatmulSwiGLU;
  if (!*swiglu && vt != &cmx__vt_QuantizedMatmul) return false;
  const cmx__quant_params* q = cmx_primitive_params(op->prim);
  int b = q->bits;
  if (op->nin != 4 || op->nout != 1 || op->in[0] != yv || !q->transpose ||
      q->mode != CMX__QMODE_AFFINE ||
      !(b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8))
    return false;
  for (int k = 1; k < 4; k++) /* y only as x */
    if (op->in[k] == yv) return false;
  const cmx__cval *y = &g->vals[yv], *o = &g->vals[op->out[0]];
  if (o->dtype != y->dtype || o->ndim < 2 || o->shape[o->ndim - 2] != 1)
    return false;
  return y->dtype == CMX_FLOAT32 || y->dtype == CMX_FLOAT16 ||
         y->dtype == CMX_BFLOAT16;
}

/* Rewrites op `at` (n or c) as AddRMSNormQuantizedMatmul over {n's inputs,
 * c's inputs but y} with outputs {h, c's output}; the other op is marked
 * dead. Returns false (graph unchanged) when out of memory. */
static bool rewrite(cmx__cgraph* g, int n, int c, int at, bool swiglu,
                    bool* dead) {
  const cmx__cop *norm = &g->ops[n], *qmm = &g->ops[c];
  cmx__norm_qmm_params q;
  memset(&q, 0, sizeof q);
  memcpy(&q.norm, cmx_primitive_params(norm->prim), sizeof q.norm);
  memcpy(&q.q, cmx_primitive_params(qmm->prim), sizeof q.q);
  q.swiglu = swiglu;
  cmx_primitive* p =
      cmx_primitive_new(&cmx__vt_AddRMSNormQuantizedMatmul, &q, sizeof q,
                        cmx_primitive_stream(qmm->prim));
  int nin = norm->nin + 3;
  int* ids = malloc((size_t)(nin + 2) * sizeof *ids);
  if (!p || !ids) {
    cmx_primitive_release(p);
    free(ids);
    cmx__error_reset_pending();
    return false;
  }
  memcpy(ids, norm->in, (size_t)norm->nin * sizeof *ids);
  memcpy(ids + norm->nin, qmm->in + 1, 3 * sizeof *ids);
  ids[nin] = norm->out[0];
  ids[nin + 1] = qmm->out[0];
  cmx__cgraph_set_op(g, at, p, ids, nin, 2);
  int other = at == n ? c : n;
  /* the dead op keeps its prim and in/out (compact releases them); y is
   * no longer read nor defined, so compact drops it */
  dead[other] = true;
  return true;
}

cmx_status cmx__pass_norm_qmm(cmx__cgraph* g) {
  if (g->shapeless || g->nops < 2 ||
      !cmx__pass_switched_on("CMX_COMPILE_NORM_QMV"))
    return CMX_OK;
  bool* dead;
  int* uses;
  if (!cmx__pass_begin(g, &dead, &uses)) return CMX_OK;
  bool any = false;
  for (int n = 0; n < g->nops; n++) {
    const cmx__cop* norm = &g->ops[n];
    if (dead[n] || cmx_primitive_vt(norm->prim) != &cmx__vt_AddRMSNorm ||
        norm->nout != 2)
      continue;
    int hv = norm->out[0], yv = norm->out[1];
    int c = sole_reader(g, uses, yv, n + 1);
    bool swiglu = false;
    if (c < 0 || dead[c] || !fusable_consumer(g, c, yv, &swiglu)) continue;
    cmx_stream s = cmx_primitive_stream(norm->prim);
    if (!cmx_stream_equal(s, cmx_primitive_stream(g->ops[c].prim)) ||
        !cmx_primitive_has_kernel(&cmx__vt_AddRMSNormQuantizedMatmul,
                                  s.device.type))
      continue;
    int at = -1;
    if (!cmx__cgraph_read_between(g, hv, n, c)) {
      at = c;
    } else {
      at = n;
      for (int k = 1; k < 4 && at >= 0; k++)
        if (cmx__cgraph_def_op(g, g->ops[c].in[k]) >= n) at = -1;
    }
    if (at >= 0 && rewrite(g, n, c, at, swiglu, dead)) any = true;
  }
  return cmx__pass_end(g, dead, uses, any);
}
