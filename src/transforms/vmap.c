/* Vectorizing map: cmx_vmap. The function runs once on placeholders (the
 * mapped inputs without their mapped axis); each op on the tape is then
 * replayed on the real batched arrays by its vmap rule, which says where
 * the batch axis of each output lies. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"
#include "transforms/transforms_internal.h"

/* -1: read CMX_VMAP_FALLBACK on first use; else 0/1. */
static _Atomic int g_fallback = -1;

void cmx_set_vmap_fallback(bool on) {
  atomic_store(&g_fallback, on ? 1 : 0);
}

static bool fallback_on(void) {
  int f = atomic_load(&g_fallback);
  if (f < 0) {
    f = cmx__env_get()->vmap_fallback ? 1 : 0;
    atomic_store(&g_fallback, f);
  }
  return f == 1;
}

/* Batched values per node: the array and the axis its batch lies on (-1:
 * not batched). */
typedef struct batch_table {
  cmx__ptrmap index;
  cmx_array* arrays;
  int* axes;
  size_t n, cap;
} batch_table;

static bool batch_set(batch_table* t, cmx_array node, cmx_array a, int ax) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    cmx_array* arrays = realloc(t->arrays, cap * sizeof *arrays);
    if (arrays) t->arrays = arrays;
    int* axes = arrays ? realloc(t->axes, cap * sizeof *axes) : NULL;
    if (!arrays || !axes) {
      cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
      return false;
    }
    t->axes = axes;
    t->cap = cap;
  }
  t->arrays[t->n] = a;
  t->axes[t->n] = ax;
  return cmx__ptrmap_put(&t->index, node, (int64_t)t->n++);
}

/* The batched value of node (itself, unbatched, when it has none). */
static cmx_array batch_get(const batch_table* t, cmx_array node, int* ax) {
  int64_t i = cmx__ptrmap_get(&t->index, node);
  if (i < 0) {
    *ax = -1;
    return node;
  }
  *ax = t->axes[i];
  return t->arrays[i];
}

/* Runs op once per batch element and stacks the results on axis 0. */
static bool loop_fallback(cmx__op* op, const cmx_array* in, const int* axes,
                          int64_t B, cmx_array* out, int* out_axes,
                          cmx_stream s) {
  int nin = op->nin, nout = op->nout;
  cmx_array* per = calloc((size_t)(B * nout + nin + 1), sizeof *per);
  if (!per) {
    cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
    return false;
  }
  cmx_array* slice_in = per + B * nout;
  const int64_t** shapes = malloc((size_t)nout * sizeof *shapes);
  int* ndims = malloc((size_t)nout * sizeof *ndims);
  cmx_dtype* dts = malloc((size_t)nout * sizeof *dts);
  bool ok = shapes && ndims && dts;
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
  for (int i = 0; ok && i < nout; i++)
    cmx__op_out_desc(op, i, &shapes[i], &ndims[i], &dts[i]);
  for (int64_t b = 0; ok && b < B; b++) {
    cmx_array idx = cmx__scalar((double)b, CMX_INT32);
    for (int i = 0; ok && i < nin; i++)
      ok = (slice_in[i] =
                axes[i] < 0 ? in[i] : cmx__take(in[i], idx, &axes[i], s)) !=
           NULL;
    if (!ok) break;
    cmx_primitive_retain(op->prim);
    cmx_array* o = per + b * nout;
    ok = cmx_primitive_apply(o, nout, op->prim, slice_in, nin,
                             (const int64_t* const*)shapes, ndims,
                             dts) == CMX_OK;
    for (int i = 0; ok && i < nout; i++) cmx__own(o[i]);
  }
  cmx_array* col = ok ? malloc((size_t)B * sizeof *col + 1) : NULL;
  if (ok && !col) {
    cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
    ok = false;
  }
  for (int i = 0; ok && i < nout; i++) {
    for (int64_t b = 0; b < B; b++) col[b] = per[b * nout + i];
    ok = (out[i] = cmx__stack(col, (int)B, 0, s)) != NULL;
    out_axes[i] = 0;
  }
  free(col);
  free(shapes);
  free(ndims);
  free(dts);
  free(per);
  return ok;
}

/* The generic rule of elementwise primitives: batch axes to the front,
 * unbatched inputs broadcast, the primitive applied again. */
