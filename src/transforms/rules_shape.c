/* Transform rules of the shape and view primitives. The one-input ones
 * (Broadcast, Transpose, Squeeze, ExpandDims, Slice, AsStrided, Reshape,
 * Contiguous and View) are linear maps of their input, so the vjp is
 * the transposed map applied to the cotangent and the jvp the map itself
 * applied to the tangent. vmap rules move the batch axis to the front and
 * apply the primitive again with its parameters shifted by one axis (a
 * view in every case but Reshape and Contiguous of awkward layouts).
 * Integer and bool inputs have no derivative: their rules give NULL.
 * The joins and updates (SliceUpdate, Concatenate, Pad) follow at the
 * end. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/shape.h"
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

/* For one-input primitives: the (batched) input with its batch axis in
 * front, and the output shape (B,) + outputs[0] written to shape; NULL
 * with the error set when that shape would have too many dimensions. */
static cmx_array front_with_shape(const cmx_array* inputs, const int* axes,
                                  const cmx_array* outputs, int64_t* shape,
                                  cmx_stream s) {
  if (outputs[0]->ndim + 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx_array x = cmx__batch_front(inputs[0], axes[0], 1, s);
  if (!x) return NULL;
  shape[0] = x->dims[0];
  memcpy(shape + 1, outputs[0]->dims, (size_t)outputs[0]->ndim * 8);
  return x;
}

/* ---------------- Broadcast ---------------- */

CMX__RULE_VJP(cmx__vjp_broadcast) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  out[0] = NULL;
  cmx_array x = primals[0];
  if (!nargs || !inexact(x)) return CMX_OK;
  return give(out, cmx__sum_to_shape(cotangents[0], x->dims, x->ndim,
                                     cmx__rule_stream(p)));
}

CMX__RULE_JVP(cmx__jvp_broadcast) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  return give(out, cmx__broadcast_to(tangents[0], outputs[0]->dims,
                                     outputs[0]->ndim, cmx__rule_stream(p)));
}

/* The batch axis goes first; the input's own axes align to the right of
 * the output's. */
CMX__RULE_VMAP(cmx__vmap_broadcast) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  int od = outputs[0]->ndim, xd = x->ndim - 1;
  int64_t rs[CMX_MAX_NDIM];
  rs[0] = x->dims[0];
  for (int d = 0; d < od - xd; d++) rs[1 + d] = 1;
  memcpy(rs + 1 + od - xd, x->dims + 1, (size_t)xd * 8);
  out_axes[0] = 0;
  return give(
      out, cmx__broadcast_to(cmx__reshape(x, rs, od + 1, s), shape, od + 1, s));
}

/* ---------------- Transpose ---------------- */

CMX__RULE_VJP(cmx__vjp_transpose) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  out[0] = NULL;
  cmx_array x = primals[0];
  if (!nargs || !inexact(x)) return CMX_OK;
  const cmx__transpose_params* q = cmx_primitive_params(p);
  int inv[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++) inv[q->perm[d]] = d;
  return give(out,
              cmx__transpose(cotangents[0], inv, x->ndim, cmx__rule_stream(p)));
}

CMX__RULE_JVP(cmx__jvp_transpose) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  out[0] = NULL;
  cmx_array x = primals[0];
  if (!inexact(x)) return CMX_OK;
  const cmx__transpose_params* q = cmx_primitive_params(p);
  return give(
      out, cmx__transpose(tangents[0], q->perm, x->ndim, cmx__rule_stream(p)));
}

CMX__RULE_VMAP(cmx__vmap_transpose) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__transpose_params* q = cmx_primitive_params(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  int perm[CMX_MAX_NDIM], nd = outputs[0]->ndim;
  perm[0] = 0;
  for (int d = 0; d < nd; d++) perm[d + 1] = q->perm[d] + 1;
  out_axes[0] = 0;
  return give(out, cmx__transpose(x, perm, nd + 1, s));
}

/* ---------------- Squeeze and ExpandDims ---------------- */

