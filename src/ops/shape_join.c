/* Shape ops that build new arrays from pieces: slice updates, joins,
 * splits (and unstack), padding, repeats, tiles and rolls, and
 * atleast_*d. Splits are slices (views);
 * repeat and tile are a broadcast view reshaped (one copy); roll is two
 * slices joined; pad is one Pad primitive (constant) or joins (edge). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/shape_internal.h"

cmx_array cmx__slice_update(cmx_array src, cmx_array update,
                            const int64_t* start, const int64_t* stop,
                            const int64_t* strides, cmx_stream s) {
  if (!CMX__ARGS("slice_update", src, update)) return NULL;
  if (src->ndim && (!start || !stop))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[slice_update] start and stop are required.");
  cmx__slice_params q;
  int64_t shape[CMX_MAX_NDIM];
  bool neg;
  if (!cmx__norm_slice("slice_update", src->dims, src->ndim, start, stop,
                       strides, &q, shape, &neg))
    return NULL;
  cmx_array upd = cmx__broadcast_to(cmx__as_dtype(update, src->dtype, s), shape,
                                    src->ndim, s);
  if (!upd) return NULL;
  /* The whole of src replaced: the result is the update itself. */
  if (!neg && (src->ndim == 0 ||
               !memcmp(shape, src->dims, (size_t)src->ndim * sizeof(int64_t))))
    return upd;
  cmx_array in[2] = {src, upd};
  return cmx__apply(&cmx__vt_SliceUpdate, &q, sizeof q, s, in, 2, src->dims,
                    src->ndim, src->dtype);
}

/* Appends "(2,3), " for every array to buf (bounded). */
static void shapes_list(char* buf, size_t size, const cmx_array* arrays,
                        int n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k + 1 < size; i++) {
    char sh[512];
    int w = snprintf(
        buf + k, size - k, "%s, ",
        cmx__shape_str(arrays[i]->dims, arrays[i]->ndim, sh, sizeof sh));
    if (w < 0) break;
    k += (size_t)w;
  }
}

cmx_array cmx__concatenate(const cmx_array* arrays, int n, int axis,
                           cmx_stream s) {
  if (n <= 0 || !arrays)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[concatenate] No arrays provided for concatenation");
  for (int i = 0; i < n; i++)
    if (!arrays[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[concatenate] argument %d is a null array",
                   i + 1);
      return NULL;
    }
  if (n == 1) return arrays[0];
  int ax = axis;
  if (!cmx__norm_axis("concatenate", &ax, arrays[0]->ndim)) return NULL;
  int nd = arrays[0]->ndim;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, arrays[0]->dims, (size_t)nd * sizeof(int64_t));
  shape[ax] = 0;
  for (int i = 0; i < n; i++) {
    cmx_array a = arrays[i];
    if (a->ndim != nd)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[concatenate] All the input arrays must have the same "
                       "number of dimensions. However, got arrays with "
                       "dimensions %d and %d.",
                       nd, a->ndim);
    for (int d = 0; d < nd; d++)
      if (d != ax && a->dims[d] != shape[d]) {
        char list[2048];
        shapes_list(list, sizeof list, arrays, n);
        return CMX__FAIL(CMX_ERR_VALUE,
                         "[concatenate] All the input array dimensions must "
                         "match exactly except for the concatenation axis. "
                         "However, the provided shapes are %sand the "
                         "concatenation axis is %d.",
                         list, axis);
      }
    if (__builtin_add_overflow(shape[ax], a->dims[ax], &shape[ax]))
      return CMX__FAIL(CMX_ERR_VALUE, "[concatenate] The result is too large.");
  }
  cmx_dtype dt = cmx__result_type(arrays, n);
  cmx_array* in = malloc((size_t)n * sizeof *in);
  if (!in) return CMX__FAIL(CMX_ERR_MEMORY, "[concatenate] out of memory");
  bool ok = true;
  for (int i = 0; i < n && ok; i++)
    ok = (in[i] = cmx__as_dtype(arrays[i], dt, s));
  cmx__concat_params q = {.axis = ax};
  cmx_array r = ok ? cmx__apply(&cmx__vt_Concatenate, &q, sizeof q, s, in, n,
                                shape, nd, dt)
                   : NULL;
  free(in);
  return r;
}

