/* Sort and select ops: sort, argsort, partition, argpartition, topk,
 * searchsorted. Validation and messages follow MLX. */
#include "primitives/sort.h"

#include <stdint.h>
#include <string.h>

#include "ops/ops_internal.h"

/* The array to work on and its axis: a with *axis normalised, or the
 * flattened a with axis 0 when axis is NULL. Axes longer than uint32
 * indices can address are refused (argsort's indices are uint32). */
static cmx_array along(const char* op, cmx_array a, const int* axis, int* ax,
                       cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  if (!axis) {
    int64_t n = a->size;
    *ax = 0;
    a = a->ndim == 1 ? a : cmx__reshape(a, &n, 1, s);
    if (!a) return NULL;
  } else {
    int v = *axis;
    if (v < -a->ndim || v >= a->ndim)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[%s] Received invalid axis %d for array with %d "
                       "dimensions.",
                       op, v, a->ndim);
    *ax = v < 0 ? v + a->ndim : v;
  }
  if (a->dims[*ax] > (int64_t)UINT32_MAX)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Axis of size %lld is too large for uint32 "
                     "indices.",
                     op, (long long)a->dims[*ax]);
  return a;
}

static cmx_array sort_like(const char* op, const cmx_primitive_vtable* vt,
                           cmx_array a, const int* axis, cmx_dtype out_dt,
                           cmx_stream s) {
  int ax;
  a = along(op, a, axis, &ax, s);
  if (!a) return NULL;
  cmx__sort_params q = {ax, 0};
  return cmx__apply(vt, &q, sizeof q, s, &a, 1, a->dims, a->ndim,
                    out_dt == CMX_DTYPE_AUTO ? a->dtype : out_dt);
}

cmx_array cmx__sort(cmx_array a, const int* axis, cmx_stream s) {
  return sort_like("sort", &cmx__vt_Sort, a, axis, CMX_DTYPE_AUTO, s);
}

cmx_array cmx__argsort(cmx_array a, const int* axis, cmx_stream s) {
  return sort_like("argsort", &cmx__vt_ArgSort, a, axis, CMX_UINT32, s);
}

static cmx_array partition_like(const char* op, const cmx_primitive_vtable* vt,
                                cmx_array a, int kth, const int* axis,
                                cmx_dtype out_dt, cmx_stream s) {
  int ax;
  cmx_array x = along(op, a, axis, &ax, s);
  if (!x) return NULL;
  int64_t n = x->dims[ax], k = kth < 0 ? kth + n : kth;
  if (k < 0 || k >= n) {
    char sh[256];
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Received invalid kth %d along axis %d for array "
                     "with shape %s.",
                     op, kth, axis ? *axis : 0,
                     cmx__shape_str(x->dims, x->ndim, sh, sizeof sh));
  }
  cmx__sort_params q = {ax, k};
  return cmx__apply(vt, &q, sizeof q, s, &x, 1, x->dims, x->ndim,
                    out_dt == CMX_DTYPE_AUTO ? x->dtype : out_dt);
}

cmx_array cmx__partition(cmx_array a, int kth, const int* axis, cmx_stream s) {
  return partition_like("partition", &cmx__vt_Partition, a, kth, axis,
                        CMX_DTYPE_AUTO, s);
}

cmx_array cmx__argpartition(cmx_array a, int kth, const int* axis,
                            cmx_stream s) {
  return partition_like("argpartition", &cmx__vt_ArgPartition, a, kth, axis,
                        CMX_UINT32, s);
}