static bool elementwise_vmap(cmx__op* op, const cmx_array* in, const int* axes,
                             int64_t B, const cmx_array* traced, cmx_array* out,
                             int* oax, cmx_stream s) {
  int nin = op->nin, nout = op->nout;
  cmx_array* x = malloc((size_t)nin * sizeof *x + 1);
  int64_t(*shapes)[CMX_MAX_NDIM] = malloc((size_t)nout * sizeof *shapes);
  const int64_t** sp = malloc((size_t)nout * sizeof *sp);
  int* nd = malloc((size_t)nout * sizeof *nd);
  cmx_dtype* dt = malloc((size_t)nout * sizeof *dt);
  bool ok = x && shapes && sp && nd && dt;
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
  for (int i = 0; ok && i < nin; i++)
    ok = (x[i] = cmx__batch_front(in[i], axes[i], B, s)) != NULL;
  for (int i = 0; ok && i < nout; i++) {
    const int64_t* sh;
    cmx__op_out_desc(op, i, &sh, &nd[i], &dt[i]);
    if (nd[i] + 1 > CMX_MAX_NDIM) {
      cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
      ok = false;
      break;
    }
    shapes[i][0] = B;
    memcpy(shapes[i] + 1, sh, (size_t)nd[i] * sizeof(int64_t));
    nd[i] += 1;
    sp[i] = shapes[i];
    oax[i] = 0;
  }
  (void)traced;
  if (ok) {
    cmx_primitive_retain(op->prim);
    ok = cmx_primitive_apply(out, nout, op->prim, x, nin, sp, nd, dt) == CMX_OK;
    for (int i = 0; ok && i < nout; i++) cmx__own(out[i]);
  }
  free(x);
  free(shapes);
  free(sp);
  free(nd);
  free(dt);
  return ok;
}

static bool replay(cmx__tape* tape, batch_table* bt, int64_t B, cmx_stream s) {
  for (size_t k = 0; k < tape->n; k++) {
    cmx__op* op = tape->ops[k];
    const cmx_primitive_vtable* vt = op->prim->vt;
    cmx_array* in = malloc((size_t)op->nin * sizeof *in + 1);
    int* axes = malloc((size_t)op->nin * sizeof *axes + 1);
    cmx_array* out = calloc((size_t)op->nout, sizeof *out);
    int* oax = calloc((size_t)op->nout, sizeof *oax);
    bool ok = in && axes && out && oax;
    if (!ok) cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
    for (int i = 0; ok && i < op->nin; i++)
      in[i] = batch_get(bt, op->inputs[i], &axes[i]);
    cmx_array* traced = ok ? cmx__op_outputs_scoped(op) : NULL;
    ok = ok && traced;
    if (ok && vt->vmap) {
      cmx_status st =
          vt->vmap(op->prim, in, op->nin, axes, traced, out, oax, op->nout);
      for (int i = 0; i < op->nout; i++) cmx__own(out[i]);
      ok = st == CMX_OK;
      if (!ok && cmx_last_status() == CMX_OK)
        cmx__error(st, "[vmap] the rule of %s failed", vt->name);
      for (int i = 0; ok && i < op->nout; i++) {
        if (!out[i] || oax[i] < -1 || oax[i] >= out[i]->ndim) {
          cmx__error(CMX_ERR_RUNTIME,
                     "[vmap] the rule of %s gave a bad output %d", vt->name, i);
          ok = false;
        }
      }
    } else if (ok && (vt->flags & CMX_PRIM_ELEMENTWISE)) {
      ok = elementwise_vmap(op, in, axes, B, traced, out, oax, s);
    } else if (ok && fallback_on()) {
      ok = loop_fallback(op, in, axes, B, out, oax, s);
    } else if (ok) {
      cmx__error(CMX_ERR_VALUE,
                 "[vmap] Primitive %s has no vmap rule (set "
                 "CMX_VMAP_FALLBACK=1 to run it once per batch element).",
                 vt->name);
      ok = false;
    }
    for (int i = 0; ok && i < op->nout; i++) {
      cmx_array o = cmx__op_output(op, i);
      if (!o) continue;
      ok = batch_set(bt, o, out[i], oax[i]);
      cmx_array_release(o);
    }
    free(traced);
    free(in);
    free(axes);
    free(out);
    free(oax);
    if (!ok) return false;
  }
  return true;
}

/* Puts the batch of (a, ax) on axis oa of the result (broadcasting an
 * unbatched a to B). */
static cmx_array place_batch(cmx_array a, int ax, int oa, int64_t B,
                             cmx_stream s) {
  int nd = a->ndim + (ax < 0 ? 1 : 0);
  if (oa < 0) oa += nd;
  if (oa < 0 || oa >= nd)
    return CMX__FAIL(CMX_ERR_INDEX,
                     "[vmap] out_axes %d is out of bounds for an output of "
                     "dimension %d",
                     oa, nd);
  if (ax >= 0) return ax == oa ? a : cmx__moveaxis(a, ax, oa, s);
  cmx_array e = cmx__expand_dims(a, &oa, 1, s);
  if (!e) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, e->dims, (size_t)e->ndim * sizeof *shape);
  shape[oa] = B;
  return cmx__broadcast_to(e, shape, e->ndim, s);
}

