/* Transform rules of the reductions: Reduce (sum, prod, min, max, mean,
 * all, any), ArgReduce, LogSumExp, Softmax and Var.
 *
 * Conventions (MLX's):
 * - integer and bool inputs get no gradient (NULL), nor do all/any and the
 *   indices of argmin/argmax;
 * - prod's gradient is the product of the other elements of each group,
 *   built from two exclusive cumulative products, so zeros in the input
 *   are exact (no division);
 * - min/max share the cotangent equally between tied extremes;
 * - vmap reduces the same axes of the batched input, leaving the batch
 *   axis where it is.
 * The rules are written with differentiable ops, so they compose (the
 * second derivative of softmax goes through the softmax rule, and so on).
 */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/reduce.h"
#include "transforms/rules.h"

/* ---------------- helpers ---------------- */

/* x's shape with the listed axes set to 1 (the keepdims shape). */
static void keep_shape(cmx_array x, const int32_t* axes, int n,
                       int64_t* shape) {
  memcpy(shape, x->dims, (size_t)x->ndim * sizeof *shape);
  for (int i = 0; i < n; i++) shape[axes[i]] = 1;
}

/* A reduction's output (or its cotangent) c with the reduced axes of x
 * kept as size 1, so that it broadcasts against x. */
static cmx_array as_keep(cmx_array c, cmx_array x, const int32_t* axes, int n,
                         cmx_stream s) {
  int64_t shape[CMX_MAX_NDIM];
  keep_shape(x, axes, n, shape);
  return cmx__reshape(c, shape, x->ndim, s);
}

/* Sums t over the axes into the shape of out (a reduction of t's shape,
 * with or without the size-1 axes). */
static cmx_array sum_like(cmx_array t, const int32_t* axes, int n,
                          cmx_array out, cmx_stream s) {
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < n; i++) ax[i] = axes[i];
  cmx_array r = cmx__sum(t, ax, n, true, s);
  return cmx__reshape(r, out->dims, out->ndim, s);
}

/* The number of elements reduced into each output. */
static int64_t group_size(cmx_array x, const int32_t* axes, int n) {
  int64_t c = 1;
  for (int i = 0; i < n; i++) c *= x->dims[axes[i]];
  return c;
}

/* a converted to dt when it differs (rules return the primal's dtype). */
static cmx_array to_dtype(cmx_array a, cmx_dtype dt, cmx_stream s) {
  return a && a->dtype != dt ? cmx__astype(a, dt, s) : a;
}

/* Product of the other elements of each reduced group of x, in x's shape:
 * exclusive cumulative products from both ends, multiplied. Several axes
 * are moved last and merged first, then moved back. */
static cmx_array prod_others(cmx_array x, const int32_t* axes, int n,
                             cmx_stream s) {
  if (n == 1) {
    int ax = axes[0];
    cmx_array lo = cmx__cumprod(x, &ax, false, false, s);
    cmx_array hi = cmx__cumprod(x, &ax, true, false, s);
    return cmx__multiply(lo, hi, s);
  }
  bool red[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < n; i++) red[axes[i]] = true;
  int perm[CMX_MAX_NDIM], inv[CMX_MAX_NDIM], k = 0;
  int64_t flat[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++)
    if (!red[d]) {
      flat[k] = x->dims[d];
      perm[k++] = d;
    }
  int nkept = k;
  for (int i = 0; i < n; i++) perm[k++] = axes[i];
  for (int d = 0; d < x->ndim; d++) inv[perm[d]] = d;
  flat[nkept] = group_size(x, axes, n);
  cmx_array xt = cmx__transpose(x, perm, x->ndim, s);
  if (!xt) return NULL;
  int64_t tshape[CMX_MAX_NDIM];
  memcpy(tshape, xt->dims, (size_t)xt->ndim * sizeof *tshape);
  cmx_array r = prod_others(cmx__reshape(xt, flat, nkept + 1, s),
                            (int32_t[]){nkept}, 1, s);
  return cmx__transpose(cmx__reshape(r, tshape, x->ndim, s), inv, x->ndim, s);
}

/* Weights of min/max: 1/count on the elements equal to their group's
 * extreme (out), 0 elsewhere, in x's dtype. */
