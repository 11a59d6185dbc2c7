/* Indexing as Python writes it: a[index], a[index] = v and
 * a.at[index].op(v), for index tuples of ints, slices, None, Ellipsis and
 * integer arrays, with NumPy's rules.
 *
 * The index is parsed once (ellipsis expanded, ints and slices
 * normalised, the advanced entries' broadcast shape B and its place in
 * the result found). Reads slice first (a view), then gather the advanced
 * axes. Writes without arrays are slice updates; the rest are scatters
 * whose index arrays cover every indexed axis (slices become aranges)
 * except a trailing run of full slices, which stays as the update's slice
 * so whole rows are written at once. */
#include <string.h>

#include "ops/shape_internal.h"

#define MAX_ENTRIES (3 * CMX_MAX_NDIM)

typedef struct {
  cmx_index_kind kind;       /* INT, SLICE, NEWAXIS or ARRAY (no ELLIPSIS) */
  int axis;                  /* the axis consumed; -1 for NEWAXIS */
  int64_t value;             /* INT: the index, wrapped */
  int64_t start, stop, step; /* SLICE: Python values, omissions filled */
  int64_t first, len;        /* SLICE: first element and element count */
  bool full;                 /* SLICE: the whole axis in order */
  bool adv;                  /* ARRAY, or INT when an array is present */
  cmx_array array;
} entry;

typedef struct {
  int n;
  entry e[MAX_ENTRIES];
  bool has_array;
  int nadv, first_adv;
  bool consecutive; /* the advanced entries are adjacent */
  int nb;           /* B: the broadcast shape of the advanced entries */
  int64_t B[CMX_MAX_NDIM];
  int place; /* B's position among the result dims */
  int nt;    /* T: the shape of a[index] */
  int64_t T[CMX_MAX_NDIM];
} parsed;

static entry full_slice(void) {
  entry x;
  memset(&x, 0, sizeof x);
  x.kind = CMX_INDEX_SLICE;
  x.start = x.stop = x.step = CMX_SLICE_NONE;
  return x;
}

/* Normalises entry x on axis ax of a. */
static bool norm_entry(const char* op, cmx_array a, entry* x, int ax) {
  x->axis = ax;
  int64_t dim = ax >= 0 ? a->dims[ax] : 0;
  switch (x->kind) {
    case CMX_INDEX_INT:
      if (x->value < -dim || x->value >= dim) {
        cmx__error(CMX_ERR_INDEX,
                   "[%s] Index %lld is out of bounds for axis %d with size "
                   "%lld.",
                   op, (long long)x->value, ax, (long long)dim);
        return false;
      }
      if (x->value < 0) x->value += dim;
      return true;
    case CMX_INDEX_SLICE: {
      int64_t step = x->step == CMX_SLICE_NONE ? 1 : x->step;
      if (step == 0) {
        cmx__error(CMX_ERR_VALUE, "[%s] Slice step cannot be zero.", op);
        return false;
      }
      x->step = step;
      if (x->start == CMX_SLICE_NONE) x->start = step > 0 ? 0 : INT64_MAX;
      if (x->stop == CMX_SLICE_NONE) x->stop = step > 0 ? INT64_MAX : INT64_MIN;
      cmx__slice_params q;
      bool neg;
      if (!cmx__norm_slice(op, &dim, 1, &x->start, &x->stop, &step, &q, &x->len,
                           &neg))
        return false;
      x->first = q.start[0];
      if (x->len <= 1) { /* the same element(s) with step 1 (norm_slice) */
        x->step = step = 1;
        x->start = x->first;
        x->stop = x->first + x->len;
      }
      x->full = x->len == dim && (step == 1 || dim <= 1);
      return true;
    }
    case CMX_INDEX_ARRAY:
      if (!x->array) {
        if (!cmx__error_pending())
          cmx__error(CMX_ERR_VALUE, "[%s] index array is a null array", op);
        return false;
      }
      if (x->array->dtype == CMX_BOOL) {
        cmx__error(CMX_ERR_TYPE,
                   "[%s] Boolean index arrays are not supported here; pass "
                   "integer indices.",
                   op);
        return false;
      }
      if (!cmx_dtype_is_integer(x->array->dtype)) {
        cmx__error(CMX_ERR_TYPE,
                   "[%s] Index arrays must have an integer dtype, got %s.", op,
                   cmx_dtype_name(x->array->dtype));
        return false;
      }
      return true;
    default:
      return true;
  }
}

