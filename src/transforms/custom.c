/* Custom functions and checkpoints: the CustomTransforms primitive.
 *
 * cmx_custom_function_apply runs fun on the inputs and wraps its outputs in
 * one CustomTransforms node whose inputs are the n primals followed by
 * fun's outputs. Its kernel just makes each output a view of fun's output.
 * The transforms see only the first n inputs (cmx__op_visible_inputs), so
 * they never walk into fun's graph: the primitive's rules call the user's
 * vjp/jvp/vmap closures, or transform fun itself where none was given.
 * A checkpoint is a custom function whose vjp recomputes fun. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/shapes.h"
#include "transforms/transforms_internal.h"

static void state_release(cmx__custom_state* st) {
  if (atomic_fetch_sub(&st->refcount, 1) != 1) return;
  if (st->cf.release)
    st->cf.release(st->cf.fun.payload, st->cf.vjp.payload, st->cf.jvp.payload,
                   st->cf.vmap.payload);
  if (st->release_one) st->release_one(st->cf.fun.payload);
  free(st);
}

static void custom_destroy(void* params) {
  state_release(((cmx__custom_params*)params)->state);
}

static cmx__custom_state* state_of(const cmx_primitive* p) {
  return ((const cmx__custom_params*)cmx_primitive_params(p))->state;
}

int cmx__op_visible_inputs(const cmx__op* op) {
  if (op->prim->vt == &cmx__vt_CustomTransforms) return state_of(op->prim)->nin;
  return op->nin;
}

/* ---- rules ---- */

static cmx_status custom_vjp(const cmx_primitive* p, const cmx_array* primals,
                             int nin, const cmx_array* cotangents, int nout,
                             const int* argnums, int nargs,
                             const cmx_array* outputs, cmx_array* out) {
  cmx__custom_state* st = state_of(p);
  int n = st->nin;
  (void)nin;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  cmx_array* vjps = calloc((size_t)(n ? n : 1), sizeof *vjps);
  if (!vjps)
    return cmx__error(CMX_ERR_MEMORY, "[custom_function] out of memory");
  cmx_status s;
  if (st->cf.vjp.fn && !st->checkpoint) {
    cmx_array* args = malloc((size_t)(n + 2 * nout) * sizeof *args);
    if (!args) {
      free(vjps);
      return cmx__error(CMX_ERR_MEMORY, "[custom_function] out of memory");
    }
    memcpy(args, primals, (size_t)n * sizeof *args);
    memcpy(args + n, cotangents, (size_t)nout * sizeof *args);
    for (int i = 0; i < nout; i++)
      args[n + nout + i] = outputs[i] ? outputs[i] : primals[n + i];
    cmx_array* res = NULL;
    int nres = 0;
    s = cmx_closure_call(st->cf.vjp, args, n + 2 * nout, &res, &nres);
    free(args);
    if (s == CMX_OK && nres != n) {
      cmx_arrays_free(res, nres);
      s = cmx__error(CMX_ERR_VALUE,
                     "[custom_function] The vjp function returned %d arrays "
                     "for %d primals.",
                     nres, n);
    } else if (s == CMX_OK) {
      memcpy(vjps, res, (size_t)n * sizeof *vjps);
      free(res);
    }
  } else {
    /* Differentiate fun itself; a checkpoint recomputes it only once its
     * forward outputs exist (depends), so the recomputation happens in the
     * backward pass. */
    const cmx_array* prims = primals;
    cmx_array* dep = NULL;
    if (st->checkpoint) {
      dep = calloc((size_t)(n ? n : 1), sizeof *dep);
      s = dep ? cmx_depends(dep, primals, n, primals + n, nout,
                            CMX_STREAM_DEFAULT)
              : cmx__error(CMX_ERR_MEMORY, "[checkpoint] out of memory");
      prims = dep;
    } else {
      s = CMX_OK;
    }
    if (s == CMX_OK)
      s = cmx_vjp(st->cf.fun, prims, n, cotangents, nout, NULL, NULL, vjps);
    if (dep) cmx_arrays_free(dep, n);
  }
  if (s == CMX_OK)
    for (int k = 0; k < nargs; k++)
      if (argnums[k] < n) out[k] = cmx_array_retain(vjps[argnums[k]]);
  for (int i = 0; i < n; i++) cmx_array_release(vjps[i]);
  free(vjps);
  return s;
}

