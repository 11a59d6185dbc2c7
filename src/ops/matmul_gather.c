/* Gathered and masked matrix products: gather_mm, segmented_mm and
 * block_masked_mm, with MLX's signatures and checks.
 *
 * block_masked_mm expands its block masks to element masks and composes
 * where/multiply with matmul (so it inherits their transform rules);
 * gather_mm and segmented_mm are primitives (GatherMM, SegmentedMM) for
 * speed. */
#include "primitives/matmul_gather.h"

#include <string.h>

#include "ops/ops_internal.h"

/* ---------------- shared checks of the products ---------------- */
/* Result dtype of a @ b for op, which takes real floating types only. */
static bool product_dtype(const char* op, cmx_array a, cmx_array b,
                          cmx_dtype* dt) {
  cmx_array ab[2] = {a, b};
  *dt = cmx__result_type(ab, 2);
  if (cmx_dtype_is_floating(*dt)) return true;
  cmx__error(CMX_ERR_VALUE,
             "[%s] Only real floating point types are supported but %s and "
             "%s were provided which results in %s, which is not a real "
             "floating point type.",
             op, cmx_dtype_name(a->dtype), cmx_dtype_name(b->dtype),
             cmx_dtype_name(*dt));
  return false;
}

/* a and b promoted to >= 2-d as matmul does (a 1-d a is a row, a 1-d b a
 * column), with the inner dimensions checked. */
static bool promote_operands(const char* op, cmx_array* a, cmx_array* b,
                             cmx_stream s) {
  if ((*a)->ndim == 0 || (*b)->ndim == 0) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Got 0 dimension input. Inputs must have at least one "
               "dimension.",
               op);
    return false;
  }
  int zero = 0, one = 1;
  if ((*a)->ndim == 1) *a = cmx__expand_dims(*a, &zero, 1, s);
  if ((*b)->ndim == 1) *b = cmx__expand_dims(*b, &one, 1, s);
  if (!*a || !*b) return false;
  int64_t k1 = (*a)->dims[(*a)->ndim - 1], k2 = (*b)->dims[(*b)->ndim - 2];
  if (k1 != k2) {
    char s1[512], s2[512];
    cmx__error(CMX_ERR_VALUE,
               "[%s] Last dimension of first input with shape %s must match "
               "second to last dimension of second input with shape %s.",
               op, cmx__shape_str((*a)->dims, (*a)->ndim, s1, sizeof s1),
               cmx__shape_str((*b)->dims, (*b)->ndim, s2, sizeof s2));
    return false;
  }
  return true;
}

/* Drops the dims that promote_operands inserted (last two of out). */
static cmx_array unpromote(cmx_array out, int a_ndim, int b_ndim,
                           cmx_stream s) {
  if (!out) return NULL;
  int axes[2], n = 0;
  if (a_ndim == 1) axes[n++] = out->ndim - 2;
  if (b_ndim == 1) axes[n++] = out->ndim - 1;
  return n ? cmx__squeeze(out, axes, n, s) : out;
}

/* ---------------- gather_mm ---------------- */
/* The given indices as uint32, or the default arange over x's batch. */
static cmx_array gather_indices(const char* which, cmx_array idx, cmx_array x,
                                cmx_stream s) {
  if (idx) {
    if (!cmx_dtype_is_integer(idx->dtype))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[gather_mm] Got %s with invalid dtype. Indices must "
                       "be integral.",
                       which);
    return cmx__as_dtype(idx, CMX_UINT32, s);
  }
  int nb = x->ndim - 2;
  int64_t total = 1;
  for (int d = 0; d < nb; d++) total *= x->dims[d];
  return cmx__reshape(cmx__arange(0, (double)total, 1, CMX_UINT32, s), x->dims,
                      nb, s);
}

