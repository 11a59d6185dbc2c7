/* Shape ops that change how data is viewed: reshape and friends,
 * transposes, broadcasts, slices, flips, strided views, contiguous and
 * dtype views. Most are zero-copy views; reshape, contiguous and view copy
 * only when the input's layout (known at run time) requires it. */
#include <string.h>

#include "ops/shape_internal.h"

bool cmx__check_shape_arg(const char* op, const int64_t* shape, int ndim,
                          bool allow_negative) {
  if (ndim < 0 || ndim > CMX_MAX_NDIM) {
    cmx__error(CMX_ERR_VALUE, "[%s] shapes have 0 to %d dimensions, got %d.",
               op, CMX_MAX_NDIM, ndim);
    return false;
  }
  if (ndim && !shape) {
    cmx__error(CMX_ERR_VALUE, "[%s] shape is NULL.", op);
    return false;
  }
  for (int i = 0; i < ndim && !allow_negative; i++)
    if (shape[i] < 0) {
      cmx__error(CMX_ERR_VALUE, "[%s] Negative dimensions not allowed.", op);
      return false;
    }
  return true;
}

/* Infers a -1 entry of shape against size (MLX's reshape rule) into out.
 * Returns 0 on success, 1 with the error set (a bad entry), 2 when the
 * sizes do not match (the caller reports it). */
static int infer_shape(const char* op, int64_t size, const int64_t* shape,
                       int n, int64_t* out) {
  int infer = -1;
  int64_t known = 1;
  bool overflow = false;
  for (int i = 0; i < n; i++) {
    out[i] = shape[i];
    if (shape[i] == -1) {
      if (infer >= 0) {
        cmx__error(CMX_ERR_VALUE, "[%s] Can only infer one dimension.", op);
        return 1;
      }
      infer = i;
    } else if (shape[i] < 0) {
      cmx__error(CMX_ERR_VALUE, "[%s] Invalid dimension %lld in shape.", op,
                 (long long)shape[i]);
      return 1;
    } else {
      overflow |= __builtin_mul_overflow(known, shape[i], &known);
    }
  }
  if (overflow) return 2;
  if (infer >= 0) {
    if (known == 0) {
      cmx__error(CMX_ERR_VALUE, "[%s] Cannot infer the shape of an empty array",
                 op);
      return 1;
    }
    if (size % known != 0) return 2;
    out[infer] = size / known;
    known = size;
  }
  return known == size ? 0 : 2;
}

static cmx_array reshape_to(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s) {
  if (ndim == a->ndim &&
      (ndim == 0 || !memcmp(shape, a->dims, (size_t)ndim * sizeof(int64_t))))
    return a;
  cmx__shape_params q;
  q.ndim = ndim;
  if (ndim) memcpy(q.dims, shape, (size_t)ndim * sizeof(int64_t));
  return cmx__apply(&cmx__vt_Reshape, &q, CMX__SHAPE_PARAMS_SIZE(ndim), s, &a,
                    1, shape, ndim, a->dtype);
}

cmx_array cmx__reshape(cmx_array a, const int64_t* shape, int ndim,
                       cmx_stream s) {
  if (!CMX__ARGS("reshape", a)) return NULL;
  if (!cmx__check_shape_arg("reshape", shape, ndim, true)) return NULL;
  int64_t out[CMX_MAX_NDIM];
  int r = infer_shape("reshape", a->size, shape, ndim, out);
  if (r == 2) {
    char sb[512];
    cmx__error(CMX_ERR_VALUE,
               "[reshape] Cannot reshape array of size %lld into shape %s.",
               (long long)a->size, cmx__shape_str(shape, ndim, sb, sizeof sb));
  }
  return r ? NULL : reshape_to(a, out, ndim, s);
}