/* Both only add or drop size-1 axes: their transposes are reshapes. */
static cmx_status vjp_reshape_back(const cmx_primitive* p,
                                   const cmx_array* primals,
                                   const cmx_array* cotangents, int nargs,
                                   cmx_array* out) {
  out[0] = NULL;
  cmx_array x = primals[0];
  if (!nargs || !inexact(x)) return CMX_OK;
  return give(
      out, cmx__reshape(cotangents[0], x->dims, x->ndim, cmx__rule_stream(p)));
}

static cmx_status jvp_reshape_fwd(const cmx_primitive* p,
                                  const cmx_array* primals,
                                  const cmx_array* tangents,
                                  const cmx_array* outputs, cmx_array* out) {
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  return give(out, cmx__reshape(tangents[0], outputs[0]->dims, outputs[0]->ndim,
                                cmx__rule_stream(p)));
}

CMX__RULE_VJP(cmx__vjp_squeeze) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  return vjp_reshape_back(p, primals, cotangents, nargs, out);
}
CMX__RULE_JVP(cmx__jvp_squeeze) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  return jvp_reshape_fwd(p, primals, tangents, outputs, out);
}
CMX__RULE_VJP(cmx__vjp_expand_dims) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  return vjp_reshape_back(p, primals, cotangents, nargs, out);
}
CMX__RULE_JVP(cmx__jvp_expand_dims) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  return jvp_reshape_fwd(p, primals, tangents, outputs, out);
}

/* The same axes one further, after the batch axis. */
static cmx_status vmap_axes(const cmx_primitive* p, const cmx_array* inputs,
                            const int* axes, const cmx_array* outputs,
                            cmx_array* out, int* out_axes) {
  cmx_stream s = cmx__rule_stream(p);
  const cmx__axes_params* q = cmx_primitive_params(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  cmx__axes_params b;
  memset(&b, 0, sizeof b);
  b.naxes = q->naxes;
  for (int i = 0; i < q->naxes; i++) b.axes[i] = q->axes[i] + 1;
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &x, 1,
                              shape, outputs[0]->ndim + 1, outputs[0]->dtype));
}

CMX__RULE_VMAP(cmx__vmap_squeeze) {
  (void)nin, (void)nout;
  return vmap_axes(p, inputs, axes, outputs, out, out_axes);
}
CMX__RULE_VMAP(cmx__vmap_expand_dims) {
  (void)nin, (void)nout;
  return vmap_axes(p, inputs, axes, outputs, out, out_axes);
}

/* ---------------- Slice ---------------- */

/* The cotangent written into zeros at the sliced places (SliceUpdate with
 * the slice's own parameters, so negative steps need no special case). */
CMX__RULE_VJP(cmx__vjp_slice) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  out[0] = NULL;
  cmx_array x = primals[0];
  if (!nargs || !inexact(x)) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array in[2] = {cmx__zeros_like(x, s), cotangents[0]};
  return give(out, cmx__apply(&cmx__vt_SliceUpdate, q, sizeof *q, s, in, 2,
                              x->dims, x->ndim, x->dtype));
}

CMX__RULE_JVP(cmx__jvp_slice) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  const cmx__slice_params* q = cmx_primitive_params(p);
  return give(out,
              cmx__apply(cmx_primitive_vt(p), q, sizeof *q, cmx__rule_stream(p),
                         tangents, 1, outputs[0]->dims, outputs[0]->ndim,
                         outputs[0]->dtype));
}

/* Slice and SliceUpdate parameters with a whole batch axis of size B in
 * front. */
static void slice_params_batched(const cmx__slice_params* q, int ndim,
                                 int64_t B, cmx__slice_params* b) {
  memset(b, 0, sizeof *b);
  b->step[0] = 1;
  b->stop[0] = B;
  for (int d = 0; d < ndim; d++) {
    b->start[d + 1] = q->start[d];
    b->stop[d + 1] = q->stop[d];
    b->step[d + 1] = q->step[d];
  }
  b->ndim = ndim + 1;
}

