/* Transform rules of the indexing primitives: Gather and Scatter (MLX's
 * general forms) and their one-axis forms GatherAxis and ScatterAxis.
 *
 * A gather is linear in its source: its vjp scatter-adds the cotangent
 * into zeros (repeated indices accumulate), its jvp gathers the tangent.
 * The scatters are written once for both forms through two helpers:
 * scat_apply (the primitive again with some mode) and scat_gather (for
 * each update element, the value at the place it is written to). The
 * rules per mode are listed in rules.h. Index arrays have no derivative.
 *
 * Masks (which update won, which input equals a max) are built behind
 * stop_gradient so that higher-order transforms treat them as constants.
 * The CPU kernels apply updates in row-major order of the index positions,
 * so a scatter of the update positions themselves tells which write of a
 * repeated index stays. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/indexing.h"
#include "transforms/rules.h"

/* Only floating and complex arrays carry derivatives. */
static bool inexact(cmx_array a) {
  return cmx_dtype_is_inexact(a->dtype);
}

/* Hands r back as a rule output (NULL r: the error of the op that failed). */
static cmx_status give(cmx_array* out, cmx_array r) {
  *out = cmx__rule_keep(r);
  return r ? CMX_OK : cmx_last_status();
}

/* 1 where a == b, else 0, in dtype dt; a constant for every transform
 * (stop_gradient on both sides, so neither mode reaches the comparison). */
static cmx_array const_mask(cmx_array a, cmx_array b, cmx_dtype dt,
                            cmx_stream s) {
  cmx_array eq =
      cmx__equal(cmx__stop_gradient(a, s), cmx__stop_gradient(b, s), s);
  return cmx__stop_gradient(cmx__astype(eq, dt, s), s);
}

/* arange(B) as an index on a new front axis, broadcast to (B,) + I. */
static cmx_array batch_index(int64_t B, const int64_t* I, int nI,
                             cmx_stream s) {
  int64_t shape[CMX_MAX_NDIM], full[CMX_MAX_NDIM];
  shape[0] = full[0] = B;
  for (int d = 0; d < nI; d++) {
    shape[d + 1] = 1;
    full[d + 1] = I[d];
  }
  cmx_array r = cmx__reshape(cmx__arange(0, (double)B, 1, CMX_INT64, s), shape,
                             nI + 1, s);
  return cmx__broadcast_to(r, full, nI + 1, s);
}

/* ---------------- Gather ---------------- */

/* MLX: the indices of a gather or scatter (inputs first..last) take no
 * derivative; asking for one (indices that depend on a differentiated
 * input) is an error naming the remedy. what: "VJP" or "JVP". */
static bool indices_inactive(const char* op, const char* what,
                             const int* argnums, int nargs, int first,
                             int last) {
  for (int k = 0; k < nargs; k++)
    if (argnums[k] >= first && argnums[k] <= last) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] Cannot calculate %s with respect to indices. Use "
                 "stop_gradient on indices to stop gradients from being "
                 "computed.",
                 op, what);
      return false;
    }
  return true;
}

CMX__RULE_VJP(cmx__vjp_gather) {
  (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__gather_params* q = cmx_primitive_params(p);
  cmx_array a = primals[0];
  if (!indices_inactive("gather", "VJP", argnums, nargs, 1, nin - 1))
    return cmx_last_status();
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !inexact(a)) continue;
    cmx__scatter_params b;
    memset(&b, 0, sizeof b);
    b.mode = CMX__SCATTER_ADD;
    b.naxes = q->naxes;
    memcpy(b.axes, q->axes, sizeof b.axes);
    cmx_array in[CMX_MAX_NDIM + 2];
    in[0] = cmx__zeros_like(a, s);
    memcpy(in + 1, primals + 1, (size_t)(nin - 1) * sizeof *in);
    in[nin] = cotangents[0];
    cmx_status st =
        give(&out[k], cmx__apply(&cmx__vt_Scatter, &b, sizeof b, s, in, nin + 1,
                                 a->dims, a->ndim, a->dtype));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_gather) {
  (void)nout;
  out[0] = NULL;
  if (!indices_inactive("gather", "JVP", argnums, nargs, 1, nin - 1))
    return cmx_last_status();
  if (argnums[0] != 0 || !inexact(primals[0])) return CMX_OK;
  cmx_array in[CMX_MAX_NDIM + 1];
  in[0] = tangents[0];
  memcpy(in + 1, primals + 1, (size_t)(nin - 1) * sizeof *in);
  cmx_array y = outputs[0];
  return give(out, cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                              sizeof(cmx__gather_params), cmx__rule_stream(p),
                              in, nin, y->dims, y->ndim, y->dtype));
}