cmx_array cmx__flatten(cmx_array a, int start_axis, int end_axis,
                       cmx_stream s) {
  if (!CMX__ARGS("flatten", a)) return NULL;
  int nd = a->ndim;
  if (nd == 0) return reshape_to(a, (int64_t[]){1}, 1, s);
  int st = start_axis < 0 ? start_axis + nd : start_axis;
  int en = end_axis < 0 ? end_axis + nd : end_axis;
  if (st < 0) st = 0;
  if (en > nd - 1) en = nd - 1;
  if (en < st)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[flatten] start_axis must be less than "
                     "or equal to end_axis");
  if (st >= nd)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[flatten] Invalid start_axis %d for array with %d "
                     "dimensions.",
                     start_axis, nd);
  if (en < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[flatten] Invalid end_axis %d for array with %d "
                     "dimensions.",
                     end_axis, nd);
  if (st == en) return a;
  int64_t shape[CMX_MAX_NDIM];
  int n = 0;
  for (int d = 0; d < st; d++) shape[n++] = a->dims[d];
  int64_t m = 1;
  for (int d = st; d <= en; d++) m *= a->dims[d];
  shape[n++] = m;
  for (int d = en + 1; d < nd; d++) shape[n++] = a->dims[d];
  /* The axes ride along so a shapeless compiled function can flatten
   * inputs of other shapes (compile derives the shape again). */
  cmx__flatten_params fp;
  memset(&fp, 0, sizeof fp);
  fp.shape.ndim = n;
  memcpy(fp.shape.dims, shape, (size_t)n * sizeof(int64_t));
  fp.start_axis = st;
  fp.end_axis = en;
  return cmx__apply(&cmx__vt_Reshape, &fp, sizeof fp, s, &a, 1, shape, n,
                    a->dtype);
}

cmx_array cmx__unflatten(cmx_array a, int axis, const int64_t* shape, int ndim,
                         cmx_stream s) {
  if (!CMX__ARGS("unflatten", a)) return NULL;
  if (ndim == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[unflatten] Shape to unflatten to cannot be empty.");
  if (!cmx__check_shape_arg("unflatten", shape, ndim, true)) return NULL;
  int ax = axis < 0 ? axis + a->ndim : axis;
  if (ax < 0 || ax >= a->ndim)
    return CMX__FAIL(CMX_ERR_INDEX,
                     "[unflatten] Invalid axes %d for array with %d "
                     "dimensions.",
                     axis, a->ndim);
  if (a->ndim - 1 + ndim > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[unflatten] The result would have more than %d "
                     "dimensions.",
                     CMX_MAX_NDIM);
  int64_t part[CMX_MAX_NDIM];
  int r = infer_shape("unflatten", a->dims[ax], shape, ndim, part);
  if (r == 1) return NULL;
  if (r == 2) {
    char sb[512];
    cmx__error(CMX_ERR_VALUE,
               "[unflatten] Cannot unflatten axis %d with size %lld into "
               "shape %s.",
               axis, (long long)a->dims[ax],
               cmx__shape_str(shape, ndim, sb, sizeof sb));
    return NULL;
  }
  int64_t out[CMX_MAX_NDIM];
  int n = 0;
  for (int d = 0; d < ax; d++) out[n++] = a->dims[d];
  for (int i = 0; i < ndim; i++) out[n++] = part[i];
  for (int d = ax + 1; d < a->ndim; d++) out[n++] = a->dims[d];
  return reshape_to(a, out, n, s);
}

cmx_array cmx__squeeze(cmx_array a, const int* axes, int naxes, cmx_stream s) {
  if (!CMX__ARGS("squeeze", a)) return NULL;
  cmx__axes_params q;
  memset(&q, 0, sizeof q);
  if (!axes) {
    for (int d = 0; d < a->ndim; d++)
      if (a->dims[d] == 1) q.axes[q.naxes++] = d;
  } else {
    if (naxes < 0 || naxes > a->ndim)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[squeeze] Invalid number of axes %d for array with %d "
                       "dimensions.",
                       naxes, a->ndim);
    bool seen[CMX_MAX_NDIM] = {false};
    for (int i = 0; i < naxes; i++) {
      int ax = axes[i] < 0 ? axes[i] + a->ndim : axes[i];
      if (ax < 0 || ax >= a->ndim)
        return CMX__FAIL(CMX_ERR_INDEX,
                         "[squeeze] Invalid axes %d for array with %d "
                         "dimensions.",
                         axes[i], a->ndim);
      if (seen[ax])
        return CMX__FAIL(CMX_ERR_VALUE, "[squeeze] Received duplicate axes.");
      if (a->dims[ax] != 1)
        return CMX__FAIL(CMX_ERR_VALUE,
                         "[squeeze] Cannot squeeze axis %d with size %lld "
                         "which is not equal to 1.",
                         axes[i], (long long)a->dims[ax]);
      seen[ax] = true;
    }
    for (int d = 0; d < a->ndim; d++)
      if (seen[d]) q.axes[q.naxes++] = d;
  }
  if (q.naxes == 0) return a;
  int64_t shape[CMX_MAX_NDIM];
  int n = 0, k = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (k < q.naxes && q.axes[k] == d) {
      k++;
      continue;
    }
    shape[n++] = a->dims[d];
  }
  return cmx__apply(&cmx__vt_Squeeze, &q, sizeof q, s, &a, 1, shape, n,
                    a->dtype);
}