CMX__RULE_VMAP(cmx__vmap_slice) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  cmx__slice_params b;
  slice_params_batched(cmx_primitive_params(p), outputs[0]->ndim, x->dims[0],
                       &b);
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &x, 1,
                              shape, outputs[0]->ndim + 1, outputs[0]->dtype));
}

/* ---------------- AsStrided ---------------- */

/* As MLX: the view applied to the positions 0..n-1 of the input says where
 * each output element comes from; the cotangent is scatter-added there
 * (elements the view reads more than once accumulate). */
CMX__RULE_VJP(cmx__vjp_as_strided) {
  (void)nin, (void)nout, (void)argnums;
  out[0] = NULL;
  cmx_array x = primals[0], y = outputs[0];
  if (!nargs || !inexact(x)) return CMX_OK;
  if (x->size == 0 || y->size == 0) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  int64_t n = x->size, m = y->size, col[2] = {m, 1};
  cmx_array pos = cmx__reshape(cmx__arange(0, (double)n, 1, CMX_INT64, s),
                               x->dims, x->ndim, s);
  cmx_array idx = cmx__reshape(
      cmx__as_strided(pos, y->dims, y->ndim, q->strides, q->offset, s), &m, 1,
      s);
  int ax = 0;
  cmx_array g =
      cmx__scatter_add(cmx__zeros(&n, 1, x->dtype, s), &idx, 1,
                       cmx__reshape(cotangents[0], col, 2, s), &ax, 1, s);
  return give(out, cmx__reshape(g, x->dims, x->ndim, s));
}

CMX__RULE_JVP(cmx__jvp_as_strided) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  cmx_array y = outputs[0];
  return give(out, cmx__as_strided(tangents[0], y->dims, y->ndim, q->strides,
                                   q->offset, cmx__rule_stream(p)));
}

/* The input made contiguous with the batch in front: batch element b
 * starts n elements after b - 1, so the view gets a leading stride n. */
CMX__RULE_VMAP(cmx__vmap_as_strided) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  cmx__as_strided_params b;
  memset(&b, 0, sizeof b);
  b.strides[0] = x->dims[0] ? x->size / x->dims[0] : 0;
  memcpy(b.strides + 1, q->strides, (size_t)outputs[0]->ndim * 8);
  b.offset = q->offset;
  b.ndim = outputs[0]->ndim + 1;
  memcpy(b.shape, shape, (size_t)b.ndim * 8);
  cmx_array c = cmx__contiguous(x, false, s);
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &c, 1,
                              shape, outputs[0]->ndim + 1, outputs[0]->dtype));
}

/* ---------------- Reshape ---------------- */

CMX__RULE_VJP(cmx__vjp_reshape) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  return vjp_reshape_back(p, primals, cotangents, nargs, out);
}
CMX__RULE_JVP(cmx__jvp_reshape) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  return jvp_reshape_fwd(p, primals, tangents, outputs, out);
}

CMX__RULE_VMAP(cmx__vmap_reshape) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  out_axes[0] = 0;
  return give(out, cmx__reshape(x, shape, outputs[0]->ndim + 1, s));
}

/* ---------------- Contiguous ---------------- */

/* The identity on values: derivatives pass through unchanged. */
CMX__RULE_VJP(cmx__vjp_contiguous) {
  (void)p, (void)nin, (void)nout, (void)argnums, (void)outputs;
  out[0] = NULL;
  if (!nargs || !inexact(primals[0])) return CMX_OK;
  out[0] = cmx_array_retain(cotangents[0]);
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_contiguous) {
  (void)p, (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  out[0] = cmx_array_retain(tangents[0]);
  return CMX_OK;
}

/* The batched array made contiguous as a whole: its batch axis stays. */
CMX__RULE_VMAP(cmx__vmap_contiguous) {
  (void)nin, (void)outputs, (void)nout;
  const cmx__contiguous_params* q = cmx_primitive_params(p);
  out_axes[0] = axes[0];
  return give(out, cmx__contiguous(inputs[0], q->allow_col_major != 0,
                                   cmx__rule_stream(p)));
}

/* ---------------- View ---------------- */

/* Reinterpreting the bits of one dtype as another is not differentiable:
 * no derivative flows unless the dtype stays the same (then it is the
 * identity). */
CMX__RULE_VJP(cmx__vjp_view) {
  (void)p, (void)nin, (void)nout, (void)argnums;
  out[0] = NULL;
  if (!nargs || !inexact(primals[0]) || primals[0]->dtype != outputs[0]->dtype)
    return CMX_OK;
  out[0] = cmx_array_retain(cotangents[0]);
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_view) {
  (void)p, (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0]) || primals[0]->dtype != outputs[0]->dtype)
    return CMX_OK;
  out[0] = cmx_array_retain(tangents[0]);
  return CMX_OK;
}