/* Source batched only: the batch becomes one more whole-slice axis of the
 * gather (the result has it after the index dims). Indices batched: they
 * get the batch in front, and a batched source gets an arange index on
 * its batch axis (slice size 1, squeezed away). */
CMX__RULE_VMAP(cmx__vmap_gather) {
  (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__gather_params* q = cmx_primitive_params(p);
  cmx_array y = outputs[0];
  int64_t B = cmx__batch_size(inputs, axes, nin);
  int nidx = nin - 1, nA = inputs[0]->ndim - (axes[0] >= 0), nI = y->ndim - nA;
  bool idx_batched = false;
  for (int i = 1; i < nin; i++) idx_batched |= axes[i] >= 0;
  if (y->ndim + 2 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx__gather_params b;
  memset(&b, 0, sizeof b);
  cmx_array in[CMX_MAX_NDIM + 2];
  int64_t shape[CMX_MAX_NDIM];
  if (!idx_batched) {
    b.naxes = q->naxes;
    for (int i = 0; i < q->naxes; i++) b.axes[i] = q->axes[i] + 1;
    b.slice_sizes[0] = B;
    memcpy(b.slice_sizes + 1, q->slice_sizes, (size_t)nA * 8);
    in[0] = cmx__batch_front(inputs[0], axes[0], B, s);
    memcpy(in + 1, inputs + 1, (size_t)nidx * sizeof *in);
    memcpy(shape, y->dims, (size_t)nI * 8);
    shape[nI] = B;
    memcpy(shape + nI + 1, y->dims + nI, (size_t)nA * 8);
    out_axes[0] = nI;
    return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, in, nin,
                                shape, y->ndim + 1, y->dtype));
  }
  shape[0] = B;
  memcpy(shape + 1, y->dims, (size_t)y->ndim * 8);
  out_axes[0] = 0;
  if (axes[0] < 0) {
    in[0] = inputs[0];
    for (int i = 1; i < nin; i++)
      in[i] = cmx__batch_front(inputs[i], axes[i], B, s);
    return give(out, cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, nin,
                                shape, y->ndim + 1, y->dtype));
  }
  b.naxes = q->naxes + 1;
  for (int i = 0; i < q->naxes; i++) b.axes[i + 1] = q->axes[i] + 1;
  b.slice_sizes[0] = 1;
  memcpy(b.slice_sizes + 1, q->slice_sizes, (size_t)nA * 8);
  in[0] = cmx__batch_front(inputs[0], axes[0], B, s);
  in[1] = batch_index(B, y->dims, nI, s);
  for (int i = 1; i < nin; i++)
    in[i + 1] = cmx__batch_front(inputs[i], axes[i], B, s);
  int64_t gshape[CMX_MAX_NDIM];
  memcpy(gshape, shape, (size_t)(nI + 1) * 8);
  gshape[nI + 1] = 1;
  memcpy(gshape + nI + 2, y->dims + nI, (size_t)nA * 8);
  cmx_array g = cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, in, nin + 1,
                           gshape, y->ndim + 2, y->dtype);
  return give(out, cmx__reshape(g, shape, y->ndim + 1, s));
}

/* ---------------- GatherAxis ---------------- */

