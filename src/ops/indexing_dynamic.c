/* Indexing whose positions come from data: slices whose start indices are
 * an array (MLX's slice / slice_update with array starts), lazy and
 * differentiable as gathers and scatters, and boolean masks in an index
 * (a[mask]), whose true elements become integer coordinates (the mask is
 * evaluated: the result's shape depends on it).
 *
 * Start indices count from the end when negative, and a window is clamped
 * to lie inside its axis (XLA's dynamic_slice rule; MLX reads out of
 * bounds there), so no start value can make an access invalid. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

/* The window's start along each sliced axis as naxes 0-d int64 arrays
 * (scope-owned, in idx): start[i] wrapped when negative and clamped to
 * [0, dim - sizes[i]] of axis axes[i] (normalised in place). */
static bool window_starts(const char* op, cmx_array a, cmx_array start,
                          int* axes, int naxes, const int64_t* sizes,
                          cmx_array* idx, cmx_stream s) {
  if (!cmx_dtype_is_integer(start->dtype) || start->ndim > 1 ||
      cmx__shape_size(start->dims, start->ndim) != naxes) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] start_indices must be a 0-d or 1-d integer array with "
               "one entry per sliced axis (%d), got a %d-d %s array of %lld "
               "entries.",
               op, naxes, start->ndim, cmx_dtype_name(start->dtype),
               (long long)cmx__shape_size(start->dims, start->ndim));
    return false;
  }
  int64_t dims[CMX_MAX_NDIM], limits[CMX_MAX_NDIM];
  for (int i = 0; i < naxes; i++) {
    if (!cmx__norm_axis(op, &axes[i], a->ndim)) return false;
    for (int j = 0; j < i; j++)
      if (axes[j] == axes[i]) {
        cmx__error(CMX_ERR_VALUE, "[%s] Repeated axis %d.", op, axes[i]);
        return false;
      }
    dims[i] = a->dims[axes[i]];
    if (sizes[i] < 0 || sizes[i] > dims[i]) {
      cmx__error(CMX_ERR_VALUE,
                 "[%s] A window of %lld elements does not fit axis %d of "
                 "size %lld.",
                 op, (long long)sizes[i], axes[i], (long long)dims[i]);
      return false;
    }
    limits[i] = dims[i] - sizes[i];
  }
  /* Per axis, with 0-d constants: the same start written into several
   * arrays (a KV cache's write in every layer) gives the same small
   * graph each time, which compile's merge_scalars and CSE reduce to
   * one (1-d constant arrays would be distinct inputs each time). */
  int64_t n = naxes;
  cmx_array st = cmx__reshape(cmx__astype(start, CMX_INT64, s), &n, 1, s);
  cmx_array zero = cmx__scalar(0, CMX_INT64);
  for (int i = 0; i < naxes; i++) {
    int64_t b = i, e = i + 1;
    cmx_array si = cmx__reshape(cmx__slice(st, &b, &e, NULL, s), NULL, 0, s);
    si = cmx__where(cmx__less(si, zero, s),
                    cmx__add(si, cmx__scalar((double)dims[i], CMX_INT64), s),
                    si, s);
    idx[i] = cmx__clip(si, zero, cmx__scalar((double)limits[i], CMX_INT64), s);
    if (!idx[i]) return false;
  }
  return true;
}

static cmx_array slice_dynamic(cmx_array a, cmx_array start, const int* axes,
                               int naxes, const int64_t* sizes, cmx_stream s) {
  const char* op = "slice";
  if (!CMX__ARGS(op, a, start)) return NULL;
  if (naxes < 0 || naxes > a->ndim || (naxes && (!axes || !sizes)))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] axes and slice_size must have one entry per "
                     "sliced axis.",
                     op);
  int ax[CMX_MAX_NDIM];
  cmx_array idx[CMX_MAX_NDIM];
  memcpy(ax, axes, (size_t)naxes * sizeof *ax);
  if (!window_starts(op, a, start, ax, naxes, sizes, idx, s)) return NULL;
  int64_t window[CMX_MAX_NDIM];
  memcpy(window, a->dims, (size_t)a->ndim * sizeof *window);
  for (int i = 0; i < naxes; i++) window[ax[i]] = sizes[i];
  if (naxes == 0) return cmx__ref(a);
  return cmx__gather(a, idx, naxes, ax, naxes, window, a->ndim, s);
}

