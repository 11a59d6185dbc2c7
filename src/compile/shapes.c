/* Output shapes for a shapeless replay.
 *
 * An op whose inputs kept their traced shapes keeps its traced output
 * shapes. Otherwise rules cover Broadcast (dims that were broadcast keep
 * their traced extent, the others follow the input), Reshape made by
 * flatten (the flattened axes of the new shape) and plain Reshape (its
 * traced shape, which must still hold the input's size); the primitive's
 * output_shapes slot decides for the others, except those whose
 * parameters hold positions or sizes of the traced shapes (Slice,
 * AsStrided, SliceUpdate, Gather): there a new input shape is an error
 * naming the primitive, never a silently wrong shape.
 */
#include <string.h>

#include "compile/compile_internal.h"
#include "ops/ops_internal.h"
#include "primitives/registry.h"
#include "primitives/shape.h"

static bool same_shape(const int64_t* a, int na, const int64_t* b, int nb) {
  return na == nb && (na == 0 || !memcmp(a, b, (size_t)na * sizeof *a));
}

/* The common shape of inputs (broadcast), into out. */
static cmx_status broadcast_all(const char* name, const cmx_array* in, int n,
                                cmx_shape* out) {
  out->ndim = 0;
  for (int i = 0; i < n; i++) {
    int64_t tmp[CMX_MAX_NDIM];
    int nd;
    if (!cmx__broadcast_shape(name, out->dims, out->ndim, in[i]->dims,
                              in[i]->ndim, tmp, &nd))
      return cmx_last_status();
    memcpy(out->dims, tmp, (size_t)nd * sizeof *tmp);
    out->ndim = nd;
  }
  return CMX_OK;
}

static cmx_status reshape_shape(const cmx__cgraph* g, const cmx__cop* op,
                                cmx_array a, cmx_shape* out) {
  const cmx__cval* traced = &g->vals[op->out[0]];
  if (cmx_primitive_params_size(op->prim) == sizeof(cmx__flatten_params)) {
    const cmx__flatten_params* q = cmx_primitive_params(op->prim);
    if (q->end_axis < a->ndim) {
      int n = 0;
      for (int d = 0; d < q->start_axis; d++) out->dims[n++] = a->dims[d];
      int64_t m = 1;
      for (int d = q->start_axis; d <= q->end_axis; d++) m *= a->dims[d];
      out->dims[n++] = m;
      for (int d = q->end_axis + 1; d < a->ndim; d++)
        out->dims[n++] = a->dims[d];
      out->ndim = n;
      return CMX_OK;
    }
  }
  int64_t size = 1;
  for (int d = 0; d < traced->ndim; d++) size *= traced->shape[d];
  if (size != a->size) {
    char sb[512];
    return cmx__error(
        CMX_ERR_VALUE,
        "[reshape] Cannot reshape array of size %lld into shape %s.",
        (long long)a->size,
        cmx__shape_str(traced->shape, traced->ndim, sb, sizeof sb));
  }
  out->ndim = traced->ndim;
  memcpy(out->dims, traced->shape, (size_t)traced->ndim * sizeof(int64_t));
  return CMX_OK;
}

/* Broadcast of a: dims the trace broadcast (1 -> n) keep n, the others
 * follow a; a rank change is not derivable. */
static cmx_status broadcast_shape(const cmx__cgraph* g, const cmx__cop* op,
                                  cmx_array a, cmx_shape* out) {
  const cmx__cval* src = &g->vals[op->in[0]];
  const cmx__cval* dst = &g->vals[op->out[0]];
  if (src->ndim != a->ndim) return CMX_ERR_NOT_IMPLEMENTED;
  int lead = dst->ndim - src->ndim;
  out->ndim = dst->ndim;
  for (int d = 0; d < dst->ndim; d++) {
    int s = d - lead;
    bool was_broadcast = s < 0 || src->shape[s] != dst->shape[d];
    out->dims[d] = was_broadcast ? dst->shape[d] : a->dims[s];
    if (s >= 0 && was_broadcast && a->dims[s] != 1) {
      char sa[512], sb[512];
      return cmx__error(CMX_ERR_VALUE,
                        "[broadcast_to] shapes %s and %s cannot be broadcast.",
                        cmx__shape_str(a->dims, a->ndim, sa, sizeof sa),
                        cmx__shape_str(dst->shape, dst->ndim, sb, sizeof sb));
    }
  }
  return CMX_OK;
}