CMX__RULE_VJP(cmx__vjp_gather_axis) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__axis_params* q = cmx_primitive_params(p);
  cmx_array a = primals[0];
  if (!indices_inactive("gather_axis", "VJP", argnums, nargs, 1, 1))
    return cmx_last_status();
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !inexact(a)) continue;
    cmx__axis_params b;
    memset(&b, 0, sizeof b);
    b.axis = q->axis;
    b.mode = CMX__SCATTER_ADD;
    cmx_array in[3] = {cmx__zeros_like(a, s), primals[1], cotangents[0]};
    cmx_status st =
        give(&out[k], cmx__apply(&cmx__vt_ScatterAxis, &b, sizeof b, s, in, 3,
                                 a->dims, a->ndim, a->dtype));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_gather_axis) {
  (void)nin, (void)nout;
  out[0] = NULL;
  if (!indices_inactive("gather_axis", "JVP", argnums, nargs, 1, 1))
    return cmx_last_status();
  if (argnums[0] != 0 || !inexact(primals[0])) return CMX_OK;
  cmx_array in[2] = {tangents[0], primals[1]}, y = outputs[0];
  return give(out, cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                              sizeof(cmx__axis_params), cmx__rule_stream(p), in,
                              2, y->dims, y->ndim, y->dtype));
}

/* Every input with the batch in front (unbatched ones broadcast, as the
 * primitive wants them to agree off the axis), the axis one further. */
static cmx_status vmap_axis_form(const cmx_primitive* p,
                                 const cmx_array* inputs, int nin,
                                 const int* axes, cmx_array y, cmx_array* out,
                                 int* out_axes) {
  cmx_stream s = cmx__rule_stream(p);
  const cmx__axis_params* q = cmx_primitive_params(p);
  int64_t B = cmx__batch_size(inputs, axes, nin), shape[CMX_MAX_NDIM];
  if (y->ndim + 1 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx_array in[3];
  for (int i = 0; i < nin; i++)
    in[i] = cmx__batch_front(inputs[i], axes[i], B, s);
  cmx__axis_params b = *q;
  b.axis = q->axis + 1;
  shape[0] = B;
  memcpy(shape + 1, y->dims, (size_t)y->ndim * 8);
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, in, nin,
                              shape, y->ndim + 1, y->dtype));
}

CMX__RULE_VMAP(cmx__vmap_gather_axis) {
  (void)nout;
  return vmap_axis_form(p, inputs, nin, axes, outputs[0], out, out_axes);
}

/* ---------------- Scatter and ScatterAxis ---------------- */

typedef struct scat {
  const cmx_primitive* p;
  bool axis_form; /* ScatterAxis */
  int mode;
  const cmx_array* idx;
  int nidx;
  cmx_array a, u; /* the array scattered into, the updates */
  cmx_stream s;
} scat;

static scat scat_of(const cmx_primitive* p, const cmx_array* primals, int nin) {
  scat c;
  c.p = p;
  c.axis_form = cmx_primitive_vt(p) == &cmx__vt_ScatterAxis;
  c.mode = c.axis_form
               ? ((const cmx__axis_params*)cmx_primitive_params(p))->mode
               : ((const cmx__scatter_params*)cmx_primitive_params(p))->mode;
  c.idx = primals + 1;
  c.nidx = nin - 2;
  c.a = primals[0];
  c.u = primals[nin - 1];
  c.s = cmx__rule_stream(p);
  return c;
}

/* The scatter again, combining with `mode`, of v (the updates' shape) into
 * x (a's shape); the result has x's dtype. */
static cmx_array scat_apply(const scat* c, int mode, cmx_array x, cmx_array v) {
  cmx_array in[CMX_MAX_NDIM + 2];
  in[0] = x;
  memcpy(in + 1, c->idx, (size_t)c->nidx * sizeof *in);
  in[c->nidx + 1] = v;
  if (!x || !v) return NULL;
  if (c->axis_form) {
    cmx__axis_params b = *(const cmx__axis_params*)cmx_primitive_params(c->p);
    b.mode = mode;
    return cmx__apply(&cmx__vt_ScatterAxis, &b, sizeof b, c->s, in, 3, x->dims,
                      x->ndim, x->dtype);
  }
  cmx__scatter_params b =
      *(const cmx__scatter_params*)cmx_primitive_params(c->p);
  b.mode = mode;
  return cmx__apply(&cmx__vt_Scatter, &b, sizeof b, c->s, in, c->nidx + 2,
                    x->dims, x->ndim, x->dtype);
}