/* The broadcast shape of the advanced entries, with NumPy's IndexError. */
static bool adv_shape(const char* op, parsed* P) {
  P->nb = 0;
  for (int i = 0; i < P->n; i++) {
    entry* x = &P->e[i];
    if (x->kind != CMX_INDEX_ARRAY) continue;
    cmx_array ar = x->array;
    int nd = ar->ndim > P->nb ? ar->ndim : P->nb;
    int64_t out[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
      int da = d - (nd - ar->ndim), db = d - (nd - P->nb);
      int64_t ea = da < 0 ? 1 : ar->dims[da], eb = db < 0 ? 1 : P->B[db];
      if (ea != eb && ea != 1 && eb != 1) {
        char s1[512], s2[512];
        cmx__error(CMX_ERR_INDEX,
                   "[%s] shape mismatch: indexing arrays could not be "
                   "broadcast together with shapes %s %s.",
                   op, cmx__shape_str(P->B, P->nb, s1, sizeof s1),
                   cmx__shape_str(ar->dims, ar->ndim, s2, sizeof s2));
        return false;
      }
      out[d] = ea == 1 ? eb : ea;
    }
    memcpy(P->B, out, (size_t)nd * sizeof(int64_t));
    P->nb = nd;
  }
  return true;
}

static bool parse(const char* op, cmx_array a, const cmx_index* index, int n,
                  parsed* P) {
  P->n = 0;
  if (n < 0 || (n && !index)) {
    cmx__error(CMX_ERR_VALUE, "[%s] Invalid index list.", op);
    return false;
  }
  int nell = 0, ncons = 0, extra = 0; /* extra: entries masks add */
  for (int i = 0; i < n; i++) {
    switch (index[i].kind) {
      case CMX_INDEX_ELLIPSIS:
        nell++;
        break;
      case CMX_INDEX_NEWAXIS:
        break;
      case CMX_INDEX_INT:
      case CMX_INDEX_SLICE:
      case CMX_INDEX_ARRAY:
        ncons++;
        break;
      case CMX_INDEX_MASK:
        if (!index[i].array || index[i].array->dtype != CMX_BOOL) {
          cmx__error(CMX_ERR_TYPE, "[%s] A mask index must be a boolean array.",
                     op);
          return false;
        }
        ncons += index[i].array->ndim;
        extra += index[i].array->ndim - 1;
        break;
      default:
        cmx__error(CMX_ERR_VALUE, "[%s] Unknown index kind %d.", op,
                   (int)index[i].kind);
        return false;
    }
  }
  if (nell > 1) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] An index can only have a single ellipsis (...).", op);
    return false;
  }
  if (ncons > a->ndim) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Too many indices for array with %d dimensions (got %d).",
               op, a->ndim, ncons);
    return false;
  }
  if (n - nell + a->ndim - ncons + extra > MAX_ENTRIES) {
    cmx__error(CMX_ERR_INDEX, "[%s] Too many index entries (%d).", op, n);
    return false;
  }
  /* Expand the ellipsis (or pad the end) with full slices, and masks
   * into the integer arrays of their true elements' coordinates. */
  int fill = a->ndim - ncons, ax = 0;
  for (int i = 0; i <= n; i++) {
    if (i == n ? nell == 0 : index[i].kind == CMX_INDEX_ELLIPSIS) {
      for (int f = 0; f < fill; f++) P->e[P->n++] = full_slice();
      ax += fill;
      continue;
    }
    if (i == n) break;
    if (index[i].kind == CMX_INDEX_MASK) {
      cmx_array m = index[i].array, coords[CMX_MAX_NDIM];
      if (!cmx__mask_coords(op, m, a->dims + ax, ax, coords)) return false;
      for (int d = 0; d < m->ndim; d++) {
        entry x;
        memset(&x, 0, sizeof x);
        x.kind = CMX_INDEX_ARRAY;
        x.array = coords[d];
        P->e[P->n++] = x;
      }
      ax += m->ndim;
      continue;
    }
    ax += index[i].kind != CMX_INDEX_NEWAXIS;
    entry x;
    memset(&x, 0, sizeof x);
    x.kind = index[i].kind;
    x.value = index[i].value;
    x.start = index[i].start;
    x.stop = index[i].stop;
    x.step = index[i].step;
    x.array = index[i].array;
    P->e[P->n++] = x;
  }
  ax = 0;
  P->has_array = false;
  for (int i = 0; i < P->n; i++) {
    entry* x = &P->e[i];
    if (!norm_entry(op, a, x, x->kind == CMX_INDEX_NEWAXIS ? -1 : ax))
      return false;
    if (x->kind != CMX_INDEX_NEWAXIS) ax++;
    P->has_array |= x->kind == CMX_INDEX_ARRAY;
  }
  /* Advanced entries and where their dims go (NumPy): at the first one's
   * place when they are adjacent, else in front. */
  P->nadv = 0;
  P->first_adv = -1;
  int last = -1;
  for (int i = 0; i < P->n; i++) {
    entry* x = &P->e[i];
    x->adv = x->kind == CMX_INDEX_ARRAY ||
             (x->kind == CMX_INDEX_INT && P->has_array);
    if (!x->adv) continue;
    if (P->first_adv < 0) P->first_adv = i;
    last = i;
    P->nadv++;
  }
  P->consecutive = P->nadv > 0 && last - P->first_adv + 1 == P->nadv;
  if (!adv_shape(op, P)) return false;
  /* Non-empty index arrays cannot index an empty axis (every value
   * would be out of bounds; NumPy raises IndexError too). */
  if (cmx__shape_size(P->B, P->nb) != 0)
    for (int i = 0; i < P->n; i++) {
      entry* x = &P->e[i];
      if (x->kind == CMX_INDEX_ARRAY && a->dims[x->axis] == 0) {
        cmx__error(CMX_ERR_INDEX,
                   "[%s] Index arrays cannot index axis %d of size 0.", op,
                   x->axis);
        return false;
      }
    }
  P->place = 0;
  if (P->consecutive)
    for (int i = 0; i < P->first_adv; i++)
      P->place +=
          P->e[i].kind == CMX_INDEX_SLICE || P->e[i].kind == CMX_INDEX_NEWAXIS;
  /* T = R[:place] + B + R[place:], R the slice and newaxis dims. */
  int64_t R[MAX_ENTRIES];
  int nr = 0;
  for (int i = 0; i < P->n; i++) {
    entry* x = &P->e[i];
    if (x->kind == CMX_INDEX_SLICE) R[nr++] = x->len;
    if (x->kind == CMX_INDEX_NEWAXIS) R[nr++] = 1;
  }
  P->nt = nr + P->nb;
  if (P->nt > CMX_MAX_NDIM) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The result would have %d dimensions; at most %d are "
               "supported.",
               op, P->nt, CMX_MAX_NDIM);
    return false;
  }
  for (int j = 0, k = 0; j < P->nt; j++)
    P->T[j] = j < P->place           ? R[k++]
              : j < P->place + P->nb ? P->B[j - P->place]
                                     : R[k++];
  return true;
}