/* With the batch in front, the last axis (the one whose extent changes)
 * is the input's own. */
CMX__RULE_VMAP(cmx__vmap_view) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t shape[CMX_MAX_NDIM];
  cmx_array x = front_with_shape(inputs, axes, outputs, shape, s);
  if (!x) return cmx_last_status();
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                              cmx_primitive_params_size(p), s, &x, 1, shape,
                              outputs[0]->ndim + 1, outputs[0]->dtype));
}

/* ---------------- SliceUpdate ---------------- */

/* src gets the cotangent with the updated region zeroed; the update gets
 * the region of the cotangent. */
CMX__RULE_VJP(cmx__vjp_slice_update) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array src = primals[0], upd = primals[1], c = cotangents[0];
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (!inexact(src)) continue;
    cmx_array r;
    if (argnums[k] == 0) {
      cmx_array in[2] = {c, cmx__zeros_like(upd, s)};
      r = cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, 2, src->dims,
                     src->ndim, src->dtype);
    } else {
      r = cmx__apply(&cmx__vt_Slice, q, sizeof *q, s, &c, 1, upd->dims,
                     upd->ndim, upd->dtype);
    }
    cmx_status st = give(&out[k], r);
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

/* The tangent of a multi-input linear primitive: input i's tangent, or
 * zeros where it has none. */
static cmx_array tangent_or_zeros(const cmx_array* primals, int i,
                                  const cmx_array* tangents, const int* argnums,
                                  int nargs, cmx_stream s) {
  for (int k = 0; k < nargs; k++)
    if (argnums[k] == i) return tangents[k];
  return cmx__zeros_like(primals[i], s);
}

CMX__RULE_JVP(cmx__jvp_slice_update) {
  (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__slice_params* q = cmx_primitive_params(p);
  cmx_array in[2];
  for (int i = 0; i < nin; i++)
    in[i] = tangent_or_zeros(primals, i, tangents, argnums, nargs, s);
  cmx_array y = outputs[0];
  return give(out, cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, 2,
                              y->dims, y->ndim, y->dtype));
}