/* For each update element, y (a's shape) at the place it is written to:
 * an array of the updates' shape. */
static cmx_array scat_gather(const scat* c, cmx_array y) {
  if (!y) return NULL;
  cmx_array in[CMX_MAX_NDIM + 1];
  in[0] = y;
  memcpy(in + 1, c->idx, (size_t)c->nidx * sizeof *in);
  if (c->axis_form) {
    cmx__axis_params b;
    memset(&b, 0, sizeof b);
    b.axis = ((const cmx__axis_params*)cmx_primitive_params(c->p))->axis;
    return cmx__apply(&cmx__vt_GatherAxis, &b, sizeof b, c->s, in, 2,
                      c->u->dims, c->u->ndim, y->dtype);
  }
  const cmx__scatter_params* q = cmx_primitive_params(c->p);
  cmx__gather_params b;
  memset(&b, 0, sizeof b);
  b.naxes = q->naxes;
  memcpy(b.axes, q->axes, sizeof b.axes);
  int nI = c->u->ndim - c->a->ndim;
  memcpy(b.slice_sizes, c->u->dims + nI, (size_t)c->a->ndim * 8);
  return cmx__apply(&cmx__vt_Gather, &b, sizeof b, c->s, in, c->nidx + 1,
                    c->u->dims, c->u->ndim, y->dtype);
}

/* True when no two update elements can land on the same place (at most
 * one index position), so no write is overridden or combined. */
static bool unique_writes(const scat* c) {
  if (c->axis_form) {
    int ax = ((const cmx__axis_params*)cmx_primitive_params(c->p))->axis;
    return c->u->dims[ax] <= 1;
  }
  int nI = c->u->ndim - c->a->ndim;
  int64_t n = 1;
  for (int d = 0; d < nI; d++) n *= c->u->dims[d];
  return n <= 1;
}

/* 1 for the update elements whose write stays (the last one at each
 * place), 0 for those a later one overrides. */
static cmx_array winner_mask(const scat* c, cmx_dtype dt) {
  cmx_stream s = c->s;
  cmx_array ids =
      cmx__reshape(cmx__arange(0, (double)c->u->size, 1, CMX_INT64, s),
                   c->u->dims, c->u->ndim, s);
  cmx_array none = cmx__full(c->a->dims, c->a->ndim, cmx__scalar(-1, CMX_INT64),
                             CMX_INT64, s);
  cmx_array last = scat_gather(c, scat_apply(c, CMX__SCATTER_NONE, none, ids));
  return const_mask(last, ids, dt, s);
}

/* For each update element of a product scatter, the product of the other
 * updates written to its place. Without dividing by zero: with z zeros at
 * a place and P the product of its nonzero updates, a nonzero update gets
 * P / u when z = 0 (else 0) and a zero update gets P when z = 1 (else 0). */
static cmx_array prod_others(const scat* c) {
  cmx_stream s = c->s;
  cmx_dtype dt = c->u->dtype;
  cmx_array zero = const_mask(c->u, cmx__scalar(0, dt), dt, s);
  cmx_array safe = cmx__add(c->u, zero, s);
  cmx_array nz = cmx__stop_gradient(
      scat_gather(
          c, scat_apply(c, CMX__SCATTER_ADD, cmx__zeros_like(c->a, s), zero)),
      s);
  cmx_array pnz = scat_gather(
      c, scat_apply(c, CMX__SCATTER_PROD, cmx__ones_like(c->a, s), safe));
  cmx_array c1 =
      cmx__multiply(zero, const_mask(nz, cmx__scalar(1, dt), dt, s), s);
  cmx_array c0 = cmx__multiply(cmx__subtract(cmx__scalar(1, dt), zero, s),
                               const_mask(nz, cmx__scalar(0, dt), dt, s), s);
  return cmx__multiply(pnz, cmx__add(c1, cmx__divide(c0, safe, s), s), s);
}

