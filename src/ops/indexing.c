/* Indexing ops: gather and scatter (MLX's general forms), take,
 * take_along_axis, put_along_axis, and the combining slice updates. They
 * validate and broadcast the index arrays and build Gather / Scatter /
 * GatherAxis / ScatterAxis nodes; bounds are checked by the kernels (the
 * values are only known then). */
#include <stdio.h>
#include <string.h>

#include "ops/shape_internal.h"

/* Checks that every index array is present and integer-typed. */
static bool check_index_arrays(const char* op, const cmx_array* indices,
                               int n) {
  for (int i = 0; i < n; i++) {
    if (!indices[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[%s] index array %d is a null array", op, i);
      return false;
    }
    if (!cmx_dtype_is_integer(indices[i]->dtype)) {
      cmx__error(CMX_ERR_TYPE,
                 "[%s] Got indices with invalid dtype %s. Indices must be "
                 "integral.",
                 op, cmx_dtype_name(indices[i]->dtype));
      return false;
    }
  }
  return true;
}

/* The broadcast shape of n index arrays into shape / *nd. */
static bool index_shape(const char* op, const cmx_array* indices, int n,
                        int64_t* shape, int* nd) {
  *nd = 0;
  for (int i = 0; i < n; i++) {
    int64_t next[CMX_MAX_NDIM];
    if (!cmx__broadcast_shape(op, shape, *nd, indices[i]->dims,
                              indices[i]->ndim, next, nd))
      return false;
    memcpy(shape, next, (size_t)*nd * sizeof(int64_t));
  }
  return true;
}

/* Normalises axes (negative allowed, no repeats) for gather/scatter. */
static bool norm_index_axes(const char* op, const int* axes, int naxes,
                            int ndim, int* out) {
  bool seen[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + ndim : axes[i];
    if (ax < 0 || ax >= ndim) {
      cmx__error(CMX_ERR_INDEX,
                 "[%s] Axis %d does not match an array with %d dimensions.", op,
                 axes[i], ndim);
      return false;
    }
    if (seen[ax]) {
      cmx__error(CMX_ERR_VALUE, "[%s] Repeat axes not allowed in %s.", op, op);
      return false;
    }
    seen[ax] = true;
    out[i] = ax;
  }
  return true;
}

/* Checks the counts common to gather and scatter. */
static bool check_counts(const char* op, cmx_array a, const cmx_array* indices,
                         int nindices, const int* axes, int naxes) {
  if (nindices < 0 || (nindices && !indices) || naxes < 0 || (naxes && !axes)) {
    cmx__error(CMX_ERR_VALUE, "[%s] Invalid index or axes list.", op);
    return false;
  }
  if (nindices > a->ndim) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Too many index arrays. Got %d index arrays for input "
               "with %d dimensions.",
               op, nindices, a->ndim);
    return false;
  }
  if (naxes != nindices) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Number of index arrays does not match number of axes.",
               op);
    return false;
  }
  return check_index_arrays(op, indices, nindices);
}

cmx_array cmx__gather(cmx_array a, const cmx_array* indices, int nindices,
                      const int* axes, int naxes, const int64_t* slice_sizes,
                      int nslice, cmx_stream s) {
  const char* op = "gather";
  if (!CMX__ARGS(op, a)) return NULL;
  if (!check_counts(op, a, indices, nindices, axes, naxes)) return NULL;
  cmx__gather_params q;
  memset(&q, 0, sizeof q);
  q.naxes = naxes;
  if (!norm_index_axes(op, axes, naxes, a->ndim, q.axes)) return NULL;
  if (nslice != a->ndim || (nslice && !slice_sizes))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather] Got slice_sizes with size %d for array with %d "
                     "dimensions.",
                     nslice, a->ndim);
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!index_shape(op, indices, nindices, shape, &nd)) return NULL;
  int64_t total = 1, npos = cmx__shape_size(shape, nd);
  for (int d = 0; d < a->ndim; d++) total *= slice_sizes[d] > 0 ? 1 : 0;
  /* MLX's rule: an empty input takes nothing, so any slice sizes pass
   * when there are no positions or the slices are empty. */
  if (a->size == 0 && npos != 0 && total != 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather] If the input is empty, either the indices "
                     "must be empty or the total slice size must be 0.");
  for (int d = 0; d < a->ndim; d++) {
    if (slice_sizes[d] < 0 || (a->size != 0 && slice_sizes[d] > a->dims[d])) {
      char s1[512], s2[512];
      return CMX__FAIL(
          CMX_ERR_VALUE,
          "[gather] Slice sizes must be in [0, a.shape(i)]. Got %s for array "
          "with shape %s.",
          cmx__shape_str(slice_sizes, nslice, s1, sizeof s1),
          cmx__shape_str(a->dims, a->ndim, s2, sizeof s2));
    }
    q.slice_sizes[d] = slice_sizes[d];
  }
  if (nd + a->ndim > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[gather] The result would have %d dimensions; at most %d "
                     "are supported.",
                     nd + a->ndim, CMX_MAX_NDIM);
  cmx_array in[CMX_MAX_NDIM + 1];
  in[0] = a;
  for (int i = 0; i < nindices; i++)
    if (!(in[i + 1] = cmx__broadcast_to(indices[i], shape, nd, s))) return NULL;
  int64_t oshape[CMX_MAX_NDIM];
  memcpy(oshape, shape, (size_t)nd * sizeof(int64_t));
  memcpy(oshape + nd, slice_sizes, (size_t)a->ndim * sizeof(int64_t));
  return cmx__apply(&cmx__vt_Gather, &q, sizeof q, s, in, nindices + 1, oshape,
                    nd + a->ndim, a->dtype);
}

