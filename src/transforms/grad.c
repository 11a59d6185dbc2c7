/* cmx_value_and_grad: a vjp of the function restricted to the argnums
 * inputs, seeded with a cotangent of one for the (scalar) first output;
 * the other outputs are auxiliary and pass through stop_gradient. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/transforms_internal.h"

typedef struct grad_payload {
  cmx_closure f;
  const cmx_array* inputs;
  int n;
  const int* argnums;
  int nargs;
} grad_payload;

/* f with the argnums inputs replaced by `in`; aux outputs stopped. */
static cmx_status restricted(void* payload, const cmx_array* in, int nin,
                             cmx_array** outputs, int* nout) {
  grad_payload* g = payload;
  (void)nin;
  cmx_array* full = malloc((size_t)(g->n ? g->n : 1) * sizeof *full);
  if (!full) return cmx__error(CMX_ERR_MEMORY, "[grad] out of host memory");
  memcpy(full, g->inputs, (size_t)g->n * sizeof *full);
  for (int k = 0; k < g->nargs; k++) full[g->argnums[k]] = in[k];
  cmx_status st = cmx_closure_call(g->f, full, g->n, outputs, nout);
  free(full);
  if (st != CMX_OK) return st;
  if (*nout < 1) {
    cmx_arrays_free(*outputs, *nout);
    *outputs = NULL;
    *nout = 0;
    return cmx__error(CMX_ERR_VALUE,
                      "[grad] The function whose gradient is computed returned "
                      "no arrays.");
  }
  if ((*outputs)[0]->size != 1) {
    char buf[96];
    cmx_array o = (*outputs)[0];
    cmx__shape_str(o->dims, o->ndim, buf, sizeof buf);
    cmx_arrays_free(*outputs, *nout);
    *outputs = NULL;
    *nout = 0;
    return cmx__error(CMX_ERR_VALUE,
                      "[grad] The return value of the function whose gradient "
                      "we want to compute should be a scalar array; but an "
                      "array of shape %s was returned.",
                      buf);
  }
  for (int i = 1; i < *nout; i++) {
    cmx_array sg = NULL;
    if (cmx_stop_gradient(&sg, (*outputs)[i], CMX_STREAM_DEFAULT) != CMX_OK) {
      cmx_arrays_free(*outputs, *nout);
      *outputs = NULL;
      *nout = 0;
      return cmx_last_status();
    }
    cmx_array_release((*outputs)[i]);
    (*outputs)[i] = sg;
  }
  return CMX_OK;
}

cmx_status cmx_value_and_grad(cmx_closure f, const cmx_array* inputs, int n,
                              const int* argnums, int nargs,
                              cmx_array** outputs, int* nout,
                              cmx_array* grads) {
  if (outputs) *outputs = NULL;
  if (nout) *nout = 0;
  if (n < 0 || nargs < 0 || (n && !inputs) || (nargs && (!argnums || !grads)))
    return cmx__error(CMX_ERR_VALUE, "[grad] bad argument lists");
  if (nargs == 0)
    return cmx__error(CMX_ERR_VALUE,
                      "[grad] Must specify at least one argument.");
  /* Repeats found with a table, not by pairs (grad of 100,000 inputs). */
  bool* seen = calloc((size_t)(n ? n : 1), sizeof *seen);
  if (!seen) return cmx__error(CMX_ERR_MEMORY, "[grad] out of host memory");
  for (int k = 0; k < nargs; k++) grads[k] = NULL;
  for (int k = 0; k < nargs; k++) {
    cmx_status bad = CMX_OK;
    if (argnums[k] < 0 || argnums[k] >= n)
      bad = cmx__error(CMX_ERR_VALUE,
                       "[grad] Invalid argument number %d for a function of "
                       "%d inputs.",
                       argnums[k], n);
    else if (seen[argnums[k]])
      bad = cmx__error(CMX_ERR_VALUE,
                       "[grad] Repeat argument number %d in argnums.",
                       argnums[k]);
    if (bad != CMX_OK) {
      free(seen);
      return bad;
    }
    seen[argnums[k]] = true;
  }
  free(seen);
  cmx_array* prim = malloc((size_t)nargs * sizeof *prim);
  if (!prim) return cmx__error(CMX_ERR_MEMORY, "[grad] out of host memory");
  for (int k = 0; k < nargs; k++) prim[k] = inputs[argnums[k]];
  grad_payload g = {f, inputs, n, argnums, nargs};
  cmx_closure r = {restricted, &g};
  /* The cotangent of the loss: one, in the loss's dtype (the vjp casts it
   * if the dtype differs; a float32 one is exact in every dtype). */
  cmx_array one = NULL;
  cmx_status st = cmx_array_from_double(&one, 1.0, CMX_FLOAT32);
  cmx_array* outs = NULL;
  int no = 0;
  if (st == CMX_OK) /* a loss of shape (1,) gets a seed of its shape */
    st = cmx__vjp_seeded(r, prim, nargs, &one, 1, &outs, &no, grads, true);
  cmx_array_release(one);
  free(prim);
  if (st != CMX_OK) return st;
  if (outputs) {
    *outputs = outs;
    if (nout) *nout = no;
  } else {
    cmx_arrays_free(outs, no);
  }
  return CMX_OK;
}