cmx_array cmx__expand_dims(cmx_array a, const int* axes, int naxes,
                           cmx_stream s) {
  if (!CMX__ARGS("expand_dims", a)) return NULL;
  if (naxes < 0 || (naxes && !axes))
    return CMX__FAIL(CMX_ERR_VALUE, "[expand_dims] Invalid axes argument.");
  if (naxes == 0) return a;
  int out_nd = a->ndim + naxes;
  if (out_nd > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[expand_dims] The result would have %d dimensions; at "
                     "most %d are supported.",
                     out_nd, CMX_MAX_NDIM);
  cmx__axes_params q;
  memset(&q, 0, sizeof q);
  bool seen[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + out_nd : axes[i];
    if (ax < 0 || ax >= out_nd)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[expand_dims] Invalid axis %d for output array with "
                       "%d dimensions.",
                       axes[i], out_nd);
    if (seen[ax])
      return CMX__FAIL(CMX_ERR_VALUE, "[expand_dims] Received duplicate axes.");
    seen[ax] = true;
  }
  int64_t shape[CMX_MAX_NDIM];
  for (int d = 0, j = 0; d < out_nd; d++) {
    if (seen[d]) {
      q.axes[q.naxes++] = d;
      shape[d] = 1;
    } else {
      shape[d] = a->dims[j++];
    }
  }
  return cmx__apply(&cmx__vt_ExpandDims, &q, sizeof q, s, &a, 1, shape, out_nd,
                    a->dtype);
}

/* A Transpose with a validated permutation (identity: a itself). */
static cmx_array permute(cmx_array a, const int* perm, cmx_stream s) {
  cmx__transpose_params q;
  memset(&q, 0, sizeof q);
  q.ndim = a->ndim;
  int64_t shape[CMX_MAX_NDIM];
  bool identity = true;
  for (int d = 0; d < a->ndim; d++) {
    q.perm[d] = perm[d];
    shape[d] = a->dims[perm[d]];
    identity &= perm[d] == d;
  }
  if (identity) return a;
  return cmx__apply(&cmx__vt_Transpose, &q, sizeof q, s, &a, 1, shape, a->ndim,
                    a->dtype);
}

cmx_array cmx__transpose(cmx_array a, const int* axes, int naxes,
                         cmx_stream s) {
  if (!CMX__ARGS("transpose", a)) return NULL;
  int perm[CMX_MAX_NDIM];
  if (!axes) {
    for (int d = 0; d < a->ndim; d++) perm[d] = a->ndim - 1 - d;
    return permute(a, perm, s);
  }
  if (naxes != a->ndim)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[transpose] Received %d axes for array with %d "
                     "dimensions.",
                     naxes, a->ndim);
  bool seen[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + a->ndim : axes[i];
    if (ax < 0 || ax >= a->ndim)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[transpose] Invalid axis (%d) for array with %d "
                       "dimensions.",
                       axes[i], a->ndim);
    if (seen[ax])
      return CMX__FAIL(CMX_ERR_VALUE, "[transpose] Repeat axes not allowed.");
    seen[ax] = true;
    perm[i] = ax;
  }
  return permute(a, perm, s);
}

