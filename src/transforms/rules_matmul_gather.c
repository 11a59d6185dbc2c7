/* Transform rules of the gathered matrix products: GatherMM and
 * SegmentedMM (contracts in primitives/matmul_gather.h).
 *
 * - GatherMM: bilinear. The vjp of a gathers the products dC[i] @ b^T and
 *   scatter-adds them at lhs[i] (b likewise at rhs[i]); indices get none.
 *   vmap folds the vmapped axis into the operands' batch and offsets the
 *   flat indices by v * batch.
 * - SegmentedMM: bilinear. The vjp weighs the full products dC[s] @ b^T
 *   (a^T @ dC[s]) by each segment's 0/1 mask over K and sums over the
 *   segments. vmap folds a lone vmapped axis into M (a), N (b) or the
 *   segment batch (segments); several vmapped inputs use the masked
 *   product (a * mask) @ b.
 */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/matmul_gather.h"
#include "transforms/rules.h"

/* ---------------- GatherMM ---------------- */
static cmx_array gather_mm(const cmx_primitive* p, cmx_array a, cmx_array b,
                           cmx_array li, cmx_array ri, cmx_stream s) {
  if (!a || !b || !li || !ri) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd = li->ndim;
  if (nd + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[gather_mm] Too many index dimensions.");
  memcpy(shape, li->dims, (size_t)nd * sizeof *shape);
  shape[nd] = a->dims[a->ndim - 2];
  shape[nd + 1] = b->dims[b->ndim - 1];
  cmx_array in[4] = {a, b, li, ri};
  return cmx__apply(cmx_primitive_vt(p), cmx_primitive_params(p),
                    cmx_primitive_params_size(p), s, in, 4, shape, nd + 2,
                    a->dtype);
}

/* Sum of the batch of matrices prods (I..., R, C) into a zero stack of
 * x's shape (X..., R, C), product i going to flat batch index idx[i]. */
static cmx_array scatter_batch(cmx_array prods, cmx_array idx, cmx_array x,
                               cmx_stream s) {
  if (!prods || !idx) return NULL;
  int64_t nb = 1, R = x->dims[x->ndim - 2], C = x->dims[x->ndim - 1];
  for (int d = 0; d < x->ndim - 2; d++) nb *= x->dims[d];
  if (idx->size == 0 || nb == 0) return cmx__zeros_like(x, s);
  int64_t zs[3] = {nb, R, C}, us[4] = {idx->size, 1, R, C}, fs[1] = {idx->size};
  int zero = 0;
  cmx_array flat = cmx__reshape(idx, fs, 1, s);
  cmx_array acc = cmx__scatter_add(cmx__zeros(zs, 3, x->dtype, s), &flat, 1,
                                   cmx__reshape(prods, us, 4, s), &zero, 1, s);
  return cmx__reshape(acc, x->dims, x->ndim, s);
}

/* arange over the index shape of li (uint32). */
static cmx_array index_iota(cmx_array li, cmx_stream s) {
  return cmx__reshape(cmx__arange(0, (double)li->size, 1, CMX_UINT32, s),
                      li->dims, li->ndim, s);
}

CMX__RULE_VJP(cmx__vjp_gather_mm) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array a = primals[0], b = primals[1], li = primals[2], ri = primals[3];
  cmx_array dc = cmx__rule_as_like(cotangents[0], a, s);
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] == 0) {
      cmx_array bt = cmx__swapaxes(b, -1, -2, s);
      out[k] = cmx__rule_keep(scatter_batch(
          gather_mm(p, dc, bt, index_iota(li, s), ri, s), li, a, s));
    } else if (argnums[k] == 1) {
      cmx_array at = cmx__swapaxes(a, -1, -2, s);
      out[k] = cmx__rule_keep(scatter_batch(
          gather_mm(p, at, dc, li, index_iota(li, s), s), ri, b, s));
    } else {
      continue; /* indices: no cotangent */
    }
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}

/* The JVP of a product bilinear in its first two inputs (the others are
 * indices): the sum over the differentiated inputs of the product with
 * that input replaced by its tangent. apply(p, a, b, primals, s) forms
 * the product of a and b with the indices of primals. */
typedef cmx_array (*bilinear_fn)(const cmx_primitive* p, cmx_array a,
                                 cmx_array b, const cmx_array* x, cmx_stream s);

static cmx_status bilinear_jvp(const cmx_primitive* p, const cmx_array* x,
                               const cmx_array* tangents, const int* argnums,
                               int nargs, bilinear_fn apply, cmx_array* out) {
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  for (int k = 0; k < nargs; k++) {
    cmx_array t = NULL;
    if (argnums[k] == 0)
      t = apply(p, cmx__rule_as_like(tangents[k], x[0], s), x[1], x, s);
    else if (argnums[k] == 1)
      t = apply(p, x[0], cmx__rule_as_like(tangents[k], x[1], s), x, s);
    else
      continue;
    if (!t) return cmx_last_status();
    r = r ? cmx__add(r, t, s) : t;
  }
  out[0] = cmx__rule_keep(r);
  return !r || out[0] ? CMX_OK : cmx_last_status();
}