/* Result positions of the newaxis entries in T; returns their count. */
static int newaxis_positions(const parsed* P, int* pos) {
  int n = 0;
  for (int i = 0, j = 0; i < P->n; i++) {
    const entry* x = &P->e[i];
    if (x->kind != CMX_INDEX_SLICE && x->kind != CMX_INDEX_NEWAXIS) continue;
    if (x->kind == CMX_INDEX_NEWAXIS) pos[n++] = j < P->place ? j : j + P->nb;
    j++;
  }
  return n;
}

/* Per-axis start/stop/step of the basic part of the index: slices as
 * given, non-advanced ints as one-element slices, advanced axes whole. */
static void basic_region(const parsed* P, cmx_array a, int64_t* start,
                         int64_t* stop, int64_t* step) {
  for (int i = 0; i < P->n; i++) {
    const entry* x = &P->e[i];
    int ax = x->axis;
    if (ax < 0) continue;
    if (x->kind == CMX_INDEX_SLICE) {
      start[ax] = x->start;
      stop[ax] = x->stop;
      step[ax] = x->step;
    } else if (!x->adv) {
      start[ax] = x->value;
      stop[ax] = x->value + 1;
      step[ax] = 1;
    } else {
      start[ax] = 0;
      stop[ax] = a->dims[ax];
      step[ax] = 1;
    }
  }
}