cmx_array cmx__scatter_op(const char* op, cmx_array a, const cmx_array* indices,
                          int nindices, cmx_array updates, const int* axes,
                          int naxes, cmx__scatter_mode mode, cmx_stream s) {
  if (!CMX__ARGS(op, a, updates)) return NULL;
  if (!check_counts(op, a, indices, nindices, axes, naxes)) return NULL;
  cmx__scatter_params q;
  memset(&q, 0, sizeof q);
  q.mode = (int)mode;
  q.naxes = naxes;
  if (!norm_index_axes(op, axes, naxes, a->ndim, q.axes)) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!index_shape(op, indices, nindices, shape, &nd)) return NULL;
  char s1[512], s2[512];
  if (updates->ndim != a->ndim + nd)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Updates with %d dimensions does not match the sum "
                     "of the array (%d) and indices (%d) dimensions.",
                     op, updates->ndim, a->ndim, nd);
  for (int i = 0; i < nd; i++)
    if (updates->dims[i] != shape[i])
      return CMX__FAIL(
          CMX_ERR_VALUE,
          "[%s] Update shape %s is not valid for broadcasted index shape %s.",
          op, cmx__shape_str(updates->dims, updates->ndim, s1, sizeof s1),
          cmx__shape_str(shape, nd, s2, sizeof s2));
  for (int d = 0; d < a->ndim; d++)
    if (updates->dims[nd + d] > a->dims[d])
      return CMX__FAIL(
          CMX_ERR_VALUE,
          "[%s] Updates with shape %s are too large for array with shape %s.",
          op, cmx__shape_str(updates->dims, updates->ndim, s1, sizeof s1),
          cmx__shape_str(a->dims, a->ndim, s2, sizeof s2));
  cmx_array in[CMX_MAX_NDIM + 2];
  in[0] = a;
  for (int i = 0; i < nindices; i++)
    if (!(in[i + 1] = cmx__broadcast_to(indices[i], shape, nd, s))) return NULL;
  if (!(in[nindices + 1] = cmx__as_dtype(updates, a->dtype, s))) return NULL;
  return cmx__apply(&cmx__vt_Scatter, &q, sizeof q, s, in, nindices + 2,
                    a->dims, a->ndim, a->dtype);
}