/* The cotangent of the source (which = 0) or of the updates (which = 1). */
static cmx_array scat_vjp_one(const scat* c, int which, cmx_array cot,
                              cmx_array result) {
  cmx_stream s = c->s;
  cmx_dtype dt = c->a->dtype;
  switch (c->mode) {
    case CMX__SCATTER_NONE:
      if (which == 0)
        return scat_apply(c, CMX__SCATTER_NONE, cot, cmx__zeros_like(c->u, s));
      return unique_writes(c)
                 ? scat_gather(c, cot)
                 : cmx__multiply(scat_gather(c, cot), winner_mask(c, dt), s);
    case CMX__SCATTER_ADD:
      return which == 0 ? cot : scat_gather(c, cot);
    case CMX__SCATTER_PROD: {
      if (which == 0) return scat_apply(c, CMX__SCATTER_PROD, cot, c->u);
      cmx_array g = scat_gather(c, cmx__multiply(cot, c->a, s));
      return unique_writes(c) ? g : cmx__multiply(g, prod_others(c), s);
    }
    default: /* max, min */
      if (which == 0)
        return cmx__multiply(cot, const_mask(result, c->a, dt, s), s);
      return cmx__multiply(scat_gather(c, cot),
                           const_mask(scat_gather(c, result), c->u, dt, s), s);
  }
}

/* The name of a scatter primitive in errors, as MLX's. */
static const char* scat_name(const cmx_primitive* p) {
  return cmx_primitive_vt(p) == &cmx__vt_ScatterAxis ? "scatter_axis"
                                                     : "scatter";
}

