/* Transform rules of the sort and scan primitives: Sort, ArgSort,
 * Partition, ArgPartition, SearchSorted and Scan.
 *
 * Conventions (MLX's):
 * - sort and partition move elements: the cotangent goes back to where
 *   argsort / argpartition took each element from (a scatter), the
 *   tangent is taken along those indices (a gather);
 * - index outputs (argsort, argpartition, searchsorted) get no gradient;
 * - cumulative max/min give each output's cotangent to the element that
 *   holds the running extreme, the latest one in scan order on ties;
 * - cumulative prod is exact with zeros in the input (the first zero of a
 *   scan is handled on its own, no division by zero);
 * - logcumsumexp works in the log domain on the positive and negative
 *   parts of the cotangent, so large inputs do not overflow;
 * - vmap applies the primitive again along the axis shifted past the
 *   batch axis, which stays where it is.
 */
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/scan.h"
#include "primitives/sort.h"
#include "transforms/rules.h"

/* ---------------- helpers ---------------- */

/* The Scan primitive on a (any dtype the kernel takes, kept). */
static cmx_array scan_of(cmx_array a, int kind, int axis, bool reverse,
                         bool inclusive, cmx_stream s) {
  if (!a) return NULL;
  cmx__scan_params q = {kind, axis, reverse, inclusive};
  return cmx__apply(&cmx__vt_Scan, &q, sizeof q, s, &a, 1, a->dims, a->ndim,
                    a->dtype);
}

/* a shifted by one along axis with a zero coming in: from_later gives
 * out[k] = a[k + 1] (zero last), else out[k] = a[k - 1] (zero first). */
static cmx_array shift1(cmx_array a, int axis, bool from_later, cmx_stream s) {
  if (!a || a->dims[axis] == 0) return a;
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM];
  memcpy(stop, a->dims, (size_t)a->ndim * sizeof *stop);
  if (from_later)
    start[axis] = 1;
  else
    stop[axis] -= 1;
  int64_t lo = from_later ? 0 : 1, hi = from_later ? 1 : 0;
  return cmx__pad(cmx__slice(a, start, stop, NULL, s), &axis, &lo, &hi, 1,
                  cmx__scalar(0, a->dtype), CMX_PAD_CONSTANT, s);
}

/* 0, 1, ..., n-1 along axis (int32), broadcast to x's shape. */
static cmx_array axis_iota(cmx_array x, int axis, cmx_stream s) {
  int64_t shape[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++) shape[d] = 1;
  shape[axis] = x->dims[axis];
  cmx_array r = cmx__arange(0, (double)x->dims[axis], 1, CMX_INT32, s);
  return cmx__broadcast_to(cmx__reshape(r, shape, x->ndim, s), x->dims, x->ndim,
                           s);
}

/* a converted to dt when it differs. */
static cmx_array to_dtype(cmx_array a, cmx_dtype dt, cmx_stream s) {
  return a && a->dtype != dt ? cmx__astype(a, dt, s) : a;
}

/* ---------------- Sort and Partition ---------------- */

/* The indices the primitive's output took its elements from: argsort for
 * Sort, argpartition (same kth) for Partition. */
static cmx_array source_indices(const cmx_primitive* p, cmx_array x,
                                cmx_stream s) {
  const cmx__sort_params* q = cmx_primitive_params(p);
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p) == &cmx__vt_Sort
                                       ? &cmx__vt_ArgSort
                                       : &cmx__vt_ArgPartition;
  /* Indices take no derivative (a higher-order gradient would ask the
   * scatter or gather for one). */
  return cmx__stop_gradient(
      cmx__apply(vt, q, sizeof *q, s, &x, 1, x->dims, x->ndim, CMX_UINT32), s);
}

