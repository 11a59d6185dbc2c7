/* Forward mode: cmx_jvp. The function runs on stand-ins carrying the
 * given tangents; each op on the tape, in order, maps its inputs' tangents
 * to its outputs' with its jvp rule. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/transforms_internal.h"

typedef struct tan_table {
  cmx__ptrmap index;
  cmx_array* items;
  size_t n, cap;
} tan_table;

static cmx_array tan_get(tan_table* t, cmx_array node) {
  int64_t i = cmx__ptrmap_get(&t->index, node);
  return i < 0 ? NULL : t->items[i];
}

static bool tan_set(tan_table* t, cmx_array node, cmx_array v) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    cmx_array* items = realloc(t->items, cap * sizeof *items);
    if (!items) {
      cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
      return false;
    }
    t->items = items;
    t->cap = cap;
  }
  t->items[t->n] = v;
  return cmx__ptrmap_put(&t->index, node, (int64_t)t->n++);
}

static bool forward(cmx__tape* tape, tan_table* tans) {
  for (size_t k = 0; k < tape->n; k++) {
    cmx__op* op = tape->ops[k];
    int* args = malloc((size_t)op->nin * sizeof *args + 1);
    cmx_array* tin = malloc((size_t)op->nin * sizeof *tin + 1);
    cmx_array* tout = calloc((size_t)op->nout, sizeof *tout);
    bool ok = args && tin && tout;
    if (!ok) cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
    int nargs = 0, nvis = cmx__op_visible_inputs(op);
    for (int i = 0; ok && i < nvis; i++) {
      cmx_array t = tan_get(tans, op->inputs[i]);
      if (!t) continue;
      args[nargs] = i;
      tin[nargs++] = t;
    }
    if (ok && nargs) ok = cmx__rule_jvp(op, tin, args, nargs, tout) == CMX_OK;
    for (int i = 0; ok && nargs && i < op->nout; i++) {
      if (!tout[i]) continue;
      cmx_array o = cmx__op_output(op, i);
      if (!o) continue;
      if (tout[i]->ndim != o->ndim ||
          memcmp(tout[i]->dims, o->dims, (size_t)o->ndim * 8)) {
        char a[96], b[96];
        cmx__error(CMX_ERR_RUNTIME,
                   "[jvp] the rule of %s gave a tangent of shape %s for an "
                   "output of shape %s",
                   op->prim->vt->name,
                   cmx__shape_str(tout[i]->dims, tout[i]->ndim, a, sizeof a),
                   cmx__shape_str(o->dims, o->ndim, b, sizeof b));
        ok = false;
      } else {
        ok = tan_set(tans, o, tout[i]);
      }
      cmx_array_release(o);
    }
    free(args);
    free(tin);
    free(tout);
    if (!ok) return false;
  }
  return true;
}

static bool jvp_scoped(cmx_closure f, const cmx_array* primals, int n,
                       const cmx_array* tangents, cmx_array** outs_out,
                       cmx_array** jvps_out, int* nout_out) {
  cmx_stream s = CMX_STREAM_DEFAULT;
  cmx_array* standins = calloc((size_t)(n ? n : 1), sizeof *standins);
  if (!standins) {
    cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
    return false;
  }
  tan_table tans = {0};
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    cmx_array p = primals[i], t = tangents[i];
    if (t->ndim != p->ndim || memcmp(t->dims, p->dims, (size_t)p->ndim * 8)) {
      char a[96], b[96];
      cmx__error(CMX_ERR_VALUE,
                 "[jvp] Invalid tangent shape %s for primal %d of shape %s.",
                 cmx__shape_str(t->dims, t->ndim, a, sizeof a), i,
                 cmx__shape_str(p->dims, p->ndim, b, sizeof b));
      ok = false;
      break;
    }
    ok = (standins[i] = cmx__tracer_of(p, s)) != NULL;
    if (ok && t->dtype != p->dtype) t = cmx__astype(t, p->dtype, s);
    ok = ok && t && tan_set(&tans, standins[i], t);
  }
  int nout = 0;
  cmx_array* outs = ok ? cmx__call_scoped(f, standins, n, &nout, "jvp") : NULL;
  ok = outs != NULL;
  cmx__tape tape = {0};
  if (ok) ok = cmx__tape_build_grad(&tape, standins, n, outs, nout) == CMX_OK;
  if (ok) ok = forward(&tape, &tans);
  cmx_array* jvps = NULL;
  if (ok) {
    jvps = malloc((size_t)(nout ? nout : 1) * sizeof *jvps);
    if (!jvps) {
      cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
      ok = false;
    }
  }
  /* An output without a tangent gets zeros. A boolean one (a predicate's)
   * gets them in the first float tangent's dtype, as MLX's jvp gives. */
  cmx_dtype zdt = CMX_BOOL;
  for (int i = n; i-- > 0;)
    if (cmx_dtype_is_inexact(tangents[i]->dtype)) zdt = tangents[i]->dtype;
  for (int j = 0; ok && j < nout; j++) {
    cmx_array t = tan_get(&tans, outs[j]);
    if (!t && outs[j]->dtype == CMX_BOOL)
      t = cmx__zeros(outs[j]->dims, outs[j]->ndim, zdt, s);
    else if (!t)
      t = cmx__zeros_like(outs[j], s);
    ok = (jvps[j] = t) != NULL;
  }
  cmx__tape_free(&tape);
  cmx__ptrmap_free(&tans.index);
  free(tans.items);
  free(standins);
  if (!ok) {
    free(outs);
    free(jvps);
    return false;
  }
  *outs_out = outs;
  *jvps_out = jvps;
  *nout_out = nout;
  return true;
}

cmx_status cmx_jvp(cmx_closure f, const cmx_array* primals, int n,
                   const cmx_array* tangents, cmx_array** outputs,
                   cmx_array** jvps, int* nout) {
  if (outputs) *outputs = NULL;
  if (jvps) *jvps = NULL;
  if (nout) *nout = 0;
  if (!jvps || !nout || n < 0 || (n && (!primals || !tangents)))
    return cmx__error(CMX_ERR_VALUE, "[jvp] bad argument lists");
  for (int i = 0; i < n; i++)
    if (!primals[i] || !tangents[i])
      return cmx__error(CMX_ERR_VALUE, "[jvp] %s %d is a null array",
                        primals[i] ? "tangent" : "primal", i);
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx__trace_begin();
  cmx_array *outs = NULL, *tans = NULL;
  int no = 0;
  bool ok = jvp_scoped(f, primals, n, tangents, &outs, &tans, &no);
  cmx__trace_end();
  if (ok && no) {
    *jvps = cmx__export_arrays(tans, no, "jvp");
    ok = *jvps != NULL;
    if (ok && outputs) {
      *outputs = cmx__export_arrays(outs, no, "jvp");
      if (!*outputs) {
        cmx_arrays_free(*jvps, no);
        *jvps = NULL;
        ok = false;
      }
    }
  }
  if (ok) *nout = no;
  free(outs);
  free(tans);
  cmx_status st = cmx__scope_exit_n(mark, NULL, NULL, 0);
  if (!ok && st == CMX_OK) st = cmx_last_status();
  return ok ? CMX_OK : st;
}