/* Normalises one axis for swapaxes/moveaxis (MLX's message). */
static bool check_axis(const char* op, int* ax, int ndim) {
  if (*ax < -ndim || *ax >= ndim) {
    cmx__error(CMX_ERR_INDEX,
               "[%s] Invalid axis %d for array with %d "
               "dimensions.",
               op, *ax, ndim);
    return false;
  }
  if (*ax < 0) *ax += ndim;
  return true;
}

cmx_array cmx__swapaxes(cmx_array a, int axis1, int axis2, cmx_stream s) {
  if (!CMX__ARGS("swapaxes", a)) return NULL;
  if (!check_axis("swapaxes", &axis1, a->ndim) ||
      !check_axis("swapaxes", &axis2, a->ndim))
    return NULL;
  int perm[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) perm[d] = d;
  perm[axis1] = axis2;
  perm[axis2] = axis1;
  return permute(a, perm, s);
}

cmx_array cmx__moveaxis(cmx_array a, int source, int destination,
                        cmx_stream s) {
  if (!CMX__ARGS("moveaxis", a)) return NULL;
  if (!check_axis("moveaxis", &source, a->ndim) ||
      !check_axis("moveaxis", &destination, a->ndim))
    return NULL;
  int perm[CMX_MAX_NDIM], n = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != source) perm[n++] = d;
  memmove(perm + destination + 1, perm + destination,
          (size_t)(n - destination) * sizeof(int));
  perm[destination] = source;
  return permute(a, perm, s);
}

cmx_array cmx__broadcast_to(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s) {
  if (!CMX__ARGS("broadcast_to", a)) return NULL;
  if (!cmx__check_shape_arg("broadcast_to", shape, ndim, false)) return NULL;
  int64_t bs[CMX_MAX_NDIM];
  int nb;
  char sa[512], sb[512];
  if (ndim < a->ndim ||
      !cmx__broadcast_shape("broadcast_to", a->dims, a->ndim, shape, ndim, bs,
                            &nb) ||
      (ndim && memcmp(bs, shape, (size_t)ndim * sizeof(int64_t)) != 0)) {
    cmx__error_reset_pending();
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[broadcast_to] Cannot broadcast array of shape %s into "
                     "shape %s.",
                     cmx__shape_str(a->dims, a->ndim, sa, sizeof sa),
                     cmx__shape_str(shape, ndim, sb, sizeof sb));
  }
  if (ndim == a->ndim &&
      (ndim == 0 || memcmp(a->dims, shape, (size_t)ndim * 8) == 0))
    return a;
  cmx__shape_params q;
  q.ndim = ndim;
  memcpy(q.dims, shape, (size_t)ndim * sizeof(int64_t));
  return cmx__apply(&cmx__vt_Broadcast, &q, CMX__SHAPE_PARAMS_SIZE(ndim), s, &a,
                    1, shape, ndim, a->dtype);
}

bool cmx__broadcast_arrays(cmx_array* outs, const cmx_array* arrays, int n,
                           cmx_stream s) {
  if (n < 0 || (n && !arrays)) {
    cmx__error(CMX_ERR_VALUE, "[broadcast_arrays] Invalid array list.");
    return false;
  }
  int64_t shape[CMX_MAX_NDIM];
  int nd = 0;
  for (int i = 0; i < n; i++) {
    if (!arrays[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE,
                   "[broadcast_arrays] argument %d is a null "
                   "array",
                   i + 1);
      return false;
    }
    int64_t next[CMX_MAX_NDIM];
    if (!cmx__broadcast_shape("broadcast_arrays", shape, nd, arrays[i]->dims,
                              arrays[i]->ndim, next, &nd))
      return false;
    memcpy(shape, next, (size_t)nd * sizeof(int64_t));
  }
  for (int i = 0; i < n; i++) {
    outs[i] = cmx__broadcast_to(arrays[i], shape, nd, s);
    if (!outs[i]) return false;
  }
  return true;
}

