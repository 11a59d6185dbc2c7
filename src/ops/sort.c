/* Sort and select ops: sort, argsort, partition, argpartition, topk,
 * searchsorted. Validation and messages follow MLX. */
#include <stdint.h>

#include "ops/ops_internal.h"
#include "primitives/sort.h"

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
      return CMX__FAIL(CMX_ERR_VALUE,
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

static cmx_array partition_like(const char* op,
                                const cmx_primitive_vtable* vt, cmx_array a,
                                int kth, const int* axis, cmx_dtype out_dt,
                                cmx_stream s) {
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

cmx_array cmx__partition(cmx_array a, int kth, const int* axis,
                         cmx_stream s) {
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
  return cmx__apply(&cmx__vt_SearchSorted, &q, sizeof q, s, in, 2,
                    values->dims, values->ndim, CMX_UINT32);
}

cmx_status cmx_sort(cmx_array* out, cmx_array a, const int* axis,
                    cmx_stream s) {
  CMX__PUBLIC(out, "sort", cmx__sort(a, axis, s));
}

cmx_status cmx_argsort(cmx_array* out, cmx_array a, const int* axis,
                       cmx_stream s) {
  CMX__PUBLIC(out, "argsort", cmx__argsort(a, axis, s));
}

cmx_status cmx_partition(cmx_array* out, cmx_array a, int kth,
                         const int* axis, cmx_stream s) {
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