#define SCATTER_VARIANT(name, mode)                                            \
  cmx_array cmx__##name(cmx_array a, const cmx_array* indices, int nindices,   \
                        cmx_array updates, const int* axes, int naxes,         \
                        cmx_stream s) {                                        \
    return cmx__scatter_op(#name, a, indices, nindices, updates, axes, naxes,  \
                           mode, s);                                           \
  }                                                                            \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const cmx_array* indices, \
                        int nindices, cmx_array updates, const int* axes,      \
                        int naxes, cmx_stream s) {                             \
    CMX__PUBLIC(out, #name,                                                    \
                cmx__##name(a, indices, nindices, updates, axes, naxes, s));   \
  }
SCATTER_VARIANT(scatter, CMX__SCATTER_NONE)
SCATTER_VARIANT(scatter_add, CMX__SCATTER_ADD)
SCATTER_VARIANT(scatter_prod, CMX__SCATTER_PROD)
SCATTER_VARIANT(scatter_max, CMX__SCATTER_MAX)
SCATTER_VARIANT(scatter_min, CMX__SCATTER_MIN)

/* a as a 1-d array (a view when the layout allows). */
static cmx_array flat(cmx_array a, cmx_stream s) {
  int64_t n = a->size;
  return cmx__reshape(a, &n, 1, s);
}

cmx_array cmx__take(cmx_array a, cmx_array indices, const int* axis,
                    cmx_stream s) {
  if (!CMX__ARGS("take", a, indices)) return NULL;
  if (!check_index_arrays("take", &indices, 1)) return NULL;
  int ax = 0;
  if (!axis) {
    a = flat(a, s);
    if (!a) return NULL;
  } else {
    ax = *axis;
    if (ax < -a->ndim || ax >= a->ndim)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[take] Received invalid axis %d for array with %d "
                       "dimensions.",
                       ax, a->ndim);
    if (ax < 0) ax += a->ndim;
  }
  if (a->dims[ax] == 0 && indices->size != 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[take] Cannot do a non-empty take from an empty axis.");
  int ni = indices->ndim, nd = a->ndim;
  if (ni + nd - 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[take] The result would have %d dimensions; at most %d "
                     "are supported.",
                     ni + nd - 1, CMX_MAX_NDIM);
  int64_t sizes[CMX_MAX_NDIM];
  memcpy(sizes, a->dims, (size_t)nd * sizeof(int64_t));
  sizes[ax] = 1;
  /* gather gives indices.shape + a.shape (1 at axis): drop that 1, then
   * move the index dims to where the axis was. */
  int sq = ni + ax;
  cmx_array g = cmx__squeeze(cmx__gather(a, &indices, 1, &ax, 1, sizes, nd, s),
                             &sq, 1, s);
  if (!g || ax == 0) return g;
  int perm[CMX_MAX_NDIM], k = 0;
  for (int d = 0; d < ax; d++) perm[k++] = ni + d;
  for (int d = 0; d < ni; d++) perm[k++] = d;
  for (int d = ni + ax; d < g->ndim; d++) perm[k++] = d;
  return cmx__transpose(g, perm, g->ndim, s);
}

/* Broadcasts arrays[0..n) against each other on every axis but `axis`
 * (all have rank nd), keeping each one's extent on the axis. */
static bool broadcast_except(const char* op, cmx_array* arrays, int n, int axis,
                             cmx_stream s) {
  int nd = arrays[0]->ndim;
  int64_t shape[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) {
    shape[d] = 1;
    for (int i = 0; i < n; i++) {
      int64_t e = arrays[i]->dims[d];
      if (d == axis || e == shape[d] || e == 1) continue;
      if (shape[d] != 1) {
        char s1[512], s2[512];
        cmx__error(CMX_ERR_VALUE,
                   "[%s] Shapes %s and %s cannot be broadcast (outside axis "
                   "%d).",
                   op, cmx__shape_str(arrays[0]->dims, nd, s1, sizeof s1),
                   cmx__shape_str(arrays[i]->dims, nd, s2, sizeof s2), axis);
        return false;
      }
      shape[d] = e;
    }
  }
  for (int i = 0; i < n; i++) {
    shape[axis] = arrays[i]->dims[axis];
    if (!(arrays[i] = cmx__broadcast_to(arrays[i], shape, nd, s))) return false;
  }
  return true;
}

/* Validates axis and ranks for take/put_along_axis; flattens for a NULL
 * axis. Writes the normalised axis. */
static bool along_axis_args(const char* op, cmx_array* a, cmx_array* indices,
                            cmx_array* values, const int* axis, int* ax,
                            cmx_stream s) {
  if (!check_index_arrays(op, indices, 1)) return false;
  if (!axis) {
    *a = flat(*a, s);
    *indices = flat(*indices, s);
    if (values) *values = flat(*values, s);
    *ax = 0;
    return *a && *indices && (!values || *values);
  }
  int nd = (*a)->ndim;
  *ax = *axis;
  if (*ax < -nd || *ax >= nd) {
    cmx__error(CMX_ERR_INDEX,
               "[%s] Received invalid axis %d for array with %d dimensions.",
               op, *ax, nd);
    return false;
  }
  if (*ax < 0) *ax += nd;
  if ((*indices)->ndim != nd) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Indices of dimension %d does not match array of "
               "dimension %d.",
               op, (*indices)->ndim, nd);
    return false;
  }
  return true;
}