bool cmx__norm_slice(const char* op, const int64_t* shape, int ndim,
                     const int64_t* start, const int64_t* stop,
                     const int64_t* steps, cmx__slice_params* q,
                     int64_t* out_shape, bool* has_neg) {
  memset(q, 0, sizeof *q);
  *has_neg = false;
  for (int d = 0; d < ndim; d++) {
    int64_t n = shape[d], step = steps ? steps[d] : 1;
    if (step == 0) {
      cmx__error(CMX_ERR_VALUE, "[%s] Slice step cannot be zero.", op);
      return false;
    }
    /* Python's rules; the int64 range is wide enough (|n| < 2^62). */
    int64_t b = start[d], e = stop[d], len;
    if (b < 0) b = b < -n ? -n - 1 : b + n;
    if (e < 0) e = e < -n ? -n - 1 : e + n;
    if (step > 0) {
      b = b < 0 ? 0 : b > n ? n : b;
      e = e < 0 ? 0 : e > n ? n : e;
      len = e > b ? (int64_t)((uint64_t)(e - b - 1) / (uint64_t)step) + 1 : 0;
    } else {
      *has_neg = true;
      b = b < -1 ? -1 : b > n - 1 ? n - 1 : b;
      e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
      len = b > e ? (int64_t)((uint64_t)(b - e - 1) / (0 - (uint64_t)step)) + 1
                  : 0;
    }
    /* A dim of at most one element is taken with step 1 (the same
     * element), so kernels and rules never scale a stride or an offset by
     * a huge step (x[::2**63 - 1]: signed overflow). With two elements or
     * more, |step| < n. */
    q->start[d] = len ? b : 0;
    q->stop[d] = len > 1 ? e : len ? b + 1 : 0;
    q->step[d] = len > 1 ? step : 1;
    out_shape[d] = len;
  }
  q->ndim = ndim;
  return true;
}

cmx_array cmx__slice(cmx_array a, const int64_t* start, const int64_t* stop,
                     const int64_t* strides, cmx_stream s) {
  if (!CMX__ARGS("slice", a)) return NULL;
  if (a->ndim && (!start || !stop))
    return CMX__FAIL(CMX_ERR_VALUE, "[slice] start and stop are required.");
  cmx__slice_params q;
  int64_t shape[CMX_MAX_NDIM];
  bool neg;
  if (!cmx__norm_slice("slice", a->dims, a->ndim, start, stop, strides, &q,
                       shape, &neg))
    return NULL;
  if (!neg && (a->ndim == 0 ||
               !memcmp(shape, a->dims, (size_t)a->ndim * sizeof(int64_t))))
    return a;
  return cmx__apply(&cmx__vt_Slice, &q, sizeof q, s, &a, 1, shape, a->ndim,
                    a->dtype);
}

cmx_array cmx__flip(cmx_array a, const int* axes, int naxes, cmx_stream s) {
  if (!CMX__ARGS("flip", a)) return NULL;
  int ax[CMX_MAX_NDIM];
  int n = cmx__norm_axes("flip", axes, naxes, a->ndim, ax);
  if (n < 0) return NULL;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) {
    start[d] = 0;
    stop[d] = a->dims[d];
    step[d] = 1;
  }
  for (int i = 0; i < n; i++) {
    start[ax[i]] = a->dims[ax[i]] - 1;
    stop[ax[i]] = -a->dims[ax[i]] - 1;
    step[ax[i]] = -1;
  }
  return cmx__slice(a, start, stop, step, s);
}