static cmx_array gather_mm_of(const cmx_primitive* p, cmx_array a, cmx_array b,
                              const cmx_array* x, cmx_stream s) {
  return gather_mm(p, a, b, x[2], x[3], s);
}

CMX__RULE_JVP(cmx__jvp_gather_mm) {
  (void)nin, (void)outputs, (void)nout;
  return bilinear_jvp(p, primals, tangents, argnums, nargs, gather_mm_of, out);
}

/* Index array ix (vmapped on axis ix_axis or not) of the batched call:
 * moved to the front, plus v * count when its operand is vmapped (op_axis
 * >= 0), so it indexes the operand's batch with the vmapped axis first. */
static cmx_array fold_index(cmx_array ix, int ix_axis, int op_axis,
                            int64_t count, int64_t V, cmx_stream s) {
  cmx_array r = ix_axis >= 0 ? cmx__moveaxis(ix, ix_axis, 0, s) : ix;
  if (!r || op_axis < 0) return r;
  int64_t shape[CMX_MAX_NDIM];
  int nd = ix_axis >= 0 ? ix->ndim : ix->ndim + 1;
  if (nd > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[vmap] too many dimensions");
  shape[0] = V;
  for (int d = 1; d < nd; d++) shape[d] = 1;
  cmx_array off = cmx__multiply(cmx__arange(0, (double)V, 1, CMX_UINT32, s),
                                cmx__scalar((double)count, CMX_UINT32), s);
  return cmx__add(r, cmx__reshape(off, shape, nd, s), s);
}

CMX__RULE_VMAP(cmx__vmap_gather_mm) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  int64_t V = cmx__batch_size(inputs, axes, 4);
  cmx_array ops[2];
  int64_t count[2];
  for (int i = 0; i < 2; i++) {
    cmx_array x = inputs[i];
    ops[i] = axes[i] >= 0 ? cmx__moveaxis(x, axes[i], 0, s) : x;
    if (!ops[i]) return cmx_last_status();
    count[i] = 1;
    for (int d = axes[i] >= 0 ? 1 : 0; d < ops[i]->ndim - 2; d++)
      count[i] *= ops[i]->dims[d];
    if (axes[i] >= 0 && (double)count[i] * (double)V > 4294967295.0)
      return cmx__error(CMX_ERR_VALUE,
                        "[vmap] gather_mm batch too large for uint32 "
                        "indices");
  }
  cmx_array li = fold_index(inputs[2], axes[2], axes[0], count[0], V, s);
  cmx_array ri = fold_index(inputs[3], axes[3], axes[1], count[1], V, s);
  if (!li || !ri) return cmx_last_status();
  /* Both to (V, I...): the one without the vmapped axis broadcasts. */
  cmx_array big = li->ndim >= ri->ndim ? li : ri;
  cmx_array pair[2] = {li, ri}, bc[2];
  for (int i = 0; i < 2; i++)
    bc[i] = cmx__broadcast_to(pair[i], big->dims, big->ndim, s);
  out[0] = cmx__rule_keep(gather_mm(p, ops[0], ops[1], bc[0], bc[1], s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}

/* ---------------- SegmentedMM ---------------- */
static cmx_array segmented_mm(const cmx_primitive* p, cmx_array a, cmx_array b,
                              cmx_array seg, cmx_stream s) {
  if (!a || !b || !seg) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd = seg->ndim - 1;
  if (nd + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[segmented_mm] Too many segment dimensions.");
  memcpy(shape, seg->dims, (size_t)nd * sizeof *shape);
  shape[nd] = a->dims[0];
  shape[nd + 1] = b->dims[1];
  cmx_array in[3] = {a, b, seg};
  return cmx__apply(cmx_primitive_vt(p), NULL, 0, s, in, 3, shape, nd + 2,
                    a->dtype);
}

/* The 0/1 masks (S..., K) of dtype dt of the segments (S..., 2). */
static cmx_array segment_mask(cmx_array seg, int64_t K, cmx_dtype dt,
                              cmx_stream s) {
  if (!seg) return NULL;
  int nd = seg->ndim;
  int64_t start[CMX_MAX_NDIM] = {0}, stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) stop[d] = seg->dims[d], step[d] = 1;
  stop[nd - 1] = 1;
  cmx_array lo = cmx__slice(seg, start, stop, step, s);
  start[nd - 1] = 1, stop[nd - 1] = 2;
  cmx_array hi = cmx__slice(seg, start, stop, step, s);
  cmx_array k = cmx__arange(0, (double)K, 1, CMX_UINT32, s);
  cmx_array in =
      cmx__logical_and(cmx__greater_equal(k, lo, s), cmx__less(k, hi, s), s);
  return cmx__astype(in, dt, s);
}

/* Sum over the leading (segment) axes of x down to its last two. */
static cmx_array sum_segments(cmx_array x, cmx_stream s) {
  if (!x) return NULL;
  int axes[CMX_MAX_NDIM], n = x->ndim - 2;
  for (int d = 0; d < n; d++) axes[d] = d;
  return n ? cmx__sum(x, axes, n, false, s) : x;
}

CMX__RULE_VJP(cmx__vjp_segmented_mm) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array a = primals[0], b = primals[1];
  cmx_array dc = cmx__rule_as_like(cotangents[0], a, s);
  int64_t K = a->dims[1];
  cmx_array mask = NULL;
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] > 1) continue; /* segments: no cotangent */
    if (!mask) mask = segment_mask(primals[2], K, a->dtype, s);
    int ax = argnums[k] == 0 ? -2 : -1;
    cmx_array w = cmx__expand_dims(mask, &ax, 1, s);
    cmx_array prod =
        argnums[k] == 0
            ? cmx__matmul(dc, cmx__swapaxes(b, 0, 1, s), s)  /* (S.., M, K) */
            : cmx__matmul(cmx__swapaxes(a, 0, 1, s), dc, s); /* (S.., K, N) */
    out[k] = cmx__rule_keep(sum_segments(cmx__multiply(prod, w, s), s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}

static cmx_array segmented_mm_of(const cmx_primitive* p, cmx_array a,
                                 cmx_array b, const cmx_array* x,
                                 cmx_stream s) {
  return segmented_mm(p, a, b, x[2], s);
}

CMX__RULE_JVP(cmx__jvp_segmented_mm) {
  (void)nin, (void)outputs, (void)nout;
  return bilinear_jvp(p, primals, tangents, argnums, nargs, segmented_mm_of,
                      out);
}

CMX__RULE_VMAP(cmx__vmap_segmented_mm) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array a = inputs[0], b = inputs[1], seg = inputs[2];
  int nbat = (axes[0] >= 0) + (axes[1] >= 0) + (axes[2] >= 0);
  int64_t V = cmx__batch_size(inputs, axes, 3);
  cmx_array r = NULL;
  if (nbat == 1 && axes[2] >= 0) { /* segments: more segment batch dims */
    r = segmented_mm(p, a, b, cmx__moveaxis(seg, axes[2], 0, s), s);
    out_axes[0] = 0;
  } else if (nbat == 1 && axes[0] >= 0) { /* a: (V, M, K) as (V*M, K) */
    cmx_array x = cmx__moveaxis(a, axes[0], 0, s);
    if (!x) return cmx_last_status();
    int64_t M = x->dims[1], K = x->dims[2], f[2] = {V * M, K};
    r = segmented_mm(p, cmx__reshape(x, f, 2, s), b, seg, s);
    if (!r) return cmx_last_status();
    int64_t shape[CMX_MAX_NDIM];
    int ns = seg->ndim - 1;
    memcpy(shape, seg->dims, (size_t)ns * sizeof *shape);
    shape[ns] = V, shape[ns + 1] = M, shape[ns + 2] = b->dims[1];
    r = cmx__reshape(r, shape, ns + 3, s);
    out_axes[0] = ns;
  } else if (nbat == 1) { /* b: (V, K, N) as (K, V*N) */
    cmx_array y = cmx__moveaxis(b, axes[1], 1, s);
    if (!y) return cmx_last_status();
    int64_t K = y->dims[0], N = y->dims[2], f[2] = {K, V * N};
    r = segmented_mm(p, a, cmx__reshape(y, f, 2, s), seg, s);
    if (!r) return cmx_last_status();
    int64_t shape[CMX_MAX_NDIM];
    int ns = seg->ndim - 1;
    memcpy(shape, seg->dims, (size_t)ns * sizeof *shape);
    shape[ns] = a->dims[0], shape[ns + 1] = V, shape[ns + 2] = N;
    r = cmx__reshape(r, shape, ns + 3, s);
    out_axes[0] = ns + 1;
  } else { /* several: (a * mask) @ b per vmapped element */
    cmx_array x = cmx__batch_front(a, axes[0], V, s);
    cmx_array y = cmx__batch_front(b, axes[1], V, s);
    cmx_array sg = cmx__batch_front(seg, axes[2], V, s);
    if (!x || !y || !sg) return cmx_last_status();
    int ns = sg->ndim - 2; /* segment batch dims after V */
    cmx_array mask = segment_mask(sg, x->dims[2], x->dtype, s);
    int m2 = -2;
    int64_t sx[CMX_MAX_NDIM], sy[CMX_MAX_NDIM];
    if (ns + 3 > CMX_MAX_NDIM)
      return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions");
    sx[0] = sy[0] = V;
    for (int d = 0; d < ns; d++) sx[1 + d] = sy[1 + d] = 1;
    sx[ns + 1] = x->dims[1], sx[ns + 2] = x->dims[2];
    sy[ns + 1] = y->dims[1], sy[ns + 2] = y->dims[2];
    cmx_array xm = cmx__multiply(cmx__reshape(x, sx, ns + 3, s),
                                 cmx__expand_dims(mask, &m2, 1, s), s);
    r = cmx__matmul(xm, cmx__reshape(y, sy, ns + 3, s), s);
    out_axes[0] = 0;
  }
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}