cmx_array cmx__take_along_axis(cmx_array a, cmx_array indices, const int* axis,
                               cmx_stream s) {
  const char* op = "take_along_axis";
  if (!CMX__ARGS(op, a, indices)) return NULL;
  int ax;
  if (!along_axis_args(op, &a, &indices, NULL, axis, &ax, s)) return NULL;
  cmx_array in[2] = {a, indices};
  if (!broadcast_except(op, in, 2, ax, s)) return NULL;
  cmx__axis_params q;
  memset(&q, 0, sizeof q);
  q.axis = ax;
  return cmx__apply(&cmx__vt_GatherAxis, &q, sizeof q, s, in, 2, in[1]->dims,
                    in[1]->ndim, a->dtype);
}

cmx_array cmx__scatter_axis(const char* op, cmx_array a, cmx_array indices,
                            cmx_array values, const int* axis,
                            cmx__scatter_mode mode, cmx_stream s) {
  if (!CMX__ARGS(op, a, indices, values)) return NULL;
  const int64_t* shape0 = a->dims;
  int nd0 = a->ndim;
  int ax;
  cmx_array src = a;
  if (!along_axis_args(op, &src, &indices, &values, axis, &ax, s)) return NULL;
  cmx_array v = cmx__as_dtype(values, a->dtype, s);
  if (!v) return NULL;
  /* Leading size-1 dims of the values beyond the indices' rank go. */
  int lead = 0;
  while (v->ndim - lead > indices->ndim && v->dims[lead] == 1) lead++;
  if (v->ndim - lead > indices->ndim) {
    char s1[512], s2[512];
    return CMX__FAIL(
        CMX_ERR_VALUE,
        "[%s] Values of shape %s do not broadcast to indices of "
        "shape %s.",
        op, cmx__shape_str(v->dims, v->ndim, s1, sizeof s1),
        cmx__shape_str(indices->dims, indices->ndim, s2, sizeof s2));
  }
  if (lead && !(v = cmx__reshape(v, v->dims + lead, v->ndim - lead, s)))
    return NULL;
  cmx_array iv[2] = {indices, v};
  if (!cmx__broadcast_arrays(iv, iv, 2, s)) return NULL;
  cmx_array in[3] = {src, iv[0], iv[1]};
  if (!broadcast_except(op, in, 3, ax, s)) return NULL;
  cmx_array r;
  if (in[0]->size == 0 && in[1]->size == 0) {
    r = in[0];
  } else {
    cmx__axis_params q;
    memset(&q, 0, sizeof q);
    q.axis = ax;
    q.mode = (int)mode;
    r = cmx__apply(&cmx__vt_ScatterAxis, &q, sizeof q, s, in, 3, in[0]->dims,
                   in[0]->ndim, a->dtype);
  }
  return axis ? r : cmx__reshape(r, shape0, nd0, s);
}

cmx_array cmx__put_along_axis(cmx_array a, cmx_array indices, cmx_array values,
                              const int* axis, cmx_stream s) {
  return cmx__scatter_axis("put_along_axis", a, indices, values, axis,
                           CMX__SCATTER_NONE, s);
}

cmx_status cmx_take(cmx_array* out, cmx_array a, cmx_array indices,
                    const int* axis, cmx_stream s) {
  CMX__PUBLIC(out, "take", cmx__take(a, indices, axis, s));
}
cmx_status cmx_take_along_axis(cmx_array* out, cmx_array a, cmx_array indices,
                               const int* axis, cmx_stream s) {
  CMX__PUBLIC(out, "take_along_axis",
              cmx__take_along_axis(a, indices, axis, s));
}
cmx_status cmx_put_along_axis(cmx_array* out, cmx_array a, cmx_array indices,
                              cmx_array values, const int* axis, cmx_stream s) {
  CMX__PUBLIC(out, "put_along_axis",
              cmx__put_along_axis(a, indices, values, axis, s));
}
cmx_status cmx_gather(cmx_array* out, cmx_array a, const cmx_array* indices,
                      int nindices, const int* axes, int naxes,
                      const int64_t* slice_sizes, int nslice, cmx_stream s) {
  CMX__PUBLIC(
      out, "gather",
      cmx__gather(a, indices, nindices, axes, naxes, slice_sizes, nslice, s));
}