cmx_array cmx__contiguous(cmx_array a, bool allow_col_major, cmx_stream s) {
  if (!CMX__ARGS("contiguous", a)) return NULL;
  /* Data that exists already is checked now; otherwise the kernel decides
   * (a view when the producer left it contiguous). */
  if (cmx_array_is_available(a) && !a->error &&
      ((a->flags & CMX__FLAG_ROW_CONTIG) ||
       (allow_col_major && (a->flags & CMX__FLAG_COL_CONTIG))))
    return a;
  cmx__contiguous_params q = {.allow_col_major = allow_col_major};
  return cmx__apply(&cmx__vt_Contiguous, &q, sizeof q, s, &a, 1, a->dims,
                    a->ndim, a->dtype);
}

cmx_array cmx__as_strided(cmx_array a, const int64_t* shape, int ndim,
                          const int64_t* strides, int64_t offset,
                          cmx_stream s) {
  if (!CMX__ARGS("as_strided", a)) return NULL;
  if (!cmx__check_shape_arg("as_strided", shape, ndim, false)) return NULL;
  cmx__as_strided_params q;
  memset(&q, 0, sizeof q);
  int64_t size = cmx__shape_size(shape, ndim);
  if (size < 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[as_strided] The shape is too large.");
  /* Row-major strides by default; strides that can never be stepped (an
   * empty view, a dim of one element) are replaced by row-major ones, so
   * that no stride of any array overflows when scaled to bytes. */
  uint64_t m = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    q.strides[d] = (int64_t)m;
    m *= shape[d] > 0 ? (uint64_t)shape[d] : 1u;
    if (strides && size > 0 && shape[d] > 1) q.strides[d] = strides[d];
  }
  q.offset = offset;
  q.ndim = ndim;
  if (ndim) memcpy(q.shape, shape, (size_t)ndim * sizeof(int64_t));
  /* The view must stay inside a's elements: as_strided never reads memory
   * that is not the array's (MLX leaves this unchecked). */
  if (size > 0) {
    int64_t lo = offset, hi = offset;
    bool overflow = offset < 0;
    for (int d = 0; d < ndim && !overflow; d++) {
      int64_t span;
      overflow |= __builtin_mul_overflow(q.strides[d], shape[d] - 1, &span);
      overflow |= __builtin_add_overflow(span < 0 ? lo : hi, span,
                                         span < 0 ? &lo : &hi);
    }
    if (overflow || lo < 0 || hi >= a->size)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[as_strided] The view reads outside the array's %lld "
                       "elements.",
                       (long long)a->size);
  }
  cmx_array c = cmx__contiguous(a, false, s);
  if (!c) return NULL;
  return cmx__apply(&cmx__vt_AsStrided, &q, sizeof q, s, &c, 1, shape, ndim,
                    a->dtype);
}

cmx_array cmx__view(cmx_array a, cmx_dtype dt, cmx_stream s) {
  if (!CMX__ARGS("view", a)) return NULL;
  if (!cmx_dtype_valid((int)dt))
    return CMX__FAIL(CMX_ERR_TYPE, "[view] invalid dtype %d", (int)dt);
  if (dt == a->dtype) return a;
  int64_t ib = (int64_t)cmx_dtype_size(a->dtype);
  int64_t ob = (int64_t)cmx_dtype_size(dt);
  int64_t shape[CMX_MAX_NDIM];
  int nd = a->ndim;
  if (nd) memcpy(shape, a->dims, (size_t)nd * sizeof(int64_t));
  if (nd == 0 && ib != ob)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[view] Changing the type of a scalar is only allowed "
                     "for types with the same size.");
  if (ib < ob) {
    if (shape[nd - 1] % (ob / ib) != 0)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[view] When viewing as a larger dtype, the size in "
                       "bytes of the last axis must be a multiple of the "
                       "requested type size.");
    shape[nd - 1] /= ob / ib;
  } else if (ib > ob) {
    shape[nd - 1] *= ib / ob;
  }
  cmx__view_params q = {.dtype = (int)dt};
  return cmx__apply(&cmx__vt_View, &q, sizeof q, s, &a, 1, shape, nd, dt);
}

