/* Reverse mode: cmx_vjp. The function runs on stand-ins; the ops between
 * them and the outputs are visited consumers first, each op's vjp rule
 * turning its outputs' cotangents into its inputs' contributions, which
 * add up per node. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/transforms_internal.h"

/* Cotangents per node: an index into a scope-owned list. */
typedef struct cot_table {
  cmx__ptrmap index;
  cmx_array* items;
  size_t n, cap;
} cot_table;

static cmx_array cot_get(cot_table* c, cmx_array node) {
  int64_t i = cmx__ptrmap_get(&c->index, node);
  return i < 0 ? NULL : c->items[i];
}

/* Adds v (scope-owned) to node's cotangent. */
static bool cot_add(cot_table* c, cmx_array node, cmx_array v, cmx_stream s) {
  int64_t i = cmx__ptrmap_get(&c->index, node);
  if (i >= 0) {
    cmx_array sum = c->items[i] ? cmx__add(c->items[i], v, s) : v;
    if (!sum) return false;
    c->items[i] = sum;
    return true;
  }
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    cmx_array* items = realloc(c->items, cap * sizeof *items);
    if (!items) {
      cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
      return false;
    }
    c->items = items;
    c->cap = cap;
  }
  c->items[c->n] = v;
  return cmx__ptrmap_put(&c->index, node, (int64_t)c->n++);
}

/* Forgets node's cotangent once its producer has used it (the scope still
 * holds it, but later walks do not see it). */
static void cot_drop(cot_table* c, cmx_array node) {
  int64_t i = cmx__ptrmap_get(&c->index, node);
  if (i >= 0) c->items[i] = NULL;
}

static bool is_stop_gradient(cmx_array a) {
  cmx__op* op = cmx__node_op(a);
  return op && op->prim->vt == &cmx__vt_StopGradient;
}

static char* shape_text(cmx_array a, char* buf, size_t n) {
  return (char*)cmx__shape_str(a->dims, a->ndim, buf, n);
}

/* Orders the evaluation of an op's cotangent contributions for memory:
 * the contributions to the transform's inputs (final gradients, such as a
 * weight's) become dependencies of the contributions that flow further
 * back. Evaluating the backward chain then computes each op's input
 * gradients on the way, so the intermediates they read are freed at once
 * instead of living until the gradients are evaluated as separate roots
 * (with checkpointing, the recomputed intermediates of every block would
 * otherwise all be alive at the end of the chain). */
static bool order_contributions(const cmx__ptrmap* standins, cmx__op* op,
                                const int* args, int nargs, cmx_array* outs,
                                cmx_stream s) {
  int nleaf = 0, nchain = 0;
  for (int j = 0; j < nargs; j++) {
    if (!outs[j]) continue;
    if (cmx__ptrmap_get(standins, op->inputs[args[j]]) >= 0)
      nleaf++;
    else
      nchain++;
  }
  if (!nleaf || !nchain) return true;
  cmx_array* leaves = malloc((size_t)nleaf * sizeof *leaves);
  if (!leaves) {
    cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
    return false;
  }
  int k = 0;
  for (int j = 0; j < nargs; j++)
    if (outs[j] && cmx__ptrmap_get(standins, op->inputs[args[j]]) >= 0)
      leaves[k++] = outs[j];
  bool ok = true;
  for (int j = 0; ok && j < nargs; j++)
    if (outs[j] && cmx__ptrmap_get(standins, op->inputs[args[j]]) < 0)
      ok = cmx__depends(&outs[j], &outs[j], 1, leaves, nleaf, s);
  free(leaves);
  return ok;
}