cmx_array cmx__index_get(cmx_array a, const cmx_index* index, int n,
                         cmx_stream s) {
  const char* op = "index";
  if (!CMX__ARGS(op, a)) return NULL;
  if (n == 0) return a;
  parsed P;
  if (!parse(op, a, index, n, &P)) return NULL;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  basic_region(&P, a, start, stop, step);
  cmx_array v = cmx__slice(a, start, stop, step, s);
  int axes[CMX_MAX_NDIM], k = 0;
  if (!P.has_array) {
    for (int i = 0; i < P.n; i++)
      if (P.e[i].kind == CMX_INDEX_INT) axes[k++] = P.e[i].axis;
    if (k) v = cmx__squeeze(v, axes, k, s);
  } else {
    /* Gather the advanced axes (ints as 0-d indices), whole slices of
     * the others: shape B + v.shape with 1 on the advanced axes. */
    cmx_array idx[CMX_MAX_NDIM];
    int64_t sizes[CMX_MAX_NDIM];
    if (!v) return NULL;
    memcpy(sizes, v->dims, (size_t)v->ndim * sizeof(int64_t));
    for (int i = 0; i < P.n; i++) {
      entry* x = &P.e[i];
      if (!x->adv) continue;
      idx[k] = x->kind == CMX_INDEX_ARRAY
                   ? x->array
                   : cmx__scalar((double)x->value, CMX_INT64);
      axes[k] = x->axis;
      sizes[x->axis] = 1;
      k++;
    }
    cmx_array g = cmx__gather(v, idx, k, axes, k, sizes, v->ndim, s);
    int sq[CMX_MAX_NDIM];
    for (int i = 0; i < k; i++) sq[i] = P.nb + axes[i];
    v = cmx__squeeze(g, sq, k, s);
    /* B + slice dims; B goes after the slice dims that precede it. */
    int before = 0;
    if (P.consecutive)
      for (int i = 0; i < P.first_adv; i++)
        before += P.e[i].kind == CMX_INDEX_SLICE;
    if (v && before > 0) {
      int perm[CMX_MAX_NDIM], m = 0;
      for (int d = 0; d < before; d++) perm[m++] = P.nb + d;
      for (int d = 0; d < P.nb; d++) perm[m++] = d;
      for (int d = P.nb + before; d < v->ndim; d++) perm[m++] = d;
      v = cmx__transpose(v, perm, v->ndim, s);
    }
  }
  int pos[MAX_ENTRIES];
  int npos = newaxis_positions(&P, pos);
  return npos ? cmx__expand_dims(v, pos, npos, s) : v;
}

/* value converted to a's dtype and broadcast to T (leading size-1 dims
 * beyond T's rank dropped, as NumPy and MLX do). */