static cmx_array extreme_weights(cmx_array x, cmx_array out,
                                 const int32_t* axes, int n, cmx_stream s) {
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < n; i++) ax[i] = axes[i];
  cmx_array mask = cmx__equal(x, as_keep(out, x, axes, n, s), s);
  cmx_array count = cmx__sum(mask, ax, n, true, s);
  return cmx__divide(cmx__astype(mask, x->dtype, s),
                     cmx__astype(count, x->dtype, s), s);
}

/* The vjp of min/max for the cotangent c (kept dims): c / count on the
 * elements equal to their group's extreme, 0 elsewhere. Written as
 * where(mask, c / count, 0 * (c / count)) with the division on the small
 * reduced shape: the full-size work is one comparison and one select (a
 * 2x2 max pool's gradient in three passes instead of six), and NaN and inf
 * propagate as in extreme_weights(x) * c (a group with no match, from a
 * NaN, gets 0 * inf = NaN everywhere). */
static cmx_array extreme_cotangent(cmx_array x, cmx_array out, cmx_array c,
                                   const int32_t* axes, int n, cmx_stream s) {
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < n; i++) ax[i] = axes[i];
  cmx_array mask = cmx__equal(x, as_keep(out, x, axes, n, s), s);
  cmx_array count = cmx__astype(cmx__sum(mask, ax, n, true, s), x->dtype, s);
  cmx_array share = cmx__divide(c, count, s);
  cmx_array off = cmx__multiply(share, cmx__scalar(0.0, x->dtype), s);
  return cmx__where(mask, cmx__broadcast_to(share, x->dims, x->ndim, s),
                    cmx__broadcast_to(off, x->dims, x->ndim, s), s);
}

/* ---------------- Reduce ---------------- */

CMX__RULE_VJP(cmx__vjp_reduce) {
  (void)nin, (void)nout, (void)argnums;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], r = NULL;
  if (nargs == 0) return CMX_OK;
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype) || q->kind == CMX__RED_AND ||
      q->kind == CMX__RED_OR)
    return CMX_OK; /* no gradient */
  cmx_array c = as_keep(cotangents[0], x, q->axes, q->naxes, s);
  switch (q->kind) {
    case CMX__RED_SUM:
      r = cmx__broadcast_to(c, x->dims, x->ndim, s);
      break;
    case CMX__RED_MEAN: {
      int64_t n = group_size(x, q->axes, q->naxes);
      r = cmx__multiply(cmx__broadcast_to(c, x->dims, x->ndim, s),
                        cmx__scalar(n ? 1.0 / (double)n : 0.0, x->dtype), s);
      break;
    }
    case CMX__RED_PROD:
      r = cmx__multiply(prod_others(x, q->axes, q->naxes, s), c, s);
      break;
    case CMX__RED_MIN:
    case CMX__RED_MAX:
      r = extreme_cotangent(x, outputs[0], c, q->axes, q->naxes, s);
      break;
    default:
      return cmx__error(CMX_ERR_VALUE, "[vjp] Not implemented for Reduce(%s).",
                        cmx__reduce_kind_name(q->kind));
  }
  out[0] = cmx__rule_keep(to_dtype(r, x->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_reduce) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], t = tangents[0], y = outputs[0], r = NULL;
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype) || q->kind == CMX__RED_AND ||
      q->kind == CMX__RED_OR)
    return CMX_OK;
  switch (q->kind) {
    case CMX__RED_SUM:
      r = sum_like(t, q->axes, q->naxes, y, s);
      break;
    case CMX__RED_MEAN: {
      int64_t n = group_size(x, q->axes, q->naxes);
      r = cmx__multiply(sum_like(t, q->axes, q->naxes, y, s),
                        cmx__scalar(n ? 1.0 / (double)n : 0.0, x->dtype), s);
      break;
    }
    case CMX__RED_PROD:
      r = sum_like(cmx__multiply(t, prod_others(x, q->axes, q->naxes, s), s),
                   q->axes, q->naxes, y, s);
      break;
    case CMX__RED_MIN:
    case CMX__RED_MAX:
      r = sum_like(
          cmx__multiply(t, extreme_weights(x, y, q->axes, q->naxes, s), s),
          q->axes, q->naxes, y, s);
      break;
    default:
      return cmx__error(CMX_ERR_VALUE, "[jvp] Not implemented for Reduce(%s).",
                        cmx__reduce_kind_name(q->kind));
  }
  out[0] = cmx__rule_keep(to_dtype(r, y->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* The shape of reducing the batched input x (batch axis bax) over the
 * shifted axes ax (sorted); keepdims when the traced output kept them.
 * Returns the output's rank and writes its batch axis. */
static int batched_reduce_shape(cmx_array x, int bax, const int32_t* ax, int n,
                                bool keepdims, int64_t* shape, int* out_axis) {
  bool red[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < n; i++) red[ax[i]] = true;
  int nd = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (d == bax) *out_axis = nd;
    if (!red[d])
      shape[nd++] = x->dims[d];
    else if (keepdims)
      shape[nd++] = 1;
  }
  return nd;
}

/* Shifts reduced axes (of the unbatched input) past the batch axis. */
static void shift_axes(int32_t* ax, int n, int bax) {
  for (int i = 0; i < n; i++)
    if (ax[i] >= bax) ax[i]++;
}

/* A reduction-like primitive with parameters `params` (a copy of p's, with
 * *naxes and axes inside it) applied again to the batched input, over the
 * shifted axes. `same_shape`: the output has the input's shape (Softmax). */
static cmx_status vmap_axes(const cmx_primitive* p, void* params,
                            int32_t* axes_in_params, int naxes, bool same_shape,
                            const cmx_array* inputs, const int* axes,
                            const cmx_array* outputs, cmx_array* out,
                            int* out_axes) {
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = inputs[0];
  int bax = axes[0];
  shift_axes(axes_in_params, naxes, bax);
  int64_t shape[CMX_MAX_NDIM];
  int nd, oax = bax;
  if (same_shape) {
    nd = x->ndim;
    memcpy(shape, x->dims, (size_t)nd * sizeof *shape);
  } else {
    bool keepdims = outputs[0]->ndim == x->ndim - 1;
    nd = batched_reduce_shape(x, bax, axes_in_params, naxes, keepdims, shape,
                              &oax);
  }
  out[0] = cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), params,
                                     cmx_primitive_params_size(p), s, &x, 1,
                                     shape, nd, outputs[0]->dtype));
  out_axes[0] = oax;
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_reduce) {
  (void)nin, (void)nout;
  cmx__reduce_params b = *(const cmx__reduce_params*)cmx_primitive_params(p);
  return vmap_axes(p, &b, b.axes, b.naxes, false, inputs, axes, outputs, out,
                   out_axes);
}