/* Scatter and ScatterAxis share their vjp and jvp. */
static cmx_status scatter_vjp(const cmx_primitive* p, const cmx_array* primals,
                              int nin, const cmx_array* cotangents,
                              const int* argnums, int nargs,
                              const cmx_array* outputs, cmx_array* out) {
  scat c = scat_of(p, primals, nin);
  if (!indices_inactive(scat_name(p), "VJP", argnums, nargs, 1, nin - 2))
    return cmx_last_status();
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    int i = argnums[k];
    if ((i != 0 && i != nin - 1) || !inexact(c.a)) continue;
    /* No updates: the output is the source itself. */
    if (c.u->size == 0) {
      if (i == 0) out[k] = cmx_array_retain(cotangents[0]);
      continue;
    }
    cmx_status st = give(
        &out[k], scat_vjp_one(&c, i == 0 ? 0 : 1, cotangents[0], outputs[0]));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

static cmx_status scatter_jvp(const cmx_primitive* p, const cmx_array* primals,
                              int nin, const cmx_array* tangents,
                              const int* argnums, int nargs,
                              const cmx_array* outputs, cmx_array* out) {
  scat c = scat_of(p, primals, nin);
  cmx_stream s = c.s;
  cmx_dtype dt = c.a->dtype;
  out[0] = NULL;
  if (!indices_inactive(scat_name(p), "JVP", argnums, nargs, 1, nin - 2))
    return cmx_last_status();
  if (!inexact(c.a)) return CMX_OK;
  cmx_array ta = NULL, tu = NULL;
  for (int k = 0; k < nargs; k++) {
    if (argnums[k] == 0) ta = tangents[k];
    if (argnums[k] == nin - 1) tu = tangents[k];
  }
  if (!ta && !tu) return CMX_OK;
  if (c.u->size == 0) return give(out, ta ? ta : cmx__zeros_like(c.a, s));
  cmx_array r = NULL;
  switch (c.mode) {
    case CMX__SCATTER_NONE:
    case CMX__SCATTER_ADD:
      r = scat_apply(&c, c.mode, ta ? ta : cmx__zeros_like(c.a, s),
                     tu ? tu : cmx__zeros_like(c.u, s));
      break;
    case CMX__SCATTER_PROD:
      if (ta) r = scat_apply(&c, CMX__SCATTER_PROD, ta, c.u);
      if (tu) {
        cmx_array g =
            unique_writes(&c) ? tu : cmx__multiply(tu, prod_others(&c), s);
        cmx_array t = cmx__multiply(
            c.a, scat_apply(&c, CMX__SCATTER_ADD, cmx__zeros_like(c.a, s), g),
            s);
        r = r ? cmx__add(r, t, s) : t;
      }
      break;
    default: /* max, min: the tangent of whichever input is the result */
      if (ta) r = cmx__multiply(ta, const_mask(outputs[0], c.a, dt, s), s);
      if (tu) {
        cmx_array m = const_mask(scat_gather(&c, outputs[0]), c.u, dt, s);
        cmx_array t = scat_apply(&c, CMX__SCATTER_ADD, cmx__zeros_like(c.a, s),
                                 cmx__multiply(tu, m, s));
        r = r ? cmx__add(r, t, s) : t;
      }
  }
  return give(out, r);
}

CMX__RULE_VJP(cmx__vjp_scatter) {
  (void)nout;
  return scatter_vjp(p, primals, nin, cotangents, argnums, nargs, outputs, out);
}
CMX__RULE_JVP(cmx__jvp_scatter) {
  (void)nout;
  return scatter_jvp(p, primals, nin, tangents, argnums, nargs, outputs, out);
}
CMX__RULE_VJP(cmx__vjp_scatter_axis) {
  (void)nout;
  return scatter_vjp(p, primals, nin, cotangents, argnums, nargs, outputs, out);
}
CMX__RULE_JVP(cmx__jvp_scatter_axis) {
  (void)nout;
  return scatter_jvp(p, primals, nin, tangents, argnums, nargs, outputs, out);
}

/* The source gets the batch in front. Unbatched indices: the updates'
 * batch becomes a whole slice axis right after the index dims. Batched
 * indices: they get the batch in front plus an arange index on the batch
 * axis, and the updates a size-1 slice extent there. Positions are then
 * visited per batch element in the same order as without vmap, so the
 * same write of a repeated index stays. */
CMX__RULE_VMAP(cmx__vmap_scatter) {
  (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__scatter_params* q = cmx_primitive_params(p);
  cmx_array y = outputs[0];
  int64_t B = cmx__batch_size(inputs, axes, nin);
  int nidx = nin - 2, nA = y->ndim;
  cmx_array u = inputs[nin - 1];
  int nI = u->ndim - (axes[nin - 1] >= 0) - nA;
  bool idx_batched = false;
  for (int i = 1; i <= nidx; i++) idx_batched |= axes[i] >= 0;
  if (nI + nA + 2 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx__scatter_params b;
  memset(&b, 0, sizeof b);
  b.mode = q->mode;
  cmx_array in[CMX_MAX_NDIM + 3];
  in[0] = cmx__batch_front(inputs[0], axes[0], B, s);
  cmx_array uf = cmx__batch_front(u, axes[nin - 1], B, s);
  int n = 1;
  if (!idx_batched) {
    b.naxes = q->naxes;
    for (int i = 0; i < q->naxes; i++) b.axes[i] = q->axes[i] + 1;
    for (int i = 1; i <= nidx; i++) in[n++] = inputs[i];
    in[n++] = nI ? cmx__moveaxis(uf, 0, nI, s) : uf;
  } else {
    b.naxes = q->naxes + 1;
    for (int i = 0; i < q->naxes; i++) b.axes[i + 1] = q->axes[i] + 1;
    cmx_array i0 = cmx__batch_front(inputs[1], axes[1], B, s);
    if (!i0) return cmx_last_status();
    in[n++] = batch_index(B, i0->dims + 1, nI, s);
    for (int i = 1; i <= nidx; i++)
      in[n++] = cmx__batch_front(inputs[i], axes[i], B, s);
    int ax = 1 + nI;
    in[n++] = cmx__expand_dims(uf, &ax, 1, s);
  }
  int64_t shape[CMX_MAX_NDIM];
  shape[0] = B;
  memcpy(shape + 1, y->dims, (size_t)nA * 8);
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, in, n,
                              shape, nA + 1, y->dtype));
}

CMX__RULE_VMAP(cmx__vmap_scatter_axis) {
  (void)nout;
  return vmap_axis_form(p, inputs, nin, axes, outputs[0], out, out_axes);
}