/* MLX's composite: the last k elements of partition(a, -k). */
cmx_array cmx__topk(cmx_array a, int k, const int* axis, cmx_stream s) {
  int ax;
  cmx_array x = along("topk", a, axis, &ax, s);
  if (!x) return NULL;
  int64_t n = x->dims[ax];
  if (k < 0 || k > n) {
    char sh[256];
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[topk] Received invalid k=%d along axis %d for array "
                     "with shape %s.",
                     k, axis ? *axis : 0,
                     cmx__shape_str(x->dims, x->ndim, sh, sizeof sh));
  }
  if (k == n) return x; /* the whole axis, as it is */
  int axn = ax;
  cmx_array part = cmx__partition(x, -k, &axn, s);
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++) {
    start[d] = 0;
    stop[d] = x->dims[d];
  }
  start[ax] = n - k;
  return cmx__slice(part, start, stop, NULL, s);
}

cmx_array cmx__searchsorted(cmx_array sorted_sequence, cmx_array values,
                            bool right, cmx_stream s) {
  if (!CMX__ARGS("searchsorted", sorted_sequence, values)) return NULL;
  if (sorted_sequence->ndim != 1)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[searchsorted] sorted_sequence must be 1-dimensional, "
                     "got %d dimensions.",
                     sorted_sequence->ndim);
  if (sorted_sequence->size > (int64_t)UINT32_MAX)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[searchsorted] Sequence of size %lld is too large for "
                     "uint32 indices.",
                     (long long)sorted_sequence->size);
  cmx_array both[2] = {sorted_sequence, values};
  cmx_dtype dt = cmx__result_type(both, 2);
  cmx_array in[2] = {cmx__as_dtype(sorted_sequence, dt, s),
                     cmx__as_dtype(values, dt, s)};
  cmx__searchsorted_params q = {right ? 1 : 0};
  return cmx__apply(&cmx__vt_SearchSorted, &q, sizeof q, s, in, 2, values->dims,
                    values->ndim, CMX_UINT32);
}

cmx_status cmx_sort(cmx_array* out, cmx_array a, const int* axis,
                    cmx_stream s) {
  CMX__PUBLIC(out, "sort", cmx__sort(a, axis, s));
}

cmx_status cmx_argsort(cmx_array* out, cmx_array a, const int* axis,
                       cmx_stream s) {
  CMX__PUBLIC(out, "argsort", cmx__argsort(a, axis, s));
}

cmx_status cmx_partition(cmx_array* out, cmx_array a, int kth, const int* axis,
                         cmx_stream s) {
  CMX__PUBLIC(out, "partition", cmx__partition(a, kth, axis, s));
}

cmx_status cmx_argpartition(cmx_array* out, cmx_array a, int kth,
                            const int* axis, cmx_stream s) {
  CMX__PUBLIC(out, "argpartition", cmx__argpartition(a, kth, axis, s));
}

cmx_status cmx_topk(cmx_array* out, cmx_array a, int k, const int* axis,
                    cmx_stream s) {
  CMX__PUBLIC(out, "topk", cmx__topk(a, k, axis, s));
}

cmx_status cmx_searchsorted(cmx_array* out, cmx_array sorted_sequence,
                            cmx_array values, bool right, cmx_stream s) {
  CMX__PUBLIC(out, "searchsorted",
              cmx__searchsorted(sorted_sequence, values, right, s));
}

/* ---------------- reductions over sorted values ---------------- */
/* The reduced axes moved last and merged: a of shape (kept..., count);
 * writes the kept shape, the keepdims shape and the count. */
static cmx_array gather_axes(const char* op, cmx_array a, const int* axes,
                             int naxes, int64_t* kept, int* nkept,
                             int64_t* keep_shape, int64_t* count,
                             cmx_stream s) {
  int ax[CMX_MAX_NDIM], perm[CMX_MAX_NDIM];
  int nax = cmx__norm_axes(op, axes, naxes, a->ndim, ax);
  if (nax < 0) return NULL;
  bool reduced[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < nax; i++) reduced[ax[i]] = true;
  int k = 0;
  *count = 1;
  for (int d = 0; d < a->ndim; d++) {
    keep_shape[d] = reduced[d] ? 1 : a->dims[d];
    if (!reduced[d]) {
      kept[k] = a->dims[d];
      perm[k++] = d;
    } else {
      *count *= a->dims[d];
    }
  }
  *nkept = k;
  for (int i = 0; i < nax; i++) perm[k + i] = ax[i];
  cmx_array t = cmx__transpose(a, perm, a->ndim, s);
  kept[k] = *count;
  return cmx__reshape(t, kept, k + 1, s);
}