/* ---------------- ArgReduce ---------------- */

/* No gradient: the output holds indices. */
CMX__RULE_VJP(cmx__vjp_argreduce) {
  (void)p, (void)primals, (void)nin, (void)cotangents, (void)nout;
  (void)argnums, (void)outputs;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_argreduce) {
  (void)p, (void)primals, (void)nin, (void)tangents, (void)argnums;
  (void)nargs, (void)outputs;
  for (int i = 0; i < nout; i++) out[i] = NULL;
  return CMX_OK;
}

/* Along an axis: the same axis of the batched input. Over the flattened
 * array (axis -1): batch first, the rest flattened, reduced along axis 1,
 * reshaped to the batched output. */
CMX__RULE_VMAP(cmx__vmap_argreduce) {
  (void)nin, (void)nout;
  const cmx__argreduce_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = inputs[0], r;
  int bax = axes[0];
  bool keepdims = outputs[0]->ndim == x->ndim - 1;
  if (q->axis >= 0) {
    int ax = q->axis + (q->axis >= bax);
    r = q->kind == CMX__ARG_MIN ? cmx__argmin(x, &ax, keepdims, s)
                                : cmx__argmax(x, &ax, keepdims, s);
    out_axes[0] = keepdims || q->axis >= bax ? bax : bax - 1;
  } else {
    int64_t B = x->dims[bax], flat[2] = {B, -1}, shape[CMX_MAX_NDIM];
    int one = 1;
    cmx_array f = cmx__reshape(cmx__batch_front(x, bax, B, s), flat, 2, s);
    r = q->kind == CMX__ARG_MIN ? cmx__argmin(f, &one, false, s)
                                : cmx__argmax(f, &one, false, s);
    shape[0] = B;
    memcpy(shape + 1, outputs[0]->dims,
           (size_t)outputs[0]->ndim * sizeof *shape);
    r = cmx__reshape(r, shape, outputs[0]->ndim + 1, s);
    out_axes[0] = 0;
  }
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

/* ---------------- LogSumExp ---------------- */

/* d logsumexp = softmax over the same axes. */
CMX__RULE_VJP(cmx__vjp_logsumexp) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (nargs == 0) return CMX_OK;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < q->naxes; i++) ax[i] = q->axes[i];
  cmx_array sm = cmx__softmax(x, ax, q->naxes, true, s);
  cmx_array c = as_keep(cotangents[0], x, q->axes, q->naxes, s);
  out[0] = cmx__rule_keep(to_dtype(cmx__multiply(sm, c, s), x->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_logsumexp) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < q->naxes; i++) ax[i] = q->axes[i];
  cmx_array sm = cmx__softmax(primals[0], ax, q->naxes, true, s);
  cmx_array r = sum_like(cmx__multiply(tangents[0], sm, s), q->axes, q->naxes,
                         outputs[0], s);
  out[0] = cmx__rule_keep(to_dtype(r, outputs[0]->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_axes_reduce) {
  (void)nin, (void)nout;
  cmx__axes_params b = *(const cmx__axes_params*)cmx_primitive_params(p);
  return vmap_axes(p, &b, b.axes, b.naxes, false, inputs, axes, outputs, out,
                   out_axes);
}

/* ---------------- Softmax ---------------- */

/* With s = softmax(x): d s = s * (t - sum(s * t)) over the axes, the same
 * map for cotangents (it is symmetric). */
static cmx_array softmax_apply(const cmx__axes_params* q, cmx_array sm,
                               cmx_array t, cmx_stream s) {
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < q->naxes; i++) ax[i] = q->axes[i];
  cmx_array st = cmx__multiply(sm, t, s);
  return cmx__subtract(
      st, cmx__multiply(sm, cmx__sum(st, ax, q->naxes, true, s), s), s);
}