cmx_status cmx__derive_shapes(const cmx__cgraph* g, const cmx__cop* op,
                              const cmx_array* inputs, cmx_shape* out) {
  bool changed = false;
  for (int k = 0; k < op->nin && !changed; k++) {
    const cmx__cval* v = &g->vals[op->in[k]];
    changed = !same_shape(v->shape, v->ndim, inputs[k]->dims, inputs[k]->ndim);
  }
  const cmx_primitive_vtable* vt = cmx_primitive_vt(op->prim);
  if (!changed) {
    for (int k = 0; k < op->nout; k++) {
      const cmx__cval* v = &g->vals[op->out[k]];
      out[k].ndim = v->ndim;
      memcpy(out[k].dims, v->shape, (size_t)v->ndim * sizeof(int64_t));
    }
    return CMX_OK;
  }
  /* Reshape and Broadcast hold their traced output shape: the rules
   * above derive it again. Slices, strided views, slice updates and
   * gathers hold starts or sizes taken from the traced shapes, so their
   * output_shapes slots would give a shape (or a window) fixed when
   * traced: an error, as in MLX, rather than a wrong answer. */
  cmx_status st = CMX_ERR_NOT_IMPLEMENTED;
  if (vt == &cmx__vt_Reshape) {
    st = reshape_shape(g, op, inputs[0], out);
  } else if (vt == &cmx__vt_Broadcast) {
    st = broadcast_shape(g, op, inputs[0], out);
  } else if (vt == &cmx__vt_Slice || vt == &cmx__vt_AsStrided ||
             vt == &cmx__vt_SliceUpdate || vt == &cmx__vt_Gather) {
    st = CMX_ERR_NOT_IMPLEMENTED;
  } else if (vt->output_shapes) {
    return vt->output_shapes(op->prim, inputs, op->nin, out, op->nout);
  } else if ((vt->flags & CMX_PRIM_ELEMENTWISE) && op->nin > 0) {
    st = broadcast_all(vt->name, inputs, op->nin, &out[0]);
    for (int k = 1; st == CMX_OK && k < op->nout; k++) out[k] = out[0];
  }
  if (st != CMX_ERR_NOT_IMPLEMENTED) return st;
  return cmx__error(CMX_ERR_VALUE,
                    "[compile] Cannot compile primitive %s with shapeless "
                    "enabled: its output shape was fixed when traced and an "
                    "input's shape changed.",
                    vt->name);
}

/* ---------------- deferred broadcasts ---------------- */

bool cmx__shapeless_defers(const cmx__cop* op) {
  return cmx_primitive_vt(op->prim) == &cmx__vt_Broadcast;
}

static bool elementwise_like(const cmx__cop* op) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(op->prim);
  return vt == &cmx__vt_Compiled || (vt->flags & CMX_PRIM_ELEMENTWISE);
}

/* Whether dim d (of the traced output) of Broadcast op b was broadcast. */
static bool flexible(const cmx__cgraph* g, const cmx__cop* b, int d) {
  const cmx__cval* src = &g->vals[b->in[0]];
  const cmx__cval* dst = &g->vals[b->out[0]];
  int s = d - (dst->ndim - src->ndim);
  return s < 0 || src->shape[s] != dst->shape[d];
}

/* The common shape of consumer's operands, deferred broadcasts counting
 * their sources with broadcast dims as 1; a dim all operands leave at 1
 * takes a deferred broadcast's traced extent (an explicit broadcast_to). */
static void common_shape(const cmx__cgraph* g, const cmx__cop* c,
                         cmx_array* arr, const int* bop, cmx_shape* out) {
  int nd = g->vals[c->out[0]].ndim;
  out->ndim = nd;
  for (int d = 0; d < nd; d++) out->dims[d] = 1;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < c->nin; k++) {
      int v = c->in[k];
      const cmx__cop* b = bop[v] >= 0 ? &g->ops[bop[v]] : NULL;
      cmx_array a = b ? arr[b->in[0]] : arr[v];
      int bn = b ? g->vals[b->out[0]].ndim : a->ndim;
      for (int d = 0; d < bn && d < nd; d++) {
        int od = nd - bn + d, ad = d - (bn - a->ndim);
        int64_t x = ad < 0 ? 1 : a->dims[ad];
        if (b && flexible(g, b, d)) {
          /* the second pass: traced extents where nothing else sets one */
          if (pass == 1 && out->dims[od] == 1)
            out->dims[od] = g->vals[b->out[0]].shape[d];
          continue;
        }
        if (pass == 0 && out->dims[od] == 1) out->dims[od] = x;
      }
    }
}

static cmx_status make_one(const cmx__cgraph* g, const cmx__cop* consumer,
                           cmx_array* arr, const int* bop, int v) {
  const cmx__cop* b = &g->ops[bop[v]];
  int sv = b->in[0];
  cmx_status st = CMX_OK;
  if (bop[sv] >= 0 && !arr[sv]) /* a broadcast of a broadcast */
    st = make_one(g, b, arr, bop, sv);
  if (st != CMX_OK) return st;
  cmx_shape shape;
  if (consumer && elementwise_like(consumer) &&
      g->vals[consumer->out[0]].ndim == g->vals[v].ndim) {
    for (int k = 0; st == CMX_OK && k < consumer->nin; k++) {
      int w = consumer->in[k]; /* the sources of the other operands */
      if (bop[w] >= 0 && bop[g->ops[bop[w]].in[0]] >= 0 &&
          !arr[g->ops[bop[w]].in[0]])
        st = make_one(g, &g->ops[bop[w]], arr, bop, g->ops[bop[w]].in[0]);
    }
    if (st != CMX_OK) return st;
    common_shape(g, consumer, arr, bop, &shape);
  } else {
    st = broadcast_shape(g, b, arr[sv], &shape);
    if (st == CMX_ERR_NOT_IMPLEMENTED)
      st = cmx__error(CMX_ERR_VALUE,
                      "[compile] Cannot compile primitive Broadcast with "
                      "shapeless enabled: its input's rank changed.");
    if (st != CMX_OK) return st;
  }
  return cmx_broadcast_to(&arr[v], arr[sv], shape.dims, shape.ndim,
                          cmx_primitive_stream(b->prim));
}

cmx_status cmx__shapeless_broadcasts(const cmx__cgraph* g,
                                     const cmx__cop* consumer, cmx_array* arr,
                                     const int* bop, const int* vals, int n) {
  cmx_status st = CMX_OK;
  for (int k = 0; st == CMX_OK && k < n; k++)
    if (bop[vals[k]] >= 0 && !arr[vals[k]])
      st = make_one(g, consumer, arr, bop, vals[k]);
  return st;
}
