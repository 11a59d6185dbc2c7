/* The qmm_swiglu pass: a quantized gate-and-up projection followed by
 * SwiGLU becomes one QuantizedMatmulSwiGLU op (primitives/quantized.h),
 * whose output takes the final product's place. A decoding step's MLP
 * (examples/llm/model.py: `y = gate_up(x); n = y.shape[-1] // 2;
 * silu(y[..., :n]) * y[..., n:]`, nn.silu tracing as a * sigmoid(a)) is
 * then one mat-vec kernel instead of the mat-vec and an elementwise one.
 *
 * The chain, every value of one dtype the kernels take (float16,
 * bfloat16, float32), every op on one stream whose device has a
 * QuantizedMatmulSwiGLU kernel:
 *   y = QuantizedMatmul(x, wq, scales, biases), transposed weights, the
 *       affine mode, bits 2, 3, 4, 5, 6 or 8, one row of x (the mat-vec
 *       path; the GPU's QuantizedMatmul takes it for one row), N = 2n;
 *   a = Slice(y) of y's first n columns, b = Slice(y) of its last n (the
 *       other axes whole, steps 1);
 *   s = Sigmoid(a), t = Multiply(a, s), out = Multiply(t, b) (either
 *       operand order of each product);
 * and no other reader of y, a, b, s or t (a graph output counts as one).
 * The graph is not shapeless (a later call could change the split). The
 * fused op replaces the final Multiply in place: its inputs are the
 * QuantizedMatmul's, defined before it, so the op order stays a
 * dependency order. CMX_COMPILE_SWIGLU=0 turns the pass off for the
 * traces made while it is set (read at each trace: A/B comparisons in one
 * process).
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/quantized.h"
#include "primitives/registry.h"
#include "primitives/shape.h"

/* Whether op i is a one-output op of primitive vt with nin inputs, on
 * stream s. */
static bool is_op(const cmx__cgraph* g, int i, const cmx_primitive_vtable* vt,
                  int nin, cmx_stream s) {
  if (i < 0) return false;
  const cmx__cop* op = &g->ops[i];
  return cmx_primitive_vt(op->prim) == vt && op->nin == nin && op->nout == 1 &&
         cmx_stream_equal(cmx_primitive_stream(op->prim), s);
}

/* Whether value v has dtype dt and y's shape with n last columns. */
static bool half_desc(const cmx__cval* v, const cmx__cval* y, int64_t n) {
  return v->dtype == y->dtype && v->ndim == y->ndim &&
         !memcmp(v->shape, y->shape, (size_t)(y->ndim - 1) * sizeof(int64_t)) &&
         v->shape[y->ndim - 1] == n;
}

/* Whether Slice op i takes columns [c0, c0 + n) of y's last axis and the
 * other axes whole, steps 1. */
static bool is_half(const cmx__cgraph* g, int i, const cmx__cval* y, int64_t c0,
                    int64_t n) {
  const cmx__slice_params* q = cmx_primitive_params(g->ops[i].prim);
  int nd = y->ndim;
  if (q->ndim != nd) return false;
  for (int d = 0; d < nd; d++) {
    int64_t lo = d == nd - 1 ? c0 : 0, hi = d == nd - 1 ? c0 + n : y->shape[d];
    if (q->start[d] != lo || q->stop[d] != hi || q->step[d] != 1) return false;
  }
  return half_desc(&g->vals[g->ops[i].out[0]], y, n);
}

/* Whether QuantizedMatmul op i is one the fused kernels take. */
static bool fusable_qmm(const cmx__cgraph* g, int i) {
  const cmx__cop* op = &g->ops[i];
  const cmx__quant_params* q = cmx_primitive_params(op->prim);
  int b = q->bits;
  if (op->nin != 4 || op->nout != 1 || !q->transpose ||
      q->mode != CMX__QMODE_AFFINE ||
      !(b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8))
    return false;
  const cmx__cval* y = &g->vals[op->out[0]];
  if (y->dtype != CMX_FLOAT32 && y->dtype != CMX_FLOAT16 &&
      y->dtype != CMX_BFLOAT16)
    return false;
  if (y->ndim < 2 || y->shape[y->ndim - 2] != 1 || y->shape[y->ndim - 1] < 2 ||
      y->shape[y->ndim - 1] % 2 || g->vals[op->in[0]].dtype != y->dtype)
    return false;
  return cmx_primitive_has_kernel(&cmx__vt_QuantizedMatmulSwiGLU,
                                  cmx_primitive_stream(op->prim).device.type);
}

/* The one op reading value v (uses[v] == 1 and not a graph output: a
 * graph output is a use no op accounts for), or -1. from: the first op
 * that may read it. */
static int sole_reader(const cmx__cgraph* g, const int* uses, int v, int from) {
  if (uses[v] != 1) return -1;
  for (int i = from; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++)
      if (g->ops[i].in[k] == v) return i;
  return -1; /* a graph output */
}

/* The ops of one chain: the QuantizedMatmul, the two Slices, Sigmoid,
 * the two Multiplys. */
typedef struct {
  int qmm, sa, sb, sig, m1, m2;
} chain;