/* Applies the rules of the tape backwards from the seeded cotangents. */
static bool backward(cmx__tape* tape, const cmx__ptrmap* standins,
                     cot_table* cots, cmx_stream s) {
  int argnums[64];
  cmx_array contrib[64];
  for (size_t k = tape->n; k-- > 0;) {
    cmx__op* op = tape->ops[k];
    cmx_array* oc = calloc((size_t)op->nout, sizeof *oc);
    if (!oc) {
      cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
      return false;
    }
    bool any = false;
    for (int i = 0; i < op->nout; i++) {
      cmx_array o = cmx__op_output(op, i);
      if (o) {
        oc[i] = cot_get(cots, o);
        cot_drop(cots, o);
        cmx_array_release(o);
      }
      any |= oc[i] != NULL;
    }
    if (!any) {
      free(oc);
      continue;
    }
    bool ok = true;
    for (int i = 0; i < op->nout && ok; i++) {
      if (oc[i]) continue;
      const int64_t* sh;
      int nd;
      cmx_dtype dt;
      cmx__op_out_desc(op, i, &sh, &nd, &dt);
      ok = (oc[i] = cmx__zeros(sh, nd, dt, s)) != NULL;
    }
    int* args = argnums;
    cmx_array* outs = contrib;
    if (op->nin > 64) {
      args = malloc((size_t)op->nin * sizeof *args);
      outs = malloc((size_t)op->nin * sizeof *outs);
      if (!args || !outs) {
        cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
        ok = false;
      }
    }
    int nargs = 0;
    int nvis = cmx__op_visible_inputs(op);
    for (int i = 0; ok && i < nvis; i++)
      if (cmx__tape_active(tape, op->inputs[i])) args[nargs++] = i;
    if (ok && nargs) ok = cmx__rule_vjp(op, oc, args, nargs, outs) == CMX_OK;
    if (ok && nargs > 1)
      ok = order_contributions(standins, op, args, nargs, outs, s);
    for (int j = 0; ok && j < nargs; j++) {
      if (!outs[j]) continue; /* no contribution */
      cmx_array in = op->inputs[args[j]];
      if (outs[j]->ndim != in->ndim ||
          memcmp(outs[j]->dims, in->dims, (size_t)in->ndim * 8)) {
        char a[96], b[96];
        cmx__error(CMX_ERR_RUNTIME,
                   "[vjp] the rule of %s gave a cotangent of shape %s for an "
                   "input of shape %s",
                   op->prim->vt->name, shape_text(outs[j], a, sizeof a),
                   shape_text(in, b, sizeof b));
        ok = false;
        break;
      }
      ok = cot_add(cots, in, outs[j], s);
    }
    if (args != argnums) free(args);
    if (outs != contrib) free(outs);
    free(oc);
    if (!ok) return false;
  }
  return true;
}

/* The body of cmx_vjp inside a scope: writes the scope-owned outputs and
 * vjps. */
static bool vjp_scoped(cmx_closure f, const cmx_array* primals, int n,
                       const cmx_array* cotangents, int ncot,
                       cmx_array** outs_out, int* nout_out, cmx_array* vjps,
                       bool loose_seed) {
  cmx_stream s = CMX_STREAM_DEFAULT;
  cmx_array* standins = calloc((size_t)(n ? n : 1), sizeof *standins);
  if (!standins) {
    cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
    return false;
  }
  bool ok = true;
  for (int i = 0; i < n && ok; i++)
    ok = (standins[i] = cmx__tracer_of(primals[i], s)) != NULL;
  int nout = 0;
  cmx_array* outs = ok ? cmx__call_scoped(f, standins, n, &nout, "vjp") : NULL;
  ok = outs != NULL;
  /* Pair cotangents with the outputs, skipping stop_gradient outputs (as
   * MLX does, so value_and_grad's aux outputs need none). */
  cot_table cots = {0};
  int c = 0;
  for (int i = 0; ok && i < nout; i++) {
    if (is_stop_gradient(outs[i])) continue;
    if (c >= ncot) {
      cmx__error(CMX_ERR_VALUE,
                 "[vjp] Number of outputs to compute gradients for (%d) does "
                 "not match number of cotangents (%d).",
                 nout, ncot);
      ok = false;
      break;
    }
    cmx_array ct = cotangents[c++];
    if (loose_seed && ct->size == 1 && outs[i]->size == 1 &&
        ct->ndim != outs[i]->ndim)
      ct = cmx__reshape(ct, outs[i]->dims, outs[i]->ndim, s);
    if (!ct) {
      ok = false;
      break;
    }
    if (ct->ndim != outs[i]->ndim ||
        memcmp(ct->dims, outs[i]->dims, (size_t)ct->ndim * 8)) {
      char a[96], b[96];
      /* MLX's hint for grad of a size-1, non-scalar function. */
      bool hint = nout == 1 && outs[i]->size == 1;
      cmx__error(CMX_ERR_VALUE,
                 "[vjp] Output shape %s does not match cotangent shape %s.%s",
                 shape_text(outs[i], a, sizeof a), shape_text(ct, b, sizeof b),
                 hint ? " If you are using grad your function must return a "
                        "scalar."
                      : "");
      ok = false;
      break;
    }
    cmx_array seed = ct->dtype == outs[i]->dtype
                         ? cmx__ref(ct)
                         : cmx__astype(ct, outs[i]->dtype, s);
    ok = seed && cot_add(&cots, outs[i], seed, s);
  }
  if (ok && c != ncot) {
    cmx__error(CMX_ERR_VALUE,
               "[vjp] Number of outputs to compute gradients for (%d) does "
               "not match number of cotangents (%d).",
               c, ncot);
    ok = false;
  }
  cmx__tape tape = {0};
  if (ok) ok = cmx__tape_build_grad(&tape, standins, n, outs, nout) == CMX_OK;
  cmx__ptrmap sin = {0};
  for (int i = 0; ok && i < n; i++) ok = cmx__ptrmap_put(&sin, standins[i], i);
  if (ok) ok = backward(&tape, &sin, &cots, s);
  cmx__ptrmap_free(&sin);
  for (int i = 0; ok && i < n; i++) {
    cmx_array g = cot_get(&cots, standins[i]);
    if (!g)
      g = cmx__zeros_like(primals[i], s);
    else if (g->dtype != primals[i]->dtype)
      g = cmx__astype(g, primals[i]->dtype, s);
    ok = (vjps[i] = g) != NULL;
  }
  cmx__tape_free(&tape);
  cmx__ptrmap_free(&cots.index);
  free(cots.items);
  free(standins);
  if (!ok) {
    free(outs);
    return false;
  }
  *outs_out = outs;
  *nout_out = nout;
  return true;
}