cmx_array cmx__stack(const cmx_array* arrays, int n, int axis, cmx_stream s) {
  if (n <= 0 || !arrays)
    return CMX__FAIL(CMX_ERR_VALUE, "[stack] No arrays provided for stacking");
  for (int i = 0; i < n; i++)
    if (!arrays[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[stack] argument %d is a null array", i + 1);
      return NULL;
    }
  cmx_array a0 = arrays[0];
  for (int i = 1; i < n; i++)
    if (arrays[i]->ndim != a0->ndim ||
        memcmp(arrays[i]->dims, a0->dims, (size_t)a0->ndim * sizeof(int64_t)))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[stack] All arrays must have the same shape");
  int ax = axis;
  if (!cmx__norm_axis("stack", &ax, a0->ndim + 1)) return NULL;
  cmx_array* ex = malloc((size_t)n * sizeof *ex);
  if (!ex) return CMX__FAIL(CMX_ERR_MEMORY, "[stack] out of memory");
  bool ok = true;
  for (int i = 0; i < n && ok; i++)
    ok = (ex[i] = cmx__expand_dims(arrays[i], &ax, 1, s));
  cmx_array r = ok ? cmx__concatenate(ex, n, ax, s) : NULL;
  free(ex);
  return r;
}

bool cmx__split_indices(cmx_array* outs, cmx_array a, const int64_t* indices,
                        int nindices, int axis, cmx_stream s) {
  if (!CMX__ARGS("split", a)) return false;
  if (nindices < 0 || (nindices && !indices)) {
    cmx__error(CMX_ERR_VALUE, "[split] Invalid indices.");
    return false;
  }
  int ax = axis;
  if (!cmx__norm_axis("split", &ax, a->ndim)) return false;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) {
    start[d] = 0;
    stop[d] = a->dims[d];
  }
  /* Piece i is a[indices[i-1]:indices[i]] along the axis, clamped as
   * Python slices are (so unsorted indices give empty pieces). */
  for (int i = 0; i <= nindices; i++) {
    stop[ax] = i < nindices ? indices[i] : a->dims[ax];
    outs[i] = cmx__slice(a, start, stop, NULL, s);
    if (!outs[i]) return false;
    start[ax] = stop[ax];
  }
  return true;
}

bool cmx__split_sections(cmx_array* outs, cmx_array a, int sections, int axis,
                         cmx_stream s) {
  if (!CMX__ARGS("split", a)) return false;
  int ax = axis;
  if (!cmx__norm_axis("split", &ax, a->ndim)) return false;
  if (sections <= 0) {
    cmx__error(CMX_ERR_VALUE,
               "[split] The number of sections must be positive, got %d.",
               sections);
    return false;
  }
  if (a->dims[ax] % sections != 0) {
    char sh[512];
    cmx__error(CMX_ERR_VALUE,
               "[split] Array split does not result in sub arrays with equal "
               "size: attempting %d splits along axis %d for shape %s.",
               sections, axis, cmx__shape_str(a->dims, a->ndim, sh, sizeof sh));
    return false;
  }
  int64_t* idx = malloc((size_t)sections * sizeof *idx);
  if (!idx) {
    cmx__error(CMX_ERR_MEMORY, "[split] out of memory");
    return false;
  }
  int64_t part = a->dims[ax] / sections;
  for (int i = 0; i < sections - 1; i++) idx[i] = (i + 1) * part;
  bool ok = cmx__split_indices(outs, a, idx, sections - 1, ax, s);
  free(idx);
  return ok;
}

/* Edge padding of one axis: the first and last slices broadcast and
 * joined on either side. */
static cmx_array edge_pad_axis(cmx_array x, int ax, int64_t lo, int64_t hi,
                               cmx_stream s) {
  if (lo == 0 && hi == 0) return x;
  if (x->dims[ax] == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[pad] Cannot pad the empty axis %d in edge mode.", ax);
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], shape[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++) {
    start[d] = 0;
    stop[d] = shape[d] = x->dims[d];
  }
  cmx_array parts[3];
  int n = 0;
  if (lo > 0) {
    stop[ax] = 1;
    shape[ax] = lo;
    parts[n++] = cmx__broadcast_to(cmx__slice(x, start, stop, NULL, s), shape,
                                   x->ndim, s);
  }
  parts[n++] = x;
  if (hi > 0) {
    start[ax] = x->dims[ax] - 1;
    stop[ax] = x->dims[ax];
    shape[ax] = hi;
    parts[n++] = cmx__broadcast_to(cmx__slice(x, start, stop, NULL, s), shape,
                                   x->ndim, s);
  }
  for (int i = 0; i < n; i++)
    if (!parts[i]) return NULL;
  return cmx__concatenate(parts, n, ax, s);
}