static bool vmap_scoped(cmx_closure f, const cmx_array* inputs, int n,
                        const int* in_axes, const int* out_axes, int noa,
                        cmx_array** outs_out, int* nout_out) {
  cmx_stream s = CMX_STREAM_DEFAULT;
  cmx_array* args = calloc((size_t)(2 * n + 1), sizeof *args);
  if (!args) {
    cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
    return false;
  }
  cmx_array* holders = args + n;
  int nholders = 0;
  int64_t B = -1;
  batch_table bt = {0};
  bool ok = true;
  for (int i = 0; ok && i < n; i++) {
    cmx_array a = inputs[i];
    int ax = in_axes ? in_axes[i] : 0;
    if (ax == CMX_VMAP_NONE) {
      args[i] = a;
      continue;
    }
    if (ax < 0) ax += a->ndim;
    if (ax < 0 || ax >= a->ndim) {
      cmx__error(CMX_ERR_INDEX,
                 "[vmap] Invalid in_axes %d for an input of dimension %d.",
                 in_axes ? in_axes[i] : 0, a->ndim);
      ok = false;
      break;
    }
    if (B >= 0 && a->dims[ax] != B) {
      cmx__error(CMX_ERR_VALUE,
                 "[vmap] Inconsistent axis sizes: %lld and %lld.", (long long)B,
                 (long long)a->dims[ax]);
      ok = false;
      break;
    }
    B = a->dims[ax];
    int64_t shape[CMX_MAX_NDIM];
    for (int d = 0, k = 0; d < a->ndim; d++)
      if (d != ax) shape[k++] = a->dims[d];
    args[i] = cmx__placeholder(shape, a->ndim - 1, a->dtype);
    ok = args[i] && batch_set(&bt, args[i], a, ax);
    holders[nholders++] = args[i];
  }
  if (ok && B < 0) {
    cmx__error(CMX_ERR_VALUE,
               "[vmap] At least one of in_axes must be non-None.");
    ok = false;
  }
  int nout = 0;
  cmx_array* outs = ok ? cmx__call_scoped(f, args, n, &nout, "vmap") : NULL;
  ok = outs != NULL;
  if (ok && noa > 1 && noa != nout) {
    cmx__error(CMX_ERR_VALUE,
               "[vmap] out_axes has %d entries but the function returned %d "
               "outputs.",
               noa, nout);
    ok = false;
  }
  cmx__tape tape = {0};
  if (ok) ok = cmx__tape_build(&tape, holders, nholders, outs, nout) == CMX_OK;
  if (ok) ok = replay(&tape, &bt, B, s);
  for (int j = 0; ok && j < nout; j++) {
    int ax;
    cmx_array a = batch_get(&bt, outs[j], &ax);
    if (noa == 0) { /* as computed: batch first, or no batch axis */
      ok = (outs[j] = ax <= 0 ? a : cmx__moveaxis(a, ax, 0, s)) != NULL;
      continue;
    }
    int oa = out_axes[noa == 1 ? 0 : j];
    if (oa == CMX_VMAP_NONE) {
      if (ax >= 0) {
        cmx__error(CMX_ERR_VALUE,
                   "[vmap] out_axes is None for output %d, which depends on "
                   "a vectorized input.",
                   j);
        ok = false;
        break;
      }
      outs[j] = a;
      continue;
    }
    ok = (outs[j] = place_batch(a, ax, oa, B, s)) != NULL;
  }
  cmx__tape_free(&tape);
  cmx__ptrmap_free(&bt.index);
  free(bt.arrays);
  free(bt.axes);
  free(args);
  if (!ok) {
    free(outs);
    return false;
  }
  *outs_out = outs;
  *nout_out = nout;
  return true;
}

cmx_status cmx_vmap(cmx_closure f, const cmx_array* inputs, int n,
                    const int* in_axes, const int* out_axes, int nout_axes,
                    cmx_array** outputs, int* nout) {
  if (outputs) *outputs = NULL;
  if (nout) *nout = 0;
  if (!outputs || !nout || n < 0 || (n && !inputs) || nout_axes < 0 ||
      (nout_axes && !out_axes))
    return cmx__error(CMX_ERR_VALUE, "[vmap] bad argument lists");
  for (int i = 0; i < n; i++)
    if (!inputs[i])
      return cmx__error(CMX_ERR_VALUE, "[vmap] input %d is a null array", i);
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx__trace_begin();
  cmx_array* outs = NULL;
  int no = 0;
  bool ok = vmap_scoped(f, inputs, n, in_axes, out_axes, nout_axes, &outs, &no);
  cmx__trace_end();
  if (ok && no) {
    *outputs = cmx__export_arrays(outs, no, "vmap");
    ok = *outputs != NULL;
  }
  if (ok) *nout = no;
  free(outs);
  cmx_status st = cmx__scope_exit_n(mark, NULL, NULL, 0);
  if (!ok && st == CMX_OK) st = cmx_last_status();
  return ok ? CMX_OK : st;
}