static cmx_array value_to_T(const char* op, cmx_array a, const parsed* P,
                            cmx_array value, cmx_stream s) {
  cmx_array v = cmx__as_dtype(value, a->dtype, s);
  if (!v) return NULL;
  int lead = 0;
  while (v->ndim - lead > P->nt && v->dims[lead] == 1) lead++;
  bool ok = v->ndim - lead <= P->nt;
  for (int d = lead; ok && d < v->ndim; d++) {
    int64_t e = v->dims[d], t = P->T[P->nt - (v->ndim - d)];
    ok = e == t || e == 1;
  }
  if (!ok) {
    char s1[512], s2[512];
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Cannot broadcast value of shape %s to the indexed "
                     "shape %s.",
                     op, cmx__shape_str(v->dims, v->ndim, s1, sizeof s1),
                     cmx__shape_str(P->T, P->nt, s2, sizeof s2));
  }
  if (lead) v = cmx__reshape(v, v->dims + lead, v->ndim - lead, s);
  return cmx__broadcast_to(v, P->T, P->nt, s);
}

/* a[index] (op)= v where nothing is written (an empty T): a itself, but
 * the index arrays must still be in bounds, as NumPy checks them (a[[5]] =
 * v on a of shape (3, 0) raises). Their values are known only at eval, so
 * each one gathers from a stand-in of its axis (a broadcast, no data) and
 * the result depends on those gathers. */
static cmx_array check_only(const char* op, cmx_array a, const parsed* P,
                            cmx_stream s) {
  cmx_array probes[MAX_ENTRIES];
  int k = 0;
  for (int i = 0; i < P->n; i++) {
    const entry* x = &P->e[i];
    if (x->kind != CMX_INDEX_ARRAY || x->array->size == 0) continue;
    int64_t dim = a->dims[x->axis];
    if (dim == 0)
      return CMX__FAIL(CMX_ERR_INDEX,
                       "[%s] Index out of bounds for axis %d with size 0.", op,
                       x->axis);
    /* a (1, ..., 1, dim) stand-in keeps the axis in the kernel's message */
    int nd = x->axis + 2 <= CMX_MAX_NDIM ? x->axis + 1 : 1;
    int64_t shape[CMX_MAX_NDIM], ones[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) shape[d] = 1, ones[d] = 1;
    shape[nd - 1] = dim;
    int ax = nd - 1;
    int64_t n = x->array->size;
    cmx_array probe = cmx__broadcast_to(cmx__scalar(0, CMX_BOOL), shape, nd, s);
    cmx_array idx = cmx__reshape(x->array, &n, 1, s);
    probes[k] = cmx__gather(probe, &idx, idx ? 1 : 0, &ax, 1, ones, nd, s);
    if (!probes[k++]) return NULL;
  }
  if (k == 0) return a;
  cmx_array r;
  return cmx__depends(&r, &a, 1, probes, k, s) ? r : NULL;
}