static cmx_array slice_update_dynamic(cmx_array a, cmx_array update,
                                      cmx_array start, const int* axes,
                                      int naxes, cmx_stream s) {
  const char* op = "slice_update";
  if (!CMX__ARGS(op, a, update, start)) return NULL;
  if (naxes < 0 || naxes > a->ndim || (naxes && !axes))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] axes must have one entry per sliced axis.", op);
  if (update->ndim > a->ndim)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] The update has more dimensions (%d) than the "
                     "array (%d).",
                     op, update->ndim, a->ndim);
  /* The window has the update's shape, right-aligned (1 on leading axes
   * the update lacks); it starts at 0 on the axes not sliced. */
  int64_t window[CMX_MAX_NDIM], sizes[CMX_MAX_NDIM] = {0};
  int lead = a->ndim - update->ndim;
  for (int d = 0; d < a->ndim; d++)
    window[d] = d < lead ? 1 : update->dims[d - lead];
  int ax[CMX_MAX_NDIM];
  for (int i = 0; i < naxes; i++) {
    ax[i] = axes[i];
    if (!cmx__norm_axis(op, &ax[i], a->ndim)) return NULL;
    sizes[i] = window[ax[i]];
  }
  for (int d = 0; d < a->ndim; d++)
    if (window[d] > a->dims[d])
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] The update of extent %lld does not fit axis %d "
                       "of size %lld.",
                       op, (long long)window[d], d, (long long)a->dims[d]);
  cmx_array idx[CMX_MAX_NDIM];
  if (!window_starts(op, a, start, ax, naxes, sizes, idx, s)) return NULL;
  cmx_array upd = cmx__reshape(update, window, a->ndim, s);
  if (naxes == 0) { /* the window starts at 0 on every axis */
    int64_t zeros[CMX_MAX_NDIM] = {0};
    return cmx__slice_update(a, upd, zeros, window, NULL, s);
  }
  return cmx__scatter(a, idx, naxes, upd, ax, naxes, s);
}

cmx_status cmx_slice_dynamic(cmx_array* out, cmx_array a, cmx_array start,
                             const int* axes, int naxes,
                             const int64_t* slice_size, cmx_stream s) {
  CMX__PUBLIC(out, "slice",
              slice_dynamic(a, start, axes, naxes, slice_size, s));
}

cmx_status cmx_slice_update_dynamic(cmx_array* out, cmx_array a,
                                    cmx_array update, cmx_array start,
                                    const int* axes, int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "slice_update",
              slice_update_dynamic(a, update, start, axes, naxes, s));
}

/* ---------------- boolean masks ---------------- */
/* Visits the elements of m in row-major order: calls f(ctx, e, idx) with
 * the element's coordinates for each true element. */
static void for_true(cmx_array m, const uint8_t* p,
                     void (*f)(void*, int64_t, const int64_t*), void* ctx) {
  int nd = m->ndim;
  const int64_t* str = cmx_array_strides(m);
  int64_t size = cmx__shape_size(m->dims, nd), idx[CMX_MAX_NDIM] = {0};
  for (int64_t e = 0, c = 0; e < size; e++) {
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * str[d];
    if (p[off]) f(ctx, c++, idx);
    for (int d = nd - 1; d >= 0 && ++idx[d] == m->dims[d]; d--) idx[d] = 0;
  }
}

static void count_true(void* ctx, int64_t c, const int64_t* idx) {
  (void)idx;
  *(int64_t*)ctx = c + 1;
}

typedef struct {
  int nd;
  int64_t count;
  int64_t* coords; /* nd rows of count */
} coords_ctx;

static void store_coords(void* ctx, int64_t c, const int64_t* idx) {
  coords_ctx* k = ctx;
  for (int d = 0; d < k->nd; d++) k->coords[d * k->count + c] = idx[d];
}

bool cmx__mask_coords(const char* op, cmx_array mask, const int64_t* dims,
                      int axis, cmx_array* coords) {
  int nd = mask->ndim;
  for (int d = 0; d < nd; d++)
    if (mask->dims[d] != dims[d]) {
      cmx__error(CMX_ERR_INDEX,
                 "[%s] boolean index did not match the indexed array along "
                 "axis %d",
                 op, axis);
      return false;
    }
  const void* data;
  if (cmx_array_data(mask, &data) != CMX_OK) return false;
  coords_ctx k = {nd, 0, NULL};
  for_true(mask, data, count_true, &k.count);
  size_t n = (size_t)(k.count ? k.count : 1) * (size_t)(nd ? nd : 1);
  k.coords = malloc(n * sizeof *k.coords);
  if (!k.coords) {
    cmx__error(CMX_ERR_MEMORY, "[%s] out of memory for mask indices", op);
    return false;
  }
  for_true(mask, data, store_coords, &k);
  bool ok = true;
  for (int d = 0; d < nd && ok; d++) {
    cmx_array c = NULL;
    ok = cmx_array_from_data(&c, k.coords + d * k.count, &k.count, 1,
                             CMX_INT64) == CMX_OK;
    coords[d] = ok ? cmx__own(c) : NULL;
  }
  free(k.coords);
  return ok;
}