/* Reflect / symmetric padding of one axis: a take of mirrored indices. */
static cmx_array mirror_pad_axis(cmx_array x, int ax, int64_t lo, int64_t hi,
                                 bool symmetric, cmx_stream s) {
  if (!lo && !hi) return x;
  int64_t n = x->dims[ax], len = n + lo + hi;
  if (n == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[pad] Cannot pad an empty axis (%d) in %s mode.", ax,
                     symmetric ? "symmetric" : "reflect");
  size_t bytes; /* len * 8 wrapped to a small block for len near 2**62 */
  int64_t* idx = __builtin_mul_overflow((size_t)len, sizeof *idx, &bytes)
                     ? NULL
                     : malloc(bytes);
  if (!idx) return CMX__FAIL(CMX_ERR_MEMORY, "[pad] out of host memory");
  int64_t period = symmetric ? 2 * n : 2 * (n - 1);
  for (int64_t i = 0; i < len; i++) {
    if (period == 0) {
      idx[i] = 0;
      continue;
    }
    int64_t j = (i - lo) % period;
    if (j < 0) j += period;
    idx[i] = j < n ? j : (symmetric ? period - 1 - j : period - j);
  }
  cmx_array ia = NULL;
  cmx_status st = cmx_array_from_data(&ia, idx, &len, 1, CMX_INT64);
  free(idx);
  if (st != CMX_OK) return NULL;
  return cmx__take(x, cmx__own(ia), &ax, s);
}

cmx_array cmx__pad(cmx_array a, const int* axes, const int64_t* low,
                   const int64_t* high, int naxes, cmx_array value,
                   cmx_pad_mode mode, cmx_stream s) {
  if (!CMX__ARGS("pad", a)) return NULL;
  if (mode < CMX_PAD_CONSTANT || mode > CMX_PAD_SYMMETRIC)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[pad] Invalid padding mode (%d) passed "
                     "to pad",
                     (int)mode);
  if (naxes < 0 || (naxes && (!low || !high)) || (!axes && naxes > a->ndim))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[pad] Invalid number of padding sizes (%d) for array "
                     "with %d dimensions.",
                     naxes, a->ndim);
  int64_t lo[CMX_MAX_NDIM] = {0}, hi[CMX_MAX_NDIM] = {0};
  int64_t shape[CMX_MAX_NDIM];
  bool seen[CMX_MAX_NDIM] = {false}, any = false;
  for (int i = 0; i < naxes; i++) {
    int ax = axes ? axes[i] : i;
    if (!cmx__norm_axis("pad", &ax, a->ndim)) return NULL;
    if (seen[ax])
      return CMX__FAIL(CMX_ERR_VALUE, "[pad] Received duplicate axes.");
    seen[ax] = true;
    if (low[i] < 0 || high[i] < 0)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[pad] Invalid %s padding size (%lld) passed to pad "
                       "for axis %d. Padding sizes must be non-negative",
                       low[i] < 0 ? "low" : "high",
                       (long long)(low[i] < 0 ? low[i] : high[i]), i);
    lo[ax] = low[i];
    hi[ax] = high[i];
    any |= low[i] > 0 || high[i] > 0;
  }
  for (int d = 0; d < a->ndim; d++)
    if (__builtin_add_overflow(a->dims[d], lo[d], &shape[d]) ||
        __builtin_add_overflow(shape[d], hi[d], &shape[d]))
      return CMX__FAIL(CMX_ERR_VALUE, "[pad] The padded shape is too large.");
  cmx_array v = NULL;
  if (mode == CMX_PAD_CONSTANT) {
    v = value ? value : cmx__scalar(0, a->dtype);
    if (!v) return NULL;
    if (v->size != 1)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[pad] The padding value must be a scalar, got an "
                       "array of size %lld.",
                       (long long)v->size);
    v = cmx__reshape(cmx__as_dtype(v, a->dtype, s), NULL, 0, s);
    if (!v) return NULL;
  }
  if (!any) return a;
  if (mode == CMX_PAD_EDGE) {
    cmx_array x = a;
    for (int d = 0; d < a->ndim && x; d++)
      x = edge_pad_axis(x, d, lo[d], hi[d], s);
    return x;
  }
  if (mode == CMX_PAD_REFLECT || mode == CMX_PAD_SYMMETRIC) {
    cmx_array x = a;
    for (int d = 0; d < a->ndim && x; d++)
      x = mirror_pad_axis(x, d, lo[d], hi[d], mode == CMX_PAD_SYMMETRIC, s);
    return x;
  }
  cmx__pad_params q;
  memset(&q, 0, sizeof q);
  memcpy(q.low, lo, sizeof lo);
  memcpy(q.high, hi, sizeof hi);
  q.ndim = a->ndim;
  cmx_array in[2] = {a, v};
  return cmx__apply(&cmx__vt_Pad, &q, sizeof q, s, in, 2, shape, a->ndim,
                    a->dtype);
}