/* Whether QuantizedMatmul op i heads a chain the pass fuses (filled in
 * c). */
static bool find_chain(const cmx__cgraph* g, const int* uses, int i, chain* c) {
  if (!fusable_qmm(g, i)) return false;
  cmx_stream s = cmx_primitive_stream(g->ops[i].prim);
  int yv = g->ops[i].out[0];
  const cmx__cval* y = &g->vals[yv];
  int64_t n = y->shape[y->ndim - 1] / 2;
  if (uses[yv] != 2) return false;
  int sl[2], ns = 0;
  for (int j = i + 1; j < g->nops && ns < 2; j++)
    for (int k = 0; k < g->ops[j].nin; k++)
      if (g->ops[j].in[k] == yv) {
        if (!is_op(g, j, &cmx__vt_Slice, 1, s)) return false;
        sl[ns++] = j;
        break;
      }
  if (ns != 2) return false; /* y is a graph output */
  bool first = is_half(g, sl[0], y, 0, n);
  int sa = first ? sl[0] : sl[1], sb = first ? sl[1] : sl[0];
  if (!is_half(g, sa, y, 0, n) || !is_half(g, sb, y, n, n)) return false;
  int av = g->ops[sa].out[0], bv = g->ops[sb].out[0];
  /* a: read by the Sigmoid and by the first Multiply */
  if (uses[av] != 2) return false;
  int sig = -1, m1 = -1;
  for (int j = sa + 1; j < g->nops; j++)
    for (int k = 0; k < g->ops[j].nin; k++)
      if (g->ops[j].in[k] == av) {
        if (is_op(g, j, &cmx__vt_Sigmoid, 1, s) && sig < 0)
          sig = j;
        else if (is_op(g, j, &cmx__vt_Multiply, 2, s) && m1 < 0)
          m1 = j;
        else
          return false;
        break;
      }
  if (sig < 0 || m1 < 0) return false;
  int sv = g->ops[sig].out[0];
  const int* m1in = g->ops[m1].in;
  if (!((m1in[0] == av && m1in[1] == sv) || (m1in[0] == sv && m1in[1] == av)))
    return false;
  if (sole_reader(g, uses, sv, sig + 1) != m1) return false;
  int tv = g->ops[m1].out[0];
  int m2 = sole_reader(g, uses, tv, m1 + 1);
  if (!is_op(g, m2, &cmx__vt_Multiply, 2, s)) return false;
  const int* m2in = g->ops[m2].in;
  if (!((m2in[0] == tv && m2in[1] == bv) || (m2in[0] == bv && m2in[1] == tv)))
    return false;
  if (sole_reader(g, uses, bv, sb + 1) != m2) return false;
  int vals[4] = {sv, tv, g->ops[m2].out[0], bv};
  for (int k = 0; k < 4; k++)
    if (!half_desc(&g->vals[vals[k]], y, n)) return false;
  *c = (chain){i, sa, sb, sig, m1, m2};
  return true;
}

/* Rewrites the chain's final Multiply as QuantizedMatmulSwiGLU over the
 * QuantizedMatmul's inputs; the chain's other ops are marked dead.
 * Returns false (graph unchanged) when out of memory. */
static bool rewrite(cmx__cgraph* g, const chain* c, bool* dead) {
  const cmx__cop* q = &g->ops[c->qmm];
  cmx_primitive* p = cmx_primitive_new(
      &cmx__vt_QuantizedMatmulSwiGLU, cmx_primitive_params(q->prim),
      cmx_primitive_params_size(q->prim), cmx_primitive_stream(q->prim));
  int* ids = malloc((size_t)(q->nin + 1) * sizeof *ids);
  if (!p || !ids) {
    cmx_primitive_release(p);
    free(ids);
    cmx__error_reset_pending();
    return false;
  }
  memcpy(ids, q->in, (size_t)q->nin * sizeof *ids);
  ids[q->nin] = g->ops[c->m2].out[0];
  cmx__cgraph_set_op(g, c->m2, p, ids, q->nin, 1);
  /* the dead ops keep their prims and in/out (compact releases them), but
   * no longer define a value anyone reads */
  int others[5] = {c->qmm, c->sa, c->sb, c->sig, c->m1};
  for (int k = 0; k < 5; k++) dead[others[k]] = true;
  return true;
}

cmx_status cmx__pass_qmm_swiglu(cmx__cgraph* g) {
  if (g->shapeless || g->nops < 6 ||
      cmx__pass_switched_off("CMX_COMPILE_SWIGLU"))
    return CMX_OK;
  bool* dead;
  int* uses;
  if (!cmx__pass_begin(g, &dead, &uses)) return CMX_OK;
  bool any = false;
  for (int i = 0; i < g->nops; i++) {
    chain c;
    if (dead[i] ||
        cmx_primitive_vt(g->ops[i].prim) != &cmx__vt_QuantizedMatmul ||
        !find_chain(g, uses, i, &c))
      continue;
    if (rewrite(g, &c, dead)) any = true;
  }
  return cmx__pass_end(g, dead, uses, any);
}