CMX__RULE_VMAP(cmx__vmap_slice_update) {
  (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t B = cmx__batch_size(inputs, axes, nin), shape[CMX_MAX_NDIM];
  cmx_array y = outputs[0];
  if (y->ndim + 1 > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx_array in[2];
  for (int i = 0; i < 2; i++)
    in[i] = cmx__batch_front(inputs[i], axes[i], B, s);
  shape[0] = B;
  memcpy(shape + 1, y->dims, (size_t)y->ndim * 8);
  cmx__slice_params b;
  slice_params_batched(cmx_primitive_params(p), y->ndim, B, &b);
  out_axes[0] = 0;
  return give(out, cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, in, 2,
                              shape, y->ndim + 1, y->dtype));
}

/* ---------------- Concatenate ---------------- */

/* Input i gets its own stretch of the cotangent along the axis. */
CMX__RULE_VJP(cmx__vjp_concatenate) {
  (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__concat_params* q = cmx_primitive_params(p);
  cmx_array c = cotangents[0];
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int d = 0; d < c->ndim; d++) {
    start[d] = 0;
    stop[d] = c->dims[d];
  }
  /* Offsets of all inputs at once: summing the earlier inputs for each one
   * was quadratic (grad through a stack of 100,000 arrays took 62 s). */
  int64_t* offs = malloc(((size_t)nin + 1) * sizeof *offs);
  if (!offs) return cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
  offs[0] = 0;
  for (int i = 0; i < nin; i++)
    offs[i + 1] = offs[i] + primals[i]->dims[q->axis];
  cmx_status st = CMX_OK;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  for (int k = 0; k < nargs && st == CMX_OK; k++) {
    cmx_array x = primals[argnums[k]];
    if (!inexact(x)) continue;
    start[q->axis] = offs[argnums[k]];
    stop[q->axis] = offs[argnums[k] + 1];
    st = give(&out[k], cmx__slice(c, start, stop, NULL, s));
  }
  free(offs);
  return st;
}

CMX__RULE_JVP(cmx__jvp_concatenate) {
  (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__concat_params* q = cmx_primitive_params(p);
  cmx_array* in = malloc((size_t)nin * sizeof *in);
  if (!in) return cmx__error(CMX_ERR_MEMORY, "[jvp] out of host memory");
  for (int i = 0; i < nin; i++)
    in[i] = tangent_or_zeros(primals, i, tangents, argnums, nargs, s);
  cmx_array y = outputs[0];
  cmx_array r = cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, nin,
                           y->dims, y->ndim, y->dtype);
  free(in);
  return give(out, r);
}

CMX__RULE_VMAP(cmx__vmap_concatenate) {
  (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__concat_params* q = cmx_primitive_params(p);
  int64_t B = cmx__batch_size(inputs, axes, nin);
  cmx_array* in = malloc((size_t)nin * sizeof *in);
  if (!in) return cmx__error(CMX_ERR_MEMORY, "[vmap] out of host memory");
  for (int i = 0; i < nin; i++)
    in[i] = cmx__batch_front(inputs[i], axes[i], B, s);
  cmx_array r = cmx__concatenate(in, nin, q->axis + 1, s);
  free(in);
  out_axes[0] = 0;
  return give(out, r);
}

/* ---------------- Pad ---------------- */

/* Input 1 is the (0-d) padding value: it appears at every border place,
 * so it gets the sum of the cotangent there. */
CMX__RULE_VJP(cmx__vjp_pad) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__pad_params* q = cmx_primitive_params(p);
  cmx_array x = primals[0], c = cotangents[0], y = outputs[0];
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (!inexact(x)) continue;
    cmx_array r;
    if (argnums[k] == 0) {
      int64_t stop[CMX_MAX_NDIM];
      for (int d = 0; d < x->ndim; d++) stop[d] = q->low[d] + x->dims[d];
      r = cmx__slice(c, q->low, stop, NULL, s);
    } else {
      cmx_array in[2] = {cmx__zeros_like(x, s), cmx__scalar(1, x->dtype)};
      cmx_array border = cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, 2,
                                    y->dims, y->ndim, y->dtype);
      r = cmx__sum(cmx__multiply(c, border, s), NULL, 0, false, s);
    }
    cmx_status st = give(&out[k], r);
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_pad) {
  (void)nout;
  out[0] = NULL;
  if (!inexact(primals[0])) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__pad_params* q = cmx_primitive_params(p);
  cmx_array in[2];
  for (int i = 0; i < nin; i++)
    in[i] = tangent_or_zeros(primals, i, tangents, argnums, nargs, s);
  cmx_array y = outputs[0];
  return give(out, cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, in, 2,
                              y->dims, y->ndim, y->dtype));
}

/* A batched padding value cannot be Pad's scalar: the array is padded
 * with zeros and the border then takes each batch element's value. */