CMX__RULE_VJP(cmx__vjp_sort) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (nargs == 0) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype)) return CMX_OK;
  int ax = (int)((const cmx__sort_params*)cmx_primitive_params(p))->axis;
  cmx_array r = cmx__put_along_axis(
      cmx__zeros_like(x, s), source_indices(p, x, s), cotangents[0], &ax, s);
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_sort) {
  (void)nin, (void)argnums, (void)nargs, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype)) return CMX_OK;
  int ax = (int)((const cmx__sort_params*)cmx_primitive_params(p))->axis;
  out[0] = cmx__rule_keep(
      cmx__take_along_axis(tangents[0], source_indices(p, x, s), &ax, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_sort_index) {
  (void)p, (void)primals, (void)nin, (void)cotangents, (void)nout;
  (void)argnums, (void)outputs;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_sort_index) {
  (void)p, (void)primals, (void)nin, (void)tangents, (void)argnums;
  (void)nargs, (void)outputs;
  for (int i = 0; i < nout; i++) out[i] = NULL;
  return CMX_OK;
}

CMX__RULE_VMAP(cmx__vmap_sort) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx__sort_params b = *(const cmx__sort_params*)cmx_primitive_params(p);
  cmx_array x = inputs[0];
  if (axes[0] <= b.axis) b.axis++;
  out[0] = cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &x,
                                     1, x->dims, x->ndim, outputs[0]->dtype));
  out_axes[0] = axes[0];
  return out[0] ? CMX_OK : cmx_last_status();
}

/* ---------------- SearchSorted ---------------- */

/* Ranks along axis 1: the inverse permutation of the stable argsort. */
static cmx_array ranks(cmx_array a, cmx_stream s) {
  int one = 1;
  return cmx__argsort(cmx__argsort(a, &one, s), &one, s);
}

/* An unbatched sequence: the primitive on the batched values (elementwise
 * in the values, so their batch axis stays). A batched sequence (B, N)
 * with values (B, M...): by ranks in the kernel's own order. In the
 * stable sort of [values, sequence] a value lands after exactly the
 * sequence elements below it and the values before it in the values' own
 * sort; so its rank there minus its rank among the values is the left
 * insertion point. With [sequence, values] equal sequence elements come
 * first, giving the right insertion point. */