CMX__RULE_VJP(cmx__vjp_softmax) {
  (void)nin, (void)nout, (void)argnums;
  if (nargs == 0) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r =
      softmax_apply(cmx_primitive_params(p), outputs[0], cotangents[0], s);
  out[0] = cmx__rule_keep(to_dtype(r, primals[0]->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_softmax) {
  (void)nin, (void)argnums, (void)nargs, (void)nout, (void)primals;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r =
      softmax_apply(cmx_primitive_params(p), outputs[0], tangents[0], s);
  out[0] = cmx__rule_keep(to_dtype(r, outputs[0]->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_softmax) {
  (void)nin, (void)nout;
  cmx__axes_params b = *(const cmx__axes_params*)cmx_primitive_params(p);
  return vmap_axes(p, &b, b.axes, b.naxes, true, inputs, axes, outputs, out,
                   out_axes);
}

/* ---------------- Var ---------------- */

/* The derivative of var/std as a factor of x's shape: 2 (x - mean) / (N -
 * ddof) for var, (x - mean) / ((N - ddof) std) for std. N - ddof below
 * zero counts as zero (as the kernel), giving infinities. */
static cmx_array var_factor(const cmx__axes_params* q, cmx_array x, cmx_array y,
                            cmx_stream s) {
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < q->naxes; i++) ax[i] = q->axes[i];
  double denom = (double)group_size(x, q->axes, q->naxes) - q->ddof;
  if (denom < 0) denom = 0;
  cmx_array d = cmx__subtract(x, cmx__mean(x, ax, q->naxes, true, s), s);
  if (!q->sqrt) return cmx__multiply(d, cmx__scalar(2.0 / denom, x->dtype), s);
  cmx_array sd = cmx__multiply(as_keep(y, x, q->axes, q->naxes, s),
                               cmx__scalar(denom, x->dtype), s);
  return cmx__divide(d, sd, s);
}

static cmx_status var_complex(const char* mode) {
  return cmx__error(CMX_ERR_TYPE,
                    "[%s] Var/Std: complex inputs are not supported.", mode);
}

CMX__RULE_VJP(cmx__vjp_var) {
  (void)nin, (void)nout, (void)argnums;
  if (nargs == 0) return CMX_OK;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  if (cmx_dtype_is_complex(x->dtype)) return var_complex("vjp");
  cmx_array c = as_keep(cotangents[0], x, q->axes, q->naxes, s);
  cmx_array r = cmx__multiply(var_factor(q, x, outputs[0], s), c, s);
  out[0] = cmx__rule_keep(to_dtype(r, x->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_var) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  if (cmx_dtype_is_complex(x->dtype)) return var_complex("jvp");
  cmx_array r =
      sum_like(cmx__multiply(tangents[0], var_factor(q, x, outputs[0], s), s),
               q->axes, q->naxes, outputs[0], s);
  out[0] = cmx__rule_keep(to_dtype(r, outputs[0]->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}