cmx_array cmx__repeat(cmx_array a, int64_t repeats, const int* axis,
                      cmx_stream s) {
  if (!CMX__ARGS("repeat", a)) return NULL;
  if (!axis)
    return cmx__repeat(cmx__flatten(a, 0, -1, s), repeats, &(int){0}, s);
  int ax = *axis;
  if (!cmx__norm_axis("repeat", &ax, a->ndim)) return NULL;
  if (repeats < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[repeat] Number of repeats cannot be negative");
  if (repeats == 1) return a;
  int64_t out[CMX_MAX_NDIM];
  memcpy(out, a->dims, (size_t)a->ndim * sizeof(int64_t));
  if (__builtin_mul_overflow(out[ax], repeats, &out[ax]))
    return CMX__FAIL(CMX_ERR_VALUE, "[repeat] The result is too large.");
  cmx_array x = a;
  int xa = ax;
  if (a->ndim == CMX_MAX_NDIM) {
    /* No room for the repeat axis: view a as (before, axis, after). */
    int64_t pre = 1, post = 1;
    for (int d = 0; d < ax; d++) pre *= a->dims[d];
    for (int d = ax + 1; d < a->ndim; d++) post *= a->dims[d];
    x = cmx__reshape(a, (int64_t[]){pre, a->dims[ax], post}, 3, s);
    if (!x) return NULL;
    xa = 1;
  }
  int64_t shape[CMX_MAX_NDIM];
  int n = 0;
  for (int d = 0; d < x->ndim; d++) {
    shape[n++] = x->dims[d];
    if (d == xa) shape[n++] = repeats;
  }
  int ax1 = xa + 1;
  cmx_array b = cmx__broadcast_to(cmx__expand_dims(x, &ax1, 1, s), shape, n, s);
  return cmx__reshape(b, out, a->ndim, s);
}

cmx_array cmx__tile(cmx_array a, const int64_t* reps, int nreps, cmx_stream s) {
  if (!CMX__ARGS("tile", a)) return NULL;
  if (nreps < 0 || nreps > CMX_MAX_NDIM || (nreps && !reps))
    return CMX__FAIL(CMX_ERR_VALUE, "[tile] Invalid number of repetitions %d.",
                     nreps);
  int nd = a->ndim > nreps ? a->ndim : nreps;
  int64_t shape[CMX_MAX_NDIM], r[CMX_MAX_NDIM], final[CMX_MAX_NDIM];
  int count = 0;
  for (int d = 0; d < nd; d++) {
    int da = d - (nd - a->ndim), dr = d - (nd - nreps);
    shape[d] = da < 0 ? 1 : a->dims[da];
    r[d] = dr < 0 ? 1 : reps[dr];
    if (r[d] < 0)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[tile] Repetitions must be non-negative, got %lld.",
                       (long long)r[d]);
    if (__builtin_mul_overflow(shape[d], r[d], &final[d]))
      return CMX__FAIL(CMX_ERR_VALUE, "[tile] The result is too large.");
    count += r[d] != 1;
  }
  if (count == 0) return cmx__reshape(a, shape, nd, s);
  /* An empty result is made directly: the broadcasts below would have
   * huge intermediate shapes for huge repetitions of an empty axis. */
  if (cmx__shape_size(final, nd) == 0)
    return cmx__zeros(final, nd, a->dtype, s);
  if (nd + count <= CMX_MAX_NDIM) {
    /* One copy: a new size-1 axis before each tiled axis, broadcast to
     * the repetitions, then merged. */
    int64_t ex[CMX_MAX_NDIM], br[CMX_MAX_NDIM];
    int n = 0;
    for (int d = 0; d < nd; d++) {
      if (r[d] != 1) {
        ex[n] = 1;
        br[n++] = r[d];
      }
      ex[n] = br[n] = shape[d];
      n++;
    }
    cmx_array x = cmx__broadcast_to(cmx__reshape(a, ex, n, s), br, n, s);
    return cmx__reshape(x, final, nd, s);
  }
  /* Too many dims for that: tile one axis at a time, each as a 3-d
   * (before, repetitions, axis and after) broadcast. */
  cmx_array x = cmx__reshape(a, shape, nd, s);
  int64_t cur[CMX_MAX_NDIM];
  memcpy(cur, shape, (size_t)nd * sizeof(int64_t));
  for (int d = 0; d < nd && x; d++) {
    if (r[d] == 1) continue;
    int64_t pre = 1, post = 1;
    for (int k = 0; k < d; k++) pre *= cur[k];
    for (int k = d; k < nd; k++) post *= cur[k];
    x = cmx__broadcast_to(cmx__reshape(x, (int64_t[]){pre, 1, post}, 3, s),
                          (int64_t[]){pre, r[d], post}, 3, s);
    cur[d] = final[d];
    x = cmx__reshape(x, cur, nd, s);
  }
  return x;
}