/* The argnums of the custom jvp rule running on this thread (nested
 * rules save and restore them). */
static _Thread_local const int* tl_argnums;
static _Thread_local int tl_nargnums;

int cmx_custom_jvp_argnums(int* argnums, int max) {
  int n = tl_nargnums < max ? tl_nargnums : max;
  if (argnums && n > 0)
    memcpy(argnums, tl_argnums, (size_t)n * sizeof *argnums);
  return tl_nargnums;
}

static cmx_status custom_jvp(const cmx_primitive* p, const cmx_array* primals,
                             int nin, const cmx_array* tangents,
                             const int* argnums, int nargs,
                             const cmx_array* outputs, cmx_array* out,
                             int nout) {
  cmx__custom_state* st = state_of(p);
  int n = st->nin;
  (void)nin;
  (void)outputs;
  cmx_array* args = calloc((size_t)(2 * n + 1), sizeof *args);
  if (!args)
    return cmx__error(CMX_ERR_MEMORY, "[custom_function] out of memory");
  memcpy(args, primals, (size_t)n * sizeof *args);
  cmx_status s = CMX_OK;
  for (int i = 0; i < n && s == CMX_OK; i++) {
    cmx_array t = NULL;
    for (int k = 0; k < nargs; k++)
      if (argnums[k] == i) t = cmx_array_retain(tangents[k]);
    if (!t) s = cmx_zeros_like(&t, primals[i], CMX_STREAM_DEFAULT);
    args[n + i] = t;
  }
  cmx_array *res = NULL, *outs = NULL;
  int nres = 0;
  if (s == CMX_OK && st->cf.jvp.fn) {
    const int* saved = tl_argnums;
    int saved_n = tl_nargnums;
    tl_argnums = argnums;
    tl_nargnums = nargs;
    s = cmx_closure_call(st->cf.jvp, args, 2 * n, &res, &nres);
    tl_argnums = saved;
    tl_nargnums = saved_n;
    if (s == CMX_OK && nres != nout) {
      cmx_arrays_free(res, nres);
      res = NULL;
      s = cmx__error(CMX_ERR_VALUE,
                     "[custom_function] The jvp function returned %d arrays "
                     "for %d outputs.",
                     nres, nout);
    }
  } else if (s == CMX_OK) {
    s = cmx_jvp(st->cf.fun, primals, n, args + n, &outs, &res, &nres);
    cmx_arrays_free(outs, nres);
  }
  if (s == CMX_OK)
    for (int i = 0; i < nout; i++) out[i] = res[i];
  free(res);
  for (int i = n; i < 2 * n; i++) cmx_array_release(args[i]);
  free(args);
  return s;
}

static _Thread_local int* tl_axes;
static _Thread_local int tl_naxes;

int cmx_custom_vmap_axes(int* axes, int max) {
  int n = tl_naxes < max ? tl_naxes : max;
  if (axes && n > 0) memcpy(axes, tl_axes, (size_t)n * sizeof *axes);
  return tl_naxes;
}