/* The scatter for a[index] (op)= vT, vT of shape T. */
static cmx_array scatter_index(const char* op, cmx_array a, const parsed* P,
                               cmx_array vT, cmx__scatter_mode mode,
                               cmx_stream s) {
  if (!vT) return NULL;
  if (vT->size == 0) return check_only(op, a, P, s);
  /* A trailing run of full slices stays in the update's slice. */
  int t = P->n;
  while (t > 0 && P->e[t - 1].kind == CMX_INDEX_SLICE && P->e[t - 1].full) t--;
  int ntail = P->n - t;
  int nnt = a->ndim - ntail; /* indexed axes: 0 .. nnt-1 */
  int fr = P->nt - ntail;    /* F = T[:fr], the index shape */
  cmx_array idx[CMX_MAX_NDIM];
  int axes[CMX_MAX_NDIM], k = 0;
  for (int i = 0, j = 0; i < t; i++) {
    const entry* x = &P->e[i];
    int64_t shape[CMX_MAX_NDIM];
    for (int d = 0; d < fr; d++) shape[d] = 1;
    if (x->kind == CMX_INDEX_NEWAXIS) {
      j++;
      continue;
    }
    cmx_array ix;
    if (x->kind == CMX_INDEX_SLICE) {
      /* The slice as an arange on its own result dim. */
      int r = j < P->place ? j : j + P->nb;
      j++;
      shape[r] = x->len;
      ix = cmx__arange((double)x->first,
                       (double)x->first + (double)x->step * (double)x->len,
                       (double)x->step, CMX_INT64, s);
    } else if (x->kind == CMX_INDEX_ARRAY) {
      /* Right-aligned within B's block. */
      cmx_array ar = x->array;
      int off = P->place + P->nb - ar->ndim;
      for (int d = 0; d < ar->ndim; d++) shape[off + d] = ar->dims[d];
      ix = ar;
    } else {
      ix = cmx__scalar((double)x->value, CMX_INT64);
    }
    idx[k] = cmx__reshape(ix, shape, fr, s);
    axes[k] = x->axis;
    k++;
  }
  cmx_array upd;
  if (nnt == 0) {
    upd = cmx__reshape(vT, a->dims, a->ndim, s);
  } else {
    int ex[CMX_MAX_NDIM];
    for (int d = 0; d < nnt; d++) ex[d] = fr + d;
    upd = cmx__expand_dims(vT, ex, nnt, s);
  }
  return cmx__scatter_op(op, a, idx, k, upd, axes, k, mode, s);
}

cmx_array cmx__index_set(cmx_array a, const cmx_index* index, int n,
                         cmx_array value, cmx_stream s) {
  const char* op = "index_set";
  if (!CMX__ARGS(op, a, value)) return NULL;
  parsed P;
  if (!parse(op, a, index, n, &P)) return NULL;
  cmx_array vT = value_to_T(op, a, &P, value, s);
  if (P.has_array) return scatter_index(op, a, &P, vT, CMX__SCATTER_NONE, s);
  /* Basic index: a slice update. The region has a's rank: slice lengths,
   * and 1 on integer-indexed axes. */
  int pos[MAX_ENTRIES], ints[CMX_MAX_NDIM], nints = 0;
  int npos = newaxis_positions(&P, pos);
  if (npos) vT = cmx__squeeze(vT, pos, npos, s);
  for (int i = 0; i < P.n; i++)
    if (P.e[i].kind == CMX_INDEX_INT) ints[nints++] = P.e[i].axis;
  if (nints) vT = cmx__expand_dims(vT, ints, nints, s);
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  basic_region(&P, a, start, stop, step);
  return cmx__slice_update(a, vT, start, stop, step, s);
}

/* a[index] (mode)= value, as a scatter; `op` names the caller. */
static cmx_array index_update_mode(const char* op, cmx_array a,
                                   const cmx_index* index, int n,
                                   cmx_array value, cmx__scatter_mode mode,
                                   cmx_stream s) {
  if (!CMX__ARGS(op, a, value)) return NULL;
  parsed P;
  if (!parse(op, a, index, n, &P)) return NULL;
  return scatter_index(op, a, &P, value_to_T(op, a, &P, value, s), mode, s);
}