/* Rolls x by shift along ax: x[n-k:] joined with x[:n-k]. */
static cmx_array roll_axis(cmx_array x, int ax, int64_t shift, cmx_stream s) {
  int64_t n = x->dims[ax];
  if (n == 0) return x;
  int64_t k = shift % n;
  if (k < 0) k += n;
  if (k == 0) return x;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int d = 0; d < x->ndim; d++) {
    start[d] = 0;
    stop[d] = x->dims[d];
  }
  start[ax] = n - k;
  cmx_array tail = cmx__slice(x, start, stop, NULL, s);
  start[ax] = 0;
  stop[ax] = n - k;
  cmx_array head = cmx__slice(x, start, stop, NULL, s);
  if (!tail || !head) return NULL;
  return cmx__concatenate((cmx_array[]){tail, head}, 2, ax, s);
}

cmx_array cmx__roll(cmx_array a, const int64_t* shifts, int nshifts,
                    const int* axes, int naxes, cmx_stream s) {
  if (!CMX__ARGS("roll", a)) return NULL;
  if (nshifts < 1 || !shifts)
    return CMX__FAIL(CMX_ERR_VALUE, "[roll] At least one shift is required.");
  if (!axes) {
    /* MLX: several shifts roll the flattened array by each in turn */
    int64_t n = a->size, total = 0;
    for (int i = 0; n > 0 && i < nshifts; i++)
      total = (total + shifts[i] % n) % n;
    cmx_array f = cmx__flatten(a, 0, -1, s);
    if (!f) return NULL;
    return cmx__reshape(roll_axis(f, 0, total, s), a->dims, a->ndim, s);
  }
  if (naxes < 1 || (nshifts != naxes && nshifts != 1))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[roll] Got %d shifts for %d axes; give one shift or one "
                     "per axis.",
                     nshifts, naxes);
  cmx_array x = a;
  for (int i = 0; i < naxes && x; i++) {
    int ax = axes[i];
    if (!cmx__norm_axis("roll", &ax, a->ndim)) return NULL;
    x = roll_axis(x, ax, shifts[nshifts == 1 ? 0 : i], s);
  }
  return x;
}

/* ---------------- public wrappers ---------------- */