static cmx_status custom_vmap(const cmx_primitive* p, const cmx_array* inputs,
                              int nin, const int* axes,
                              const cmx_array* outputs, cmx_array* out,
                              int* out_axes, int nout) {
  cmx__custom_state* st = state_of(p);
  int n = st->nin;
  (void)nin;
  (void)outputs;
  int* ax = malloc((size_t)(n ? n : 1) * sizeof *ax);
  if (!ax) return cmx__error(CMX_ERR_MEMORY, "[custom_function] out of memory");
  for (int i = 0; i < n; i++) ax[i] = axes[i] < 0 ? CMX_VMAP_NONE : axes[i];
  cmx_array* res = NULL;
  int nres = 0;
  cmx_status s;
  if (st->cf.vmap.fn) {
    int* saved = tl_axes;
    int saved_n = tl_naxes;
    tl_axes = ax;
    tl_naxes = n;
    s = cmx_closure_call(st->cf.vmap, inputs, n, &res, &nres);
    tl_axes = saved;
    tl_naxes = saved_n;
    if (s == CMX_OK && nres != 2 * nout) {
      cmx_arrays_free(res, nres);
      res = NULL;
      s = cmx__error(CMX_ERR_VALUE,
                     "[custom_function] The vmap function must return the %d "
                     "outputs and their %d axes; it returned %d arrays.",
                     nout, nout, nres);
    }
    for (int i = 0; s == CMX_OK && i < nout; i++) {
      int64_t a = 0;
      s = cmx_array_item_int64(res[nout + i], &a);
      if (s == CMX_OK && (a < -1 || a >= res[i]->ndim))
        s = cmx__error(CMX_ERR_VALUE,
                       "[custom_function] The vmap function gave axis %lld "
                       "for output %d of dimension %d.",
                       (long long)a, i, res[i]->ndim);
      out_axes[i] = (int)a;
    }
    if (s == CMX_OK) {
      for (int i = 0; i < nout; i++) {
        out[i] = res[i];
        cmx_array_release(res[nout + i]);
      }
      free(res);
      res = NULL;
    }
    cmx_arrays_free(res, res ? nres : 0);
  } else {
    int zero = 0;
    s = cmx_vmap(st->cf.fun, inputs, n, ax, &zero, 1, &res, &nres);
    if (s == CMX_OK) {
      for (int i = 0; i < nout; i++) {
        out[i] = res[i];
        out_axes[i] = 0;
      }
      free(res);
    }
  }
  free(ax);
  return s;
}

/* Output i has the shape of fun's output i (input nin - nout + i). */
static cmx_status custom_shapes(const cmx_primitive* p, const cmx_array* in,
                                int nin, cmx_shape* out, int nout) {
  if (nout > nin) return cmx__shape_fail(p, "more outputs than inputs");
  for (int i = 0; i < nout; i++) cmx__shape_of(&out[i], in[nin - nout + i]);
  return CMX_OK;
}

/* Two nodes are equal only when they wrap the same custom function call
 * (the same state: the parameters hold a pointer). */
static bool custom_equal(const cmx_primitive* a, const cmx_primitive* b) {
  return state_of(a) == state_of(b);
}
static uint64_t custom_hash(const cmx_primitive* p) {
  uintptr_t st = (uintptr_t)state_of(p);
  return cmx__hash_bytes(cmx__hash_start(p), &st, sizeof st);
}

CMX__VTABLE(CustomTransforms, .vjp = custom_vjp, .jvp = custom_jvp,
            .vmap = custom_vmap, .destroy = custom_destroy,
            .output_shapes = custom_shapes, .equal = custom_equal,
            .hash = custom_hash);

/* ---- entry points ---- */