cmx_array cmx__median(cmx_array a, const int* axes, int naxes, bool keepdims,
                      cmx_stream s) {
  if (!CMX__ARGS("median", a)) return NULL;
  int64_t kept[CMX_MAX_NDIM + 1], keep_shape[CMX_MAX_NDIM], count;
  int nkept;
  cmx_array x = gather_axes("median", a, axes, naxes, kept, &nkept, keep_shape,
                            &count, s);
  if (!x) return NULL;
  if (count == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[median] Cannot compute the median of an empty "
                     "slice.");
  cmx_dtype odt = cmx_dtype_is_inexact(a->dtype) ? a->dtype : CMX_FLOAT32;
  /* float16/bfloat16 average in float32, rounding once */
  cmx_dtype cdt = odt == CMX_FLOAT16 || odt == CMX_BFLOAT16 ? CMX_FLOAT32 : odt;
  int last = nkept;
  cmx_array sorted = cmx__sort(x, &last, s);
  int64_t start[CMX_MAX_NDIM + 1] = {0}, stop[CMX_MAX_NDIM + 1];
  memcpy(stop, kept, sizeof(int64_t) * (size_t)(nkept + 1));
  start[nkept] = (count - 1) / 2;
  stop[nkept] = start[nkept] + 1;
  cmx_array mid =
      cmx__as_dtype(cmx__slice(sorted, start, stop, NULL, s), cdt, s);
  if (count % 2 == 0) { /* halves first: no overflow near the maximum */
    start[nkept] = count / 2;
    stop[nkept] = count / 2 + 1;
    cmx_array hi =
        cmx__as_dtype(cmx__slice(sorted, start, stop, NULL, s), cdt, s);
    cmx_array half = cmx__scalar(0.5, cdt);
    mid = cmx__add(cmx__multiply(mid, half, s), cmx__multiply(hi, half, s), s);
  }
  if (cmx_dtype_is_inexact(a->dtype)) { /* NaNs sort last: any NaN wins */
    start[nkept] = count - 1;
    stop[nkept] = count;
    cmx_array top =
        cmx__as_dtype(cmx__slice(sorted, start, stop, NULL, s), cdt, s);
    mid = cmx__where(cmx__isnan(top, s), top, mid, s);
  }
  mid = cmx__as_dtype(mid, odt, s);
  return keepdims ? cmx__reshape(mid, keep_shape, a->ndim, s)
                  : cmx__reshape(mid, kept, nkept, s);
}

/* sum(a != 0) over axes, as int32 (MLX). */
cmx_array cmx__count_nonzero(cmx_array a, const int* axes, int naxes,
                             bool keepdims, cmx_stream s) {
  if (!CMX__ARGS("count_nonzero", a)) return NULL;
  int ax[CMX_MAX_NDIM];
  if (cmx__norm_axes("count_nonzero", axes, naxes, a->ndim, ax) < 0)
    return NULL;
  cmx_array nz = cmx__not_equal(a, cmx__scalar(0, a->dtype), s);
  return cmx__as_dtype(cmx__sum(nz, axes, naxes, keepdims, s), CMX_INT32, s);
}

cmx_status cmx_median(cmx_array* out, cmx_array a, const int* axes, int naxes,
                      bool keepdims, cmx_stream s) {
  CMX__PUBLIC(out, "median", cmx__median(a, axes, naxes, keepdims, s));
}

cmx_status cmx_count_nonzero(cmx_array* out, cmx_array a, const int* axes,
                             int naxes, bool keepdims, cmx_stream s) {
  CMX__PUBLIC(out, "count_nonzero",
              cmx__count_nonzero(a, axes, naxes, keepdims, s));
}