cmx_array cmx__gather_mm(cmx_array a, cmx_array b, cmx_array lhs_indices,
                         cmx_array rhs_indices, bool sorted_indices,
                         cmx_stream s) {
  if (!CMX__ARGS("gather_mm", a, b)) return NULL;
  if (!lhs_indices && !rhs_indices) return cmx__matmul(a, b, s);
  int a_nd = a->ndim, b_nd = b->ndim;
  if (!promote_operands("gather_mm", &a, &b, s)) return NULL;
  cmx_dtype dt;
  if (!product_dtype("gather_mm", a, b, &dt)) return NULL;
  cmx_array li = gather_indices("lhs_indices", lhs_indices, a, s);
  cmx_array ri = li ? gather_indices("rhs_indices", rhs_indices, b, s) : NULL;
  if (!li || !ri) return NULL;
  int64_t shape[CMX_MAX_NDIM + 2];
  int nd;
  if (!cmx__broadcast_shape("gather_mm", li->dims, li->ndim, ri->dims, ri->ndim,
                            shape, &nd))
    return NULL;
  if (nd + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[gather_mm] Too many index dimensions.");
  cmx__gather_mm_params q;
  memset(&q, 0, sizeof q);
  q.left_sorted = sorted_indices && !rhs_indices;
  q.right_sorted = sorted_indices && !lhs_indices;
  cmx_array in[4] = {cmx__as_dtype(a, dt, s), cmx__as_dtype(b, dt, s),
                     cmx__broadcast_to(li, shape, nd, s),
                     cmx__broadcast_to(ri, shape, nd, s)};
  shape[nd] = a->dims[a->ndim - 2];
  shape[nd + 1] = b->dims[b->ndim - 1];
  cmx_array out =
      cmx__apply(&cmx__vt_GatherMM, &q, sizeof q, s, in, 4, shape, nd + 2, dt);
  return unpromote(out, a_nd, b_nd, s);
}

/* ---------------- segmented_mm ---------------- */
cmx_array cmx__segmented_mm(cmx_array a, cmx_array b, cmx_array segments,
                            cmx_stream s) {
  if (!CMX__ARGS("segmented_mm", a, b, segments)) return NULL;
  if (a->ndim != 2 || b->ndim != 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[segmented_mm] Batched matmul not supported: a and b "
                     "must be 2-D but have %d and %d dimensions.",
                     a->ndim, b->ndim);
  char s1[512], s2[512];
  if (segments->ndim < 1 || segments->dims[segments->ndim - 1] != 2)
    return CMX__FAIL(
        CMX_ERR_VALUE,
        "[segmented_mm] The segments should have shape (..., 2) "
        "but %s was provided.",
        cmx__shape_str(segments->dims, segments->ndim, s1, sizeof s1));
  if (a->dims[1] != b->dims[0])
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[segmented_mm] Last dimension of first input with shape "
                     "%s must match first dimension of second input with "
                     "shape %s.",
                     cmx__shape_str(a->dims, 2, s1, sizeof s1),
                     cmx__shape_str(b->dims, 2, s2, sizeof s2));
  cmx_dtype dt;
  if (!product_dtype("segmented_mm", a, b, &dt)) return NULL;
  if (!cmx_dtype_is_integer(segments->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[segmented_mm] Got segments with invalid dtype. "
                     "Segments must be integral.");
  int64_t shape[CMX_MAX_NDIM + 1];
  int nd = segments->ndim - 1;
  if (nd + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[segmented_mm] Too many segment dimensions.");
  memcpy(shape, segments->dims, (size_t)nd * sizeof *shape);
  shape[nd] = a->dims[0];
  shape[nd + 1] = b->dims[1];
  cmx_array in[3] = {cmx__as_dtype(a, dt, s), cmx__as_dtype(b, dt, s),
                     cmx__as_dtype(segments, CMX_UINT32, s)};
  return cmx__apply(&cmx__vt_SegmentedMM, NULL, 0, s, in, 3, shape, nd + 2, dt);
}

/* ---------------- block_masked_mm ---------------- */
/* mask (..., Y, X) of blocks broadcast to batch + (Y, X), converted to dt
 * and expanded to elements: (..., rows, cols), block (y, x) covering rows
 * [y * bs, (y + 1) * bs) and columns [x * bs, (x + 1) * bs). */
static cmx_array expand_mask(const char* which, cmx_array mask,
                             const int64_t* batch, int nb, int64_t Y, int64_t X,
                             int64_t rows, int64_t cols, int bs, cmx_dtype dt,
                             cmx_stream s) {
  int64_t shape[CMX_MAX_NDIM + 4];
  memcpy(shape, batch, (size_t)nb * sizeof *shape);
  shape[nb] = Y, shape[nb + 1] = X;
  int64_t bsh[CMX_MAX_NDIM];
  int nbs;
  char s1[512], s2[512];
  if (mask->ndim > nb + 2 ||
      !cmx__broadcast_shape("block_masked_mm", mask->dims, mask->ndim, shape,
                            nb + 2, bsh, &nbs) ||
      memcmp(bsh, shape, (size_t)(nb + 2) * sizeof *shape)) {
    cmx__error_reset_pending();
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[block_masked_mm] %s with shape %s cannot be broadcast "
                     "to the block shape %s.",
                     which,
                     cmx__shape_str(mask->dims, mask->ndim, s1, sizeof s1),
                     cmx__shape_str(shape, nb + 2, s2, sizeof s2));
  }
  if (nb + 4 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[block_masked_mm] Too many batch dimensions.");
  cmx_array m = cmx__broadcast_to(cmx__as_dtype(mask, dt, s), shape, nb + 2, s);
  int64_t e[CMX_MAX_NDIM];
  memcpy(e, batch, (size_t)nb * sizeof *e);
  e[nb] = Y, e[nb + 1] = 1, e[nb + 2] = X, e[nb + 3] = 1;
  m = cmx__reshape(m, e, nb + 4, s);
  e[nb + 1] = bs, e[nb + 3] = bs;
  m = cmx__broadcast_to(m, e, nb + 4, s);
  int64_t f[CMX_MAX_NDIM];
  memcpy(f, batch, (size_t)nb * sizeof *f);
  f[nb] = Y * bs, f[nb + 1] = X * bs;
  m = cmx__reshape(m, f, nb + 2, s);
  if (!m) return NULL;
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < nb + 2; d++) stop[d] = f[d], step[d] = 1;
  stop[nb] = rows, stop[nb + 1] = cols;
  return cmx__slice(m, start, stop, step, s);
}

/* A 0-d mask as shape (1,), so the 1-d operands' axes can be added. */
static cmx_array atleast_1d(cmx_array m, cmx_stream s) {
  int64_t one = 1;
  return m && m->ndim == 0 ? cmx__reshape(m, &one, 1, s) : m;
}

/* x with its blocks masked: where() for bool masks (masked blocks become
 * exactly zero), a product for numeric ones (blocks scaled), as MLX. */
static cmx_array apply_mask(cmx_array x, cmx_array m, cmx_stream s) {
  if (!m || !x) return NULL;
  if (m->dtype == CMX_BOOL)
    return cmx__where(m, x, cmx__scalar(0, x->dtype), s);
  return cmx__multiply(x, m, s);
}

cmx_array cmx__block_masked_mm(cmx_array a, cmx_array b, int block_size,
                               cmx_array mask_out, cmx_array mask_lhs,
                               cmx_array mask_rhs, cmx_stream s) {
  if (!CMX__ARGS("block_masked_mm", a, b)) return NULL;
  if (!mask_out && !mask_lhs && !mask_rhs) return cmx__matmul(a, b, s);
  if (block_size != 32 && block_size != 64)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[block_masked_mm] Only block_sizes 32, 64 are "
                     "supported. Got block size %d.",
                     block_size);
  int a_nd = a->ndim, b_nd = b->ndim;
  if (!promote_operands("block_masked_mm", &a, &b, s)) return NULL;
  cmx_dtype dt;
  if (!product_dtype("block_masked_mm", a, b, &dt)) return NULL;
  int64_t batch[CMX_MAX_NDIM];
  int nb;
  if (!cmx__broadcast_shape("block_masked_mm", a->dims, a->ndim - 2, b->dims,
                            b->ndim - 2, batch, &nb))
    return NULL;
  int64_t M = a->dims[a->ndim - 2], K = a->dims[a->ndim - 1];
  int64_t N = b->dims[b->ndim - 1], bs = block_size;
  int64_t tm = (M + bs - 1) / bs, tn = (N + bs - 1) / bs,
          tk = (K + bs - 1) / bs;
  cmx_array x = cmx__as_dtype(a, dt, s), y = cmx__as_dtype(b, dt, s);
  if (mask_lhs || mask_rhs) {
    /* A missing mask is all true (MLX's array({true})). */
    cmx_array ml =
        mask_lhs ? mask_lhs : atleast_1d(cmx__scalar(1, CMX_BOOL), s);
    cmx_array mr =
        mask_rhs ? mask_rhs : atleast_1d(cmx__scalar(1, CMX_BOOL), s);
    ml = atleast_1d(ml, s), mr = atleast_1d(mr, s);
    if (!ml || !mr) return NULL;
    cmx_dtype mdt =
        ml->dtype == CMX_BOOL && mr->dtype == CMX_BOOL ? CMX_BOOL : dt;
    int m2 = -2, m1 = -1;
    if (a_nd == 1) ml = cmx__expand_dims(ml, &m2, 1, s);
    if (b_nd == 1) mr = cmx__expand_dims(mr, &m1, 1, s);
    if (!ml || !mr) return NULL;
    x = apply_mask(x,
                   expand_mask("mask_lhs", ml, batch, nb, tm, tk, M, K,
                               block_size, mdt, s),
                   s);
    y = apply_mask(y,
                   expand_mask("mask_rhs", mr, batch, nb, tk, tn, K, N,
                               block_size, mdt, s),
                   s);
  }
  cmx_array out = cmx__matmul(x, y, s);
  if (mask_out && out) {
    cmx_array mo = atleast_1d(mask_out, s);
    int ex[2], ne = 0;
    if (a_nd == 1) ex[ne++] = -2;
    if (b_nd == 1) ex[ne++] = -1;
    if (ne) mo = cmx__expand_dims(mo, ex, ne, s);
    if (!mo) return NULL;
    cmx_dtype odt = mo->dtype == CMX_BOOL ? CMX_BOOL : dt;
    /* The product of x and y already has the broadcast batch shape. */
    out = apply_mask(out,
                     expand_mask("mask_out", mo, batch, nb, tm, tn, M, N,
                                 block_size, odt, s),
                     s);
  }
  return unpromote(out, a_nd, b_nd, s);
}

/* ---------------- public wrappers ---------------- */
cmx_status cmx_gather_mm(cmx_array* out, cmx_array a, cmx_array b,
                         cmx_array lhs_indices, cmx_array rhs_indices,
                         bool sorted_indices, cmx_stream s) {
  CMX__PUBLIC(
      out, "gather_mm",
      cmx__gather_mm(a, b, lhs_indices, rhs_indices, sorted_indices, s));
}
cmx_status cmx_segmented_mm(cmx_array* out, cmx_array a, cmx_array b,
                            cmx_array segments, cmx_stream s) {
  CMX__PUBLIC(out, "segmented_mm", cmx__segmented_mm(a, b, segments, s));
}
cmx_status cmx_block_masked_mm(cmx_array* out, cmx_array a, cmx_array b,
                               int block_size, cmx_array mask_out,
                               cmx_array mask_lhs, cmx_array mask_rhs,
                               cmx_stream s) {
  CMX__PUBLIC(
      out, "block_masked_mm",
      cmx__block_masked_mm(a, b, block_size, mask_out, mask_lhs, mask_rhs, s));
}