CMX__RULE_VMAP(cmx__vmap_pad) {
  (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__pad_params* q = cmx_primitive_params(p);
  int64_t B = cmx__batch_size(inputs, axes, nin), shape[CMX_MAX_NDIM];
  int nd = outputs[0]->ndim + 1;
  if (nd > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
  cmx_array x = cmx__batch_front(inputs[0], axes[0], B, s);
  if (!x) return cmx_last_status();
  shape[0] = B;
  memcpy(shape + 1, outputs[0]->dims, (size_t)(nd - 1) * 8);
  cmx_dtype dt = outputs[0]->dtype;
  cmx__pad_params b;
  memset(&b, 0, sizeof b);
  memcpy(b.low + 1, q->low, (size_t)(nd - 1) * 8);
  memcpy(b.high + 1, q->high, (size_t)(nd - 1) * 8);
  b.ndim = nd;
  out_axes[0] = 0;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  if (axes[1] < 0) {
    cmx_array in[2] = {x, inputs[1]};
    return give(out, cmx__apply(vt, &b, sizeof b, s, in, 2, shape, nd, dt));
  }
  cmx_array in0[2] = {x, cmx__scalar(0, dt)};
  cmx_array padded = cmx__apply(vt, &b, sizeof b, s, in0, 2, shape, nd, dt);
  cmx_array in1[2] = {cmx__zeros(x->dims, x->ndim, CMX_BOOL, s),
                      cmx__scalar(1, CMX_BOOL)};
  cmx_array border =
      cmx__apply(vt, &b, sizeof b, s, in1, 2, shape, nd, CMX_BOOL);
  int64_t vs[CMX_MAX_NDIM];
  vs[0] = shape[0];
  for (int d = 1; d < nd; d++) vs[d] = 1;
  cmx_array v = cmx__reshape(inputs[1], vs, nd, s);
  return give(out, cmx__where(border, v, padded, s));
}

/* ---------------- Diagonal ----------------
 * vjp places the cotangent back on the diagonal (diag_embed) and restores
 * the axis order; jvp and vmap are Diagonal again. */
CMX__RULE_VJP(cmx__vjp_diagonal) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array a = primals[0];
  int nd = a->ndim, nr = nd - 2;
  cmx_array e = cmx__diag_embed(cotangents[0], a->dims[q->axis1],
                                a->dims[q->axis2], q->offset, s);
  /* e is (rest..., n1, n2); put n1 and n2 back at axis1 and axis2. */
  int perm[CMX_MAX_NDIM], r = 0;
  for (int d = 0; d < nd; d++)
    perm[d] = d == q->axis1 ? nr : d == q->axis2 ? nr + 1 : r++;
  out[0] =
      cmx__rule_keep(cmx__rule_as_like(cmx__transpose(e, perm, nd, s), a, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_diagonal) {
  (void)primals, (void)nin, (void)argnums, (void)nargs, (void)nout;
  out[0] = cmx__rule_keep(
      cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                 cmx_primitive_params_size(p), cmx__rule_stream(p), tangents, 1,
                 outputs[0]->dims, outputs[0]->ndim, tangents[0]->dtype));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* Diagonal of the same planes with the vmapped axis kept in place. */
CMX__RULE_VMAP(cmx__vmap_diagonal) {
  (void)nin, (void)outputs, (void)nout;
  cmx__diagonal_params q =
      *(const cmx__diagonal_params*)cmx_primitive_params(p);
  cmx_array x = inputs[0];
  int bx = axes[0];
  q.axis1 += q.axis1 >= bx;
  q.axis2 += q.axis2 >= bx;
  int64_t off1 = q.offset < 0 ? -q.offset : 0,
          off2 = q.offset > 0 ? q.offset : 0;
  int64_t k1 = x->dims[q.axis1] - off1, k2 = x->dims[q.axis2] - off2;
  int64_t shape[CMX_MAX_NDIM];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++)
    if (d != q.axis1 && d != q.axis2) shape[nd++] = x->dims[d];
  shape[nd++] = k1 < k2 ? (k1 > 0 ? k1 : 0) : (k2 > 0 ? k2 : 0);
  out[0] = cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), &q, sizeof q,
                                     cmx__rule_stream(p), &x, 1, shape, nd,
                                     x->dtype));
  out_axes[0] = bx - (q.axis1 < bx) - (q.axis2 < bx);
  return out[0] ? CMX_OK : cmx_last_status();
}