cmx_array cmx__index_update(cmx_array a, const cmx_index* index, int n,
                            cmx_array value, cmx_index_update_op uop,
                            cmx_stream s) {
  const char* op = "index_update";
  if (!CMX__ARGS(op, a, value)) return NULL;
  cmx__scatter_mode mode;
  switch (uop) {
    case CMX_UPDATE_ADD:
      mode = CMX__SCATTER_ADD;
      break;
    case CMX_UPDATE_SUBTRACT:
      /* MLX: scatter_add of the negated values (in a's dtype). */
      if (a->dtype == CMX_BOOL)
        return CMX__FAIL(CMX_ERR_TYPE,
                         "[%s] subtract is not supported for bool arrays.", op);
      mode = CMX__SCATTER_ADD;
      value = cmx__negative(cmx__as_dtype(value, a->dtype, s), s);
      break;
    case CMX_UPDATE_MULTIPLY:
      mode = CMX__SCATTER_PROD;
      break;
    case CMX_UPDATE_DIVIDE:
      /* MLX: scatter_prod of the reciprocals, converted to a's dtype. */
      mode = CMX__SCATTER_PROD;
      value = cmx__reciprocal(cmx__as_dtype(value, a->dtype, s), s);
      break;
    case CMX_UPDATE_MAXIMUM:
      mode = CMX__SCATTER_MAX;
      break;
    case CMX_UPDATE_MINIMUM:
      mode = CMX__SCATTER_MIN;
      break;
    default:
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] Unknown update op %d.", op,
                       (int)uop);
  }
  return index_update_mode(op, a, index, n, value, mode, s);
}

/* src[start:stop:strides] (mode)= update through the index machinery. */
static cmx_array slice_update_mode(const char* op, cmx_array src,
                                   cmx_array update, const int64_t* start,
                                   const int64_t* stop, const int64_t* strides,
                                   cmx__scatter_mode mode, cmx_stream s) {
  if (!CMX__ARGS(op, src, update)) return NULL;
  if (src->ndim && (!start || !stop))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] start and stop are required.", op);
  cmx_index ix[CMX_MAX_NDIM];
  for (int d = 0; d < src->ndim; d++) {
    /* INT64_MIN is the "omitted" marker of cmx_index; INT64_MIN + 1
     * clamps the same way as a slice bound. */
    int64_t b = start[d] == INT64_MIN ? INT64_MIN + 1 : start[d];
    int64_t e = stop[d] == INT64_MIN ? INT64_MIN + 1 : stop[d];
    int64_t st = strides ? strides[d] : 1;
    if (st == INT64_MIN) st = INT64_MIN + 1;
    ix[d] = cmx_index_slice(b, e, st);
  }
  return index_update_mode(op, src, ix, src->ndim, update, mode, s);
}

#define SLICE_UPDATE_VARIANT(name, mode)                                       \
  cmx_array cmx__##name(cmx_array src, cmx_array update, const int64_t* start, \
                        const int64_t* stop, const int64_t* strides,           \
                        cmx_stream s) {                                        \
    return slice_update_mode(#name, src, update, start, stop, strides, mode,   \
                             s);                                               \
  }                                                                            \
  cmx_status cmx_##name(cmx_array* out, cmx_array src, cmx_array update,       \
                        const int64_t* start, const int64_t* stop,             \
                        const int64_t* strides, cmx_stream s) {                \
    CMX__PUBLIC(out, #name,                                                    \
                cmx__##name(src, update, start, stop, strides, s));            \
  }
SLICE_UPDATE_VARIANT(slice_update_add, CMX__SCATTER_ADD)
SLICE_UPDATE_VARIANT(slice_update_prod, CMX__SCATTER_PROD)
SLICE_UPDATE_VARIANT(slice_update_max, CMX__SCATTER_MAX)
SLICE_UPDATE_VARIANT(slice_update_min, CMX__SCATTER_MIN)

cmx_status cmx_index_get(cmx_array* out, cmx_array a, const cmx_index* index,
                         int n, cmx_stream s) {
  CMX__PUBLIC(out, "index", cmx__index_get(a, index, n, s));
}
cmx_status cmx_index_set(cmx_array* out, cmx_array a, const cmx_index* index,
                         int n, cmx_array value, cmx_stream s) {
  CMX__PUBLIC(out, "index_set", cmx__index_set(a, index, n, value, s));
}
cmx_status cmx_index_update(cmx_array* out, cmx_array a, const cmx_index* index,
                            int n, cmx_array value, cmx_index_update_op op,
                            cmx_stream s) {
  CMX__PUBLIC(out, "index_update",
              cmx__index_update(a, index, n, value, op, s));
}