cmx_status cmx__vjp_seeded(cmx_closure f, const cmx_array* primals, int n,
                           const cmx_array* cotangents, int ncot,
                           cmx_array** outputs, int* nout, cmx_array* vjps,
                           bool loose_seed) {
  if (outputs) *outputs = NULL;
  if (nout) *nout = 0;
  if (n < 0 || ncot < 0 || (n && (!primals || !vjps)) || (ncot && !cotangents))
    return cmx__error(CMX_ERR_VALUE, "[vjp] bad argument lists");
  for (int i = 0; i < n; i++) vjps[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  for (int i = 0; i < n; i++)
    if (!primals[i]) {
      cmx__scope_exit_n(mark, NULL, NULL, 0);
      return cmx__error(CMX_ERR_VALUE, "[vjp] primal %d is a null array", i);
    }
  for (int i = 0; i < ncot; i++)
    if (!cotangents[i]) {
      cmx__scope_exit_n(mark, NULL, NULL, 0);
      return cmx__error(CMX_ERR_VALUE, "[vjp] cotangent %d is a null array", i);
    }
  cmx__trace_begin();
  cmx_array* outs = NULL;
  int no = 0;
  bool ok =
      vjp_scoped(f, primals, n, cotangents, ncot, &outs, &no, vjps, loose_seed);
  cmx__trace_end();
  if (ok) {
    for (int i = 0; i < n; i++) cmx_array_retain(vjps[i]);
    if (outputs) {
      *outputs = cmx__export_arrays(outs, no, "vjp");
      ok = no == 0 || *outputs;
      if (ok && nout) *nout = no;
    }
    if (!ok)
      for (int i = 0; i < n; i++) cmx_array_release(vjps[i]);
  }
  free(outs);
  if (!ok)
    for (int i = 0; i < n; i++) vjps[i] = NULL;
  cmx_status st = cmx__scope_exit_n(mark, NULL, NULL, 0);
  if (!ok && st == CMX_OK) st = cmx_last_status();
  return ok ? CMX_OK : st;
}

cmx_status cmx_vjp(cmx_closure f, const cmx_array* primals, int n,
                   const cmx_array* cotangents, int ncot, cmx_array** outputs,
                   int* nout, cmx_array* vjps) {
  return cmx__vjp_seeded(f, primals, n, cotangents, ncot, outputs, nout, vjps,
                         false);
}