CMX__RULE_VMAP(cmx__vmap_searchsorted) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__searchsorted_params* q = cmx_primitive_params(p);
  cmx_array r;
  if (axes[0] < 0) {
    cmx_array v = inputs[1];
    r = cmx__apply(cmx_primitive_vt(p), q, sizeof *q, s, inputs, 2, v->dims,
                   v->ndim, CMX_UINT32);
    out[0] = cmx__rule_keep(r);
    out_axes[0] = axes[1];
    return out[0] ? CMX_OK : cmx_last_status();
  }
  int64_t B = inputs[0]->dims[axes[0]];
  cmx_array seq = cmx__batch_front(inputs[0], axes[0], B, s);
  cmx_array val = cmx__batch_front(inputs[1], axes[1], B, s);
  if (!seq || !val) return cmx_last_status();
  int64_t N = seq->dims[1], M = B ? val->size / B : 0;
  int64_t flat[2] = {B, M};
  val = cmx__reshape(val, flat, 2, s);
  cmx_array both[2] = {q->right ? seq : val, q->right ? val : seq};
  cmx_array rc = ranks(cmx__concatenate(both, 2, 1, s), s);
  int64_t start[2] = {0, q->right ? N : 0}, stop[2] = {B, start[1] + M};
  r = cmx__subtract(cmx__slice(rc, start, stop, NULL, s), ranks(val, s), s);
  int64_t shape[CMX_MAX_NDIM];
  shape[0] = B;
  memcpy(shape + 1, outputs[0]->dims, (size_t)outputs[0]->ndim * sizeof *shape);
  out[0] = cmx__rule_keep(cmx__reshape(r, shape, outputs[0]->ndim + 1, s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}

/* ---------------- Scan ---------------- */

/* The inclusive scan of x (the output itself when it is inclusive). */
static cmx_array inclusive_of(const cmx__scan_params* q, cmx_array x,
                              cmx_array y, cmx_stream s) {
  return q->inclusive ? y : scan_of(x, q->kind, q->axis, q->reverse, true, s);
}

/* cummax/cummin: for each position of the inclusive scan, the index of
 * the element holding its running extreme, the latest in scan order on
 * ties (the last position so far, in scan order, where x equals the
 * running extreme; NaN, which propagates, owns what follows it). */
static cmx_array scan_owner(const cmx__scan_params* q, cmx_array x,
                            cmx_array incl, cmx_stream s) {
  cmx_array mask = cmx__equal(x, incl, s);
  if (cmx_dtype_is_floating(x->dtype))
    mask = cmx__logical_or(mask, cmx__isnan(x, s), s);
  int64_t n = x->dims[q->axis];
  cmx_array cand =
      cmx__where(mask, axis_iota(x, q->axis, s),
                 cmx__scalar(q->reverse ? (double)n : -1.0, CMX_INT32), s);
  /* Indices take no derivative (see source_indices). */
  return cmx__stop_gradient(
      scan_of(cand, q->reverse ? CMX__SCAN_MIN : CMX__SCAN_MAX, q->axis,
              q->reverse, true, s),
      s);
}

/* cumprod pieces shared by vjp and jvp: the inclusive and exclusive scans
 * and the mask of each scan's first zero. */
typedef struct {
  cmx_array incl, excl, first_zero, with_one;
} prod_parts;

static void prod_split(const cmx__scan_params* q, cmx_array x, cmx_array y,
                       prod_parts* pp, cmx_stream s) {
  cmx_array zero = cmx__scalar(0, x->dtype);
  pp->incl = inclusive_of(q, x, y, s);
  pp->excl =
      q->inclusive ? scan_of(x, q->kind, q->axis, q->reverse, false, s) : y;
  /* a zero of x with no zero before it (an underflowing product is not
   * a zero of x) */
  pp->first_zero = cmx__logical_and(cmx__equal(x, zero, s),
                                    cmx__not_equal(pp->excl, zero, s), s);
  /* the scan again with the first zero read as one */
  pp->with_one =
      scan_of(cmx__where(pp->first_zero, cmx__scalar(1, x->dtype), x, s),
              CMX__SCAN_PROD, q->axis, q->reverse, q->inclusive, s);
}

/* x with zeros read as one (a divisor where x's zeros are masked out). */
static cmx_array nonzero_divisor(cmx_array x, cmx_stream s) {
  return cmx__where(cmx__equal(x, cmx__scalar(0, x->dtype), s),
                    cmx__scalar(1, x->dtype), x, s);
}

/* log|a| where a has the sign (positive or negative), -inf elsewhere;
 * the logarithm only ever sees nonzero values (no infinite slopes). */
static cmx_array log_part(cmx_array a, cmx_array sign_mask, cmx_stream s) {
  cmx_array one = cmx__scalar(1, a->dtype);
  cmx_array la = cmx__log(cmx__where(sign_mask, cmx__abs(a, s), one, s), s);
  return cmx__where(sign_mask, la, cmx__scalar(-INFINITY, a->dtype), s);
}

/* sum over the scan of a_j exp(pre_j) then times exp(post_i), for any sign
 * of a: exp(post + lcse(log a+ + pre)) - exp(post + lcse(log a- + pre)),
 * with the scan's direction and inclusiveness. Every exponent stays at
 * most log|a| plus a log-probability, so nothing overflows. */
static cmx_array signed_lcse(cmx_array a, cmx_array pre, cmx_array post,
                             int axis, bool reverse, bool inclusive,
                             cmx_stream s) {
  if (!a) return NULL; /* a failed intermediate (out of memory) */
  cmx_array zero = cmx__scalar(0, a->dtype);
  cmx_array parts[2] = {cmx__greater(a, zero, s), cmx__less(a, zero, s)};
  cmx_array r[2];
  for (int i = 0; i < 2; i++) {
    cmx_array l = cmx__add(log_part(a, parts[i], s), pre, s);
    l = scan_of(l, CMX__SCAN_LOGADDEXP, axis, reverse, inclusive, s);
    r[i] = cmx__exp(cmx__add(l, post, s), s);
  }
  return cmx__subtract(r[0], r[1], s);
}

/* y with its -inf entries (empty exclusive starts) read as 0, and the
 * mask of those entries. */
static cmx_array finite_lse(cmx_array y, cmx_array* ninf, cmx_stream s) {
  *ninf = cmx__isneginf(y, s);
  return cmx__where(*ninf, cmx__scalar(0, y->dtype), y, s);
}

CMX__RULE_VJP(cmx__vjp_scan) {
  (void)nin, (void)nout, (void)argnums;
  if (nargs == 0) return CMX_OK;
  const cmx__scan_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], g = cotangents[0], y = outputs[0], r = NULL;
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype)) return CMX_OK;
  bool rev = !q->reverse;
  switch (q->kind) {
    case CMX__SCAN_SUM:
      r = scan_of(g, CMX__SCAN_SUM, q->axis, rev, q->inclusive, s);
      break;
    case CMX__SCAN_PROD: {
      /* Before a scan's first zero: sum over later outputs of g*y, over
       * x. At the first zero: the same sum with that zero read as one.
       * After it: zero. */
      prod_parts pp;
      prod_split(q, x, y, &pp, s);
      cmx_array regular =
          cmx__divide(scan_of(cmx__multiply(y, g, s), CMX__SCAN_SUM, q->axis,
                              rev, q->inclusive, s),
                      nonzero_divisor(x, s), s);
      cmx_array at_zero = scan_of(cmx__multiply(pp.with_one, g, s),
                                  CMX__SCAN_SUM, q->axis, rev, q->inclusive, s);
      cmx_array after = cmx__equal(pp.incl, cmx__scalar(0, x->dtype), s);
      r = cmx__where(pp.first_zero, at_zero,
                     cmx__where(after, cmx__scalar(0, x->dtype), regular, s),
                     s);
      break;
    }
    case CMX__SCAN_MAX:
    case CMX__SCAN_MIN: {
      cmx_array owner = scan_owner(q, x, inclusive_of(q, x, y, s), s);
      /* an exclusive output i is the inclusive one just before it */
      cmx_array gi = q->inclusive ? g : shift1(g, q->axis, !q->reverse, s);
      int ax = q->axis;
      r = cmx__scatter_axis("vjp", cmx__zeros_like(x, s), owner, gi, &ax,
                            CMX__SCATTER_ADD, s);
      break;
    }
    case CMX__SCAN_LOGADDEXP: {
      /* dx_j = sum over outputs i fed by x_j of g_i exp(x_j - y_i) */
      cmx_array ninf, ys = finite_lse(y, &ninf, s);
      cmx_array g0 = cmx__where(ninf, cmx__scalar(0, g->dtype), g, s);
      r = signed_lcse(g0, cmx__negative(ys, s), x, q->axis, rev, q->inclusive,
                      s);
      break;
    }
    default:
      return cmx__error(CMX_ERR_VALUE,
                        "[vjp] Not implemented for Scan kind %d.", q->kind);
  }
  out[0] = cmx__rule_keep(to_dtype(r, x->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_JVP(cmx__jvp_scan) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  const cmx__scan_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], t = tangents[0], y = outputs[0], r = NULL;
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype)) return CMX_OK;
  switch (q->kind) {
    case CMX__SCAN_SUM:
      r = scan_of(t, CMX__SCAN_SUM, q->axis, q->reverse, q->inclusive, s);
      break;
    case CMX__SCAN_PROD: {
      /* Outputs before the first zero: y * scan(t / x). Outputs past it:
       * only the zero's own term survives, t_zero * (scan with it as
       * one). */
      prod_parts pp;
      prod_split(q, x, y, &pp, s);
      cmx_array regular = cmx__multiply(
          y,
          scan_of(cmx__divide(t, nonzero_divisor(x, s), s), CMX__SCAN_SUM,
                  q->axis, q->reverse, q->inclusive, s),
          s);
      int ax = q->axis;
      cmx_array tz =
          cmx__sum(cmx__where(pp.first_zero, t, cmx__scalar(0, t->dtype), s),
                   &ax, 1, true, s);
      cmx_array zeroed = cmx__equal(y, cmx__scalar(0, y->dtype), s);
      r = cmx__where(zeroed, cmx__multiply(tz, pp.with_one, s), regular, s);
      break;
    }
    case CMX__SCAN_MAX:
    case CMX__SCAN_MIN: {
      cmx_array owner = scan_owner(q, x, inclusive_of(q, x, y, s), s);
      int ax = q->axis;
      r = cmx__take_along_axis(t, owner, &ax, s);
      if (!q->inclusive) r = shift1(r, q->axis, q->reverse, s);
      break;
    }
    case CMX__SCAN_LOGADDEXP: {
      /* dy_i = sum over inputs j feeding y_i of t_j exp(x_j - y_i) */
      cmx_array ninf, ys = finite_lse(y, &ninf, s);
      r = signed_lcse(t, x, cmx__negative(ys, s), q->axis, q->reverse,
                      q->inclusive, s);
      break;
    }
    default:
      return cmx__error(CMX_ERR_VALUE,
                        "[jvp] Not implemented for Scan kind %d.", q->kind);
  }
  out[0] = cmx__rule_keep(to_dtype(r, y->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_scan) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx__scan_params b = *(const cmx__scan_params*)cmx_primitive_params(p);
  cmx_array x = inputs[0];
  if (axes[0] <= b.axis) b.axis++;
  out[0] = cmx__rule_keep(cmx__apply(cmx_primitive_vt(p), &b, sizeof b, s, &x,
                                     1, x->dims, x->ndim, outputs[0]->dtype));
  out_axes[0] = axes[0];
  return out[0] ? CMX_OK : cmx_last_status();
}