cmx_status cmx_slice_update(cmx_array* out, cmx_array src, cmx_array update,
                            const int64_t* start, const int64_t* stop,
                            const int64_t* strides, cmx_stream s) {
  CMX__PUBLIC(out, "slice_update",
              cmx__slice_update(src, update, start, stop, strides, s));
}
cmx_status cmx_concatenate(cmx_array* out, const cmx_array* arrays, int n,
                           int axis, cmx_stream s) {
  CMX__PUBLIC(out, "concatenate", cmx__concatenate(arrays, n, axis, s));
}
cmx_status cmx_stack(cmx_array* out, const cmx_array* arrays, int n, int axis,
                     cmx_stream s) {
  CMX__PUBLIC(out, "stack", cmx__stack(arrays, n, axis, s));
}
cmx_status cmx_split_sections(cmx_array* outs, cmx_array a, int sections,
                              int axis, cmx_stream s) {
  if (!outs) return cmx__error(CMX_ERR_VALUE, "[split] output pointer is NULL");
  for (int i = 0; i < sections; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__split_sections(outs, a, sections, axis, s);
  return cmx__scope_exit_multi(mark, ok, outs, sections);
}
cmx_status cmx_split_indices(cmx_array* outs, cmx_array a,
                             const int64_t* indices, int nindices, int axis,
                             cmx_stream s) {
  if (!outs) return cmx__error(CMX_ERR_VALUE, "[split] output pointer is NULL");
  for (int i = 0; i <= nindices; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__split_indices(outs, a, indices, nindices, axis, s);
  return cmx__scope_exit_multi(mark, ok, outs, nindices + 1);
}
cmx_status cmx_pad(cmx_array* out, cmx_array a, const int* axes,
                   const int64_t* low, const int64_t* high, int naxes,
                   cmx_array value, cmx_pad_mode mode, cmx_stream s) {
  CMX__PUBLIC(out, "pad", cmx__pad(a, axes, low, high, naxes, value, mode, s));
}
cmx_status cmx_repeat(cmx_array* out, cmx_array a, int64_t repeats,
                      const int* axis, cmx_stream s) {
  CMX__PUBLIC(out, "repeat", cmx__repeat(a, repeats, axis, s));
}
cmx_status cmx_tile(cmx_array* out, cmx_array a, const int64_t* reps, int nreps,
                    cmx_stream s) {
  CMX__PUBLIC(out, "tile", cmx__tile(a, reps, nreps, s));
}
cmx_status cmx_roll(cmx_array* out, cmx_array a, const int64_t* shifts,
                    int nshifts, const int* axes, int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "roll", cmx__roll(a, shifts, nshifts, axes, naxes, s));
}

/* ---------------- atleast_*d ---------------- */
cmx_array cmx__atleast_1d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_1d", a)) return NULL;
  if (a->ndim >= 1) return cmx__ref(a);
  int64_t one = 1;
  return cmx__reshape(a, &one, 1, s);
}
cmx_array cmx__atleast_2d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_2d", a)) return NULL;
  if (a->ndim >= 2) return cmx__ref(a);
  int64_t shp[2] = {1, a->ndim == 1 ? a->dims[0] : 1};
  return cmx__reshape(a, shp, 2, s);
}
cmx_array cmx__atleast_3d(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("atleast_3d", a)) return NULL;
  if (a->ndim >= 3) return cmx__ref(a);
  int64_t shp[3] = {1, 1, 1};
  if (a->ndim == 1) shp[1] = a->dims[0];
  if (a->ndim == 2) shp[0] = a->dims[0], shp[1] = a->dims[1];
  return cmx__reshape(a, shp, 3, s);
}

/* ---------------- unstack ---------------- */
bool cmx__unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s) {
  if (!CMX__ARGS("unstack", a)) return false;
  if (a->ndim == 0) {
    cmx__error(CMX_ERR_VALUE, "[unstack] No axis to unstack.");
    return false;
  }
  if (!cmx__norm_axis("unstack", &axis, a->ndim)) return false;
  /* The count of arrays made is an int (2**31 truncated to a negative one). */
  if (a->dims[axis] > INT_MAX) {
    cmx__error(CMX_ERR_VALUE,
               "[unstack] Cannot unstack an axis of %lld into more than "
               "%d arrays.",
               (long long)a->dims[axis], INT_MAX);
    return false;
  }
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++)
    start[d] = 0, stop[d] = a->dims[d], step[d] = 1;
  for (int64_t i = 0; i < a->dims[axis]; i++) {
    start[axis] = i, stop[axis] = i + 1;
    outs[i] = cmx__squeeze(cmx__slice(a, start, stop, step, s), &axis, 1, s);
    if (!outs[i]) {
      for (int64_t j = 0; j < i; j++) outs[j] = NULL;
      return false;
    }
  }
  return true;
}

/* public wrappers of atleast_*d and unstack */
cmx_status cmx_atleast_1d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_1d", cmx__atleast_1d(a, s));
}
cmx_status cmx_atleast_2d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_2d", cmx__atleast_2d(a, s));
}
cmx_status cmx_atleast_3d(cmx_array* out, cmx_array a, cmx_stream s) {
  CMX__PUBLIC(out, "atleast_3d", cmx__atleast_3d(a, s));
}
cmx_status cmx_unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[unstack] output pointer is NULL");
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__unstack(outs, a, axis, s);
  int n = 0;
  if (ok) {
    int ax = axis;
    cmx__norm_axis("unstack", &ax, a->ndim);
    n = (int)a->dims[ax];
  }
  return cmx__scope_exit_multi(mark, ok, outs, n);
}