/* ---------------- public wrappers ---------------- */

cmx_status cmx_reshape(cmx_array* out, cmx_array a, const int64_t* shape,
                       int ndim, cmx_stream s) {
  CMX__PUBLIC(out, "reshape", cmx__reshape(a, shape, ndim, s));
}
cmx_status cmx_flatten(cmx_array* out, cmx_array a, int start_axis,
                       int end_axis, cmx_stream s) {
  CMX__PUBLIC(out, "flatten", cmx__flatten(a, start_axis, end_axis, s));
}
cmx_status cmx_unflatten(cmx_array* out, cmx_array a, int axis,
                         const int64_t* shape, int ndim, cmx_stream s) {
  CMX__PUBLIC(out, "unflatten", cmx__unflatten(a, axis, shape, ndim, s));
}
cmx_status cmx_squeeze(cmx_array* out, cmx_array a, const int* axes, int naxes,
                       cmx_stream s) {
  CMX__PUBLIC(out, "squeeze", cmx__squeeze(a, axes, naxes, s));
}
cmx_status cmx_expand_dims(cmx_array* out, cmx_array a, const int* axes,
                           int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "expand_dims", cmx__expand_dims(a, axes, naxes, s));
}
cmx_status cmx_transpose(cmx_array* out, cmx_array a, const int* axes,
                         int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "transpose", cmx__transpose(a, axes, naxes, s));
}
cmx_status cmx_swapaxes(cmx_array* out, cmx_array a, int axis1, int axis2,
                        cmx_stream s) {
  CMX__PUBLIC(out, "swapaxes", cmx__swapaxes(a, axis1, axis2, s));
}
cmx_status cmx_moveaxis(cmx_array* out, cmx_array a, int source,
                        int destination, cmx_stream s) {
  CMX__PUBLIC(out, "moveaxis", cmx__moveaxis(a, source, destination, s));
}
cmx_status cmx_broadcast_to(cmx_array* out, cmx_array a, const int64_t* shape,
                            int ndim, cmx_stream s) {
  CMX__PUBLIC(out, "broadcast_to", cmx__broadcast_to(a, shape, ndim, s));
}
cmx_status cmx_broadcast_arrays(cmx_array* outs, const cmx_array* arrays, int n,
                                cmx_stream s) {
  if (!outs && n > 0)
    return cmx__error(CMX_ERR_VALUE,
                      "[broadcast_arrays] output pointer is NULL");
  for (int i = 0; i < n; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__broadcast_arrays(outs, arrays, n, s);
  return cmx__scope_exit_multi(mark, ok, outs, n);
}
cmx_status cmx_slice(cmx_array* out, cmx_array a, const int64_t* start,
                     const int64_t* stop, const int64_t* strides,
                     cmx_stream s) {
  CMX__PUBLIC(out, "slice", cmx__slice(a, start, stop, strides, s));
}
cmx_status cmx_flip(cmx_array* out, cmx_array a, const int* axes, int naxes,
                    cmx_stream s) {
  CMX__PUBLIC(out, "flip", cmx__flip(a, axes, naxes, s));
}
cmx_status cmx_as_strided(cmx_array* out, cmx_array a, const int64_t* shape,
                          int ndim, const int64_t* strides, int64_t offset,
                          cmx_stream s) {
  CMX__PUBLIC(out, "as_strided",
              cmx__as_strided(a, shape, ndim, strides, offset, s));
}
cmx_status cmx_contiguous(cmx_array* out, cmx_array a, bool allow_col_major,
                          cmx_stream s) {
  CMX__PUBLIC(out, "contiguous", cmx__contiguous(a, allow_col_major, s));
}
cmx_status cmx_view(cmx_array* out, cmx_array a, cmx_dtype dtype,
                    cmx_stream s) {
  CMX__PUBLIC(out, "view", cmx__view(a, dtype, s));
}