static cmx_status apply_custom(cmx__custom_state* st, const cmx_array* inputs,
                               int n, cmx_array** outputs, int* nout) {
  cmx_array* fo = NULL;
  int nfo = 0;
  cmx_status s = cmx_closure_call(st->cf.fun, inputs, n, &fo, &nfo);
  if (s != CMX_OK) {
    state_release(st);
    return s;
  }
  if (nfo == 0) {
    state_release(st);
    return cmx__error(CMX_ERR_VALUE,
                      "[custom_function] The function returned no arrays.");
  }
  st->nin = n;
  st->nout = nfo;
  cmx_array* all = malloc((size_t)(n + nfo) * sizeof *all);
  const int64_t** shapes = malloc((size_t)nfo * sizeof *shapes);
  int* ndims = malloc((size_t)nfo * sizeof *ndims);
  cmx_dtype* dts = malloc((size_t)nfo * sizeof *dts);
  cmx_array* outs = calloc((size_t)nfo, sizeof *outs);
  cmx_primitive* p = NULL;
  if (all && shapes && ndims && dts && outs) {
    memcpy(all, inputs, (size_t)n * sizeof *all);
    memcpy(all + n, fo, (size_t)nfo * sizeof *all);
    for (int i = 0; i < nfo; i++) {
      shapes[i] = fo[i]->dims;
      ndims[i] = fo[i]->ndim;
      dts[i] = fo[i]->dtype;
    }
    cmx__custom_params params = {st};
    p = cmx_primitive_new(&cmx__vt_CustomTransforms, &params, sizeof params,
                          CMX_STREAM_DEFAULT);
    if (p) {
      st = NULL; /* the primitive owns it now */
      s = cmx_primitive_apply(outs, nfo, p, all, n + nfo, shapes, ndims, dts);
    } else {
      s = cmx_last_status();
    }
  } else {
    s = cmx__error(CMX_ERR_MEMORY, "[custom_function] out of host memory");
  }
  if (st) state_release(st);
  free(all);
  free(shapes);
  free(ndims);
  free(dts);
  cmx_arrays_free(fo, nfo);
  if (s != CMX_OK) {
    free(outs);
    return s;
  }
  *outputs = outs;
  *nout = nfo;
  return CMX_OK;
}

static cmx_status check_inputs(const char* op, const cmx_array* inputs, int n,
                               cmx_array** outputs, int* nout) {
  if (!outputs || !nout)
    return cmx__error(CMX_ERR_VALUE, "[%s] output pointer is NULL", op);
  *outputs = NULL;
  *nout = 0;
  if (n < 0 || (n && !inputs))
    return cmx__error(CMX_ERR_VALUE, "[%s] bad input list", op);
  for (int i = 0; i < n; i++)
    if (!inputs[i])
      return cmx__error(CMX_ERR_VALUE, "[%s] input %d is a null array", op, i);
  return CMX_OK;
}

cmx_status cmx_custom_function_apply(const cmx_custom_function* cf,
                                     const cmx_array* inputs, int n,
                                     cmx_array** outputs, int* nout) {
  cmx_status s = check_inputs("custom_function", inputs, n, outputs, nout);
  if (s == CMX_OK && (!cf || !cf->fun.fn))
    s = cmx__error(CMX_ERR_VALUE, "[custom_function] function is NULL");
  cmx__custom_state* st = s == CMX_OK ? calloc(1, sizeof *st) : NULL;
  if (s == CMX_OK && !st)
    s = cmx__error(CMX_ERR_MEMORY, "[custom_function] out of memory");
  if (s != CMX_OK) {
    if (cf && cf->release)
      cf->release(cf->fun.payload, cf->vjp.payload, cf->jvp.payload,
                  cf->vmap.payload);
    return s;
  }
  atomic_init(&st->refcount, 1);
  st->cf = *cf;
  return apply_custom(st, inputs, n, outputs, nout);
}

cmx_status cmx_checkpoint_apply(cmx_closure f, void (*release)(void*),
                                const cmx_array* inputs, int n,
                                cmx_array** outputs, int* nout) {
  cmx_status s = check_inputs("checkpoint", inputs, n, outputs, nout);
  if (s == CMX_OK && !f.fn)
    s = cmx__error(CMX_ERR_VALUE, "[checkpoint] function is NULL");
  cmx__custom_state* st = s == CMX_OK ? calloc(1, sizeof *st) : NULL;
  if (s == CMX_OK && !st)
    s = cmx__error(CMX_ERR_MEMORY, "[checkpoint] out of memory");
  if (s != CMX_OK) {
    if (release) release(f.payload);
    return s;
  }
  atomic_init(&st->refcount, 1);
  st->cf.fun = f;
  st->checkpoint = true;
  st->release_one = release;
  return apply_custom(st, inputs, n, outputs, nout);
}
