/* Transform rules of the matrix products Matmul and AddMM.
 *
 * The primitives take 1-d operands and broadcast batch dims themselves
 * (primitives/matmul.h), so the rules first view every operand as a stack
 * of matrices: a 1-d left operand (K) as (1, K), a 1-d right operand (K) as
 * (K, 1), and the cotangent with the dropped unit dims put back. Then
 *   da = dy @ b^T and db = a^T @ dy,
 * summed over the batch dims the operand was broadcast along. Everything
 * is built with matmul, transposes, sums and reshapes, so the rules
 * compose (grad of grad, vmap of grad). */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/matmul.h"
#include "transforms/rules.h"

/* x as a matrix stack: a 1-d left operand becomes a row (1, K), a 1-d
 * right operand a column (K, 1); others are unchanged. */
static cmx_array as_matrix(cmx_array x, bool left, cmx_stream s) {
  if (!x || x->ndim != 1) return x;
  int64_t shape[2] = {left ? 1 : x->dims[0], left ? x->dims[0] : 1};
  return cmx__reshape(x, shape, 2, s);
}

/* The output-shaped g of a @ b (batch + [M] + [N]) with the dims dropped
 * for 1-d operands restored as 1: batch + (M, N). */
static cmx_array cot_matrix(cmx_array g, int a_ndim, int b_ndim, cmx_stream s) {
  if (!g) return NULL;
  int nb = g->ndim - (a_ndim >= 2) - (b_ndim >= 2);
  int64_t shape[CMX_MAX_NDIM + 2];
  if (nb + 2 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[vjp] too many dimensions for matmul");
  memcpy(shape, g->dims, (size_t)nb * sizeof *shape);
  shape[nb] = a_ndim >= 2 ? g->dims[nb] : 1;
  shape[nb + 1] = b_ndim >= 2 ? g->dims[g->ndim - 1] : 1;
  return cmx__reshape(g, shape, nb + 2, s);
}

/* x with its last two axes swapped. */
static cmx_array mT(cmx_array x, cmx_stream s) {
  return x ? cmx__swapaxes(x, -1, -2, s) : NULL;
}

/* The cotangents of a and b (where want_a / want_b) of a @ b given g, the
 * cotangent of the product (output-shaped). Results are scope-owned, of
 * a's and b's shapes. */
static bool product_vjp(cmx_array a, cmx_array b, cmx_array g, bool want_a,
                        bool want_b, cmx_array* da, cmx_array* db,
                        cmx_stream s) {
  cmx_array A = as_matrix(a, true, s), B = as_matrix(b, false, s);
  cmx_array G = cot_matrix(g, a->ndim, b->ndim, s);
  if (!A || !B || !G) return false;
  if (want_a) {
    cmx_array r;
    if (A->ndim == 2 && G->ndim > 2 && B->ndim == G->ndim &&
        !memcmp(B->dims, G->dims, (size_t)(G->ndim - 2) * sizeof(int64_t))) {
      /* A 2-d a against a batched b: sum_i G_i @ B_i^T is one product of
       * the batch folded into the contracted axis. */
      int nd = G->ndim;
      int64_t n = 1;
      for (int d = 0; d < nd - 2; d++) n *= G->dims[d];
      int64_t gs[2] = {G->dims[nd - 2], n * G->dims[nd - 1]};
      int64_t bs[2] = {B->dims[nd - 2], n * B->dims[nd - 1]};
      cmx_array Gm = cmx__reshape(cmx__moveaxis(G, nd - 2, 0, s), gs, 2, s);
      cmx_array Bm = cmx__reshape(cmx__moveaxis(B, nd - 2, 0, s), bs, 2, s);
      r = cmx__matmul(Gm, mT(Bm, s), s);
    } else {
      r = cmx__matmul(G, mT(B, s), s);
    }
    r = cmx__sum_to_shape(r, A->dims, A->ndim, s);
    if (!(*da = cmx__reshape(r, a->dims, a->ndim, s))) return false;
  }
  if (want_b) {
    cmx_array r;
    if (B->ndim == 2 && G->ndim > 2 && A->ndim == G->ndim &&
        !memcmp(A->dims, G->dims, (size_t)(G->ndim - 2) * sizeof(int64_t))) {
      /* A 2-d b against a batched a (a layer's weight): the batch folds
       * into the rows, one (K, batch*M) @ (batch*M, N) product. */
      int64_t K = A->dims[A->ndim - 1], N = G->dims[G->ndim - 1];
      int64_t as[2] = {-1, K}, gs[2] = {-1, N};
      r = cmx__matmul(mT(cmx__reshape(A, as, 2, s), s),
                      cmx__reshape(G, gs, 2, s), s);
    } else {
      r = cmx__matmul(mT(A, s), G, s);
    }
    r = cmx__sum_to_shape(r, B->dims, B->ndim, s);
    if (!(*db = cmx__reshape(r, b->dims, b->ndim, s))) return false;
  }
  return true;
}

CMX__RULE_VJP(cmx__vjp_matmul) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  bool want[2] = {false, false};
  for (int k = 0; k < nargs; k++) want[argnums[k]] = true;
  cmx_array d[2] = {NULL, NULL};
  if (!product_vjp(primals[0], primals[1], cotangents[0], want[0], want[1],
                   &d[0], &d[1], s))
    return cmx_last_status();
  for (int k = 0; k < nargs; k++) out[k] = cmx__rule_keep(d[argnums[k]]);
  return CMX_OK;
}

/* ta @ b + a @ tb for the tangents present (NULL: none). */
static cmx_array product_jvp(const cmx_array* primals,
                             const cmx_array* tangents, const int* argnums,
                             int nargs, cmx_stream s) {
  cmx_array r = NULL;
  for (int k = 0; k < nargs; k++) {
    if (argnums[k] > 1) continue;
    cmx_array term = argnums[k] == 0 ? cmx__matmul(tangents[k], primals[1], s)
                                     : cmx__matmul(primals[0], tangents[k], s);
    if (!term) return NULL;
    r = r ? cmx__add(r, term, s) : term;
  }
  return r;
}

CMX__RULE_JVP(cmx__jvp_matmul) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(product_jvp(primals, tangents, argnums, nargs, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* x * v in x's dtype (x itself when v == 1). */
static cmx_array scale(cmx_array x, float v, cmx_stream s) {
  if (!x || v == 1.0f) return x;
  return cmx__multiply(x, cmx__scalar((double)v, x->dtype), s);
}

/* AddMM: out = alpha * (a @ b) + beta * c with inputs (a, b, c), c of the
 * output's shape. beta == 0 ignores c, so c then gets no cotangent. */
CMX__RULE_VJP(cmx__vjp_addmm) {
  (void)nin, (void)nout, (void)outputs;
  const cmx__addmm_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  bool want[3] = {false, false, false};
  for (int k = 0; k < nargs; k++) want[argnums[k]] = true;
  cmx_array d[3] = {NULL, NULL, NULL};
  if ((want[0] || want[1]) &&
      !product_vjp(primals[0], primals[1], scale(cotangents[0], q->alpha, s),
                   want[0], want[1], &d[0], &d[1], s))
    return cmx_last_status();
  if (want[2] && q->beta != 0.0f && !(d[2] = scale(cotangents[0], q->beta, s)))
    return cmx_last_status();
  for (int k = 0; k < nargs; k++) out[k] = cmx__rule_keep(d[argnums[k]]);
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_addmm) {
  (void)nin, (void)outputs, (void)nout;
  const cmx__addmm_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  bool prod = false;
  for (int k = 0; k < nargs; k++) prod |= argnums[k] < 2;
  if (prod) {
    r = scale(product_jvp(primals, tangents, argnums, nargs, s), q->alpha, s);
    if (!r) return cmx_last_status();
  }
  for (int k = 0; k < nargs; k++) {
    if (argnums[k] != 2 || q->beta == 0.0f) continue;
    cmx_array t = scale(tangents[k], q->beta, s);
    r = r ? cmx__add(r, t, s) : t;
    if (!r) return cmx_last_status();
  }
  out[0] = cmx__rule_keep(r);
  return CMX_OK;
}

/* The shared vmap of Matmul and AddMM. The product is applied again with
 * the batch as a new leading batch dim of the output: each batched
 * operand gets its batch on axis 0 and unit axes after it up to the
 * output's rank (1-d operands made matrices first), unbatched operands
 * broadcast as they did, and the result (B, batch.., M or 1, N or 1) is
 * reshaped to (B, output dims). */
static cmx_status product_vmap(const cmx_primitive* p, const cmx_array* in,
                               int nin, const int* axes, cmx_array out0,
                               cmx_array* out, int* out_axes) {
  cmx_stream s = cmx__rule_stream(p);
  int64_t B = cmx__batch_size(in, axes, nin);
  int nd[2];
  for (int i = 0; i < 2; i++) nd[i] = in[i]->ndim - (axes[i] >= 0);
  int nb = out0->ndim - (nd[0] >= 2) - (nd[1] >= 2);
  int rank = nb + 3; /* B, the output's batch dims, the matrix dims */
  if (rank > CMX_MAX_NDIM)
    return cmx__error(CMX_ERR_VALUE, "[vmap] too many dimensions for %s",
                      cmx_primitive_name(p));
  int64_t full[CMX_MAX_NDIM];
  full[0] = B;
  memcpy(full + 1, out0->dims, (size_t)nb * sizeof *full);
  full[nb + 1] = nd[0] >= 2 ? out0->dims[nb] : 1;
  full[nb + 2] = nd[1] >= 2 ? out0->dims[out0->ndim - 1] : 1;
  cmx_array x[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 2; i++) {
    if (axes[i] < 0) {
      x[i] = as_matrix(in[i], i == 0, s);
      continue;
    }
    cmx_array f = cmx__moveaxis(in[i], axes[i], 0, s);
    if (!f) return cmx_last_status();
    int64_t shape[CMX_MAX_NDIM];
    int m = f->ndim - 1; /* the operand's own dims */
    int64_t mat[2];
    if (m == 1) {
      mat[0] = i == 0 ? 1 : f->dims[1];
      mat[1] = i == 0 ? f->dims[1] : 1;
    } else {
      mat[0] = f->dims[f->ndim - 2];
      mat[1] = f->dims[f->ndim - 1];
    }
    int own_batch = m >= 2 ? m - 2 : 0;
    shape[0] = B;
    int k = 1;
    for (int d = 0; d < nb - own_batch; d++) shape[k++] = 1;
    for (int d = 0; d < own_batch; d++) shape[k++] = f->dims[1 + d];
    shape[k++] = mat[0];
    shape[k++] = mat[1];
    x[i] = cmx__reshape(f, shape, k, s);
  }
  if (nin == 3) { /* AddMM's c: the output's shape, batched or not */
    cmx_array c = axes[2] >= 0 ? cmx__moveaxis(in[2], axes[2], 0, s) : in[2];
    int off = axes[2] >= 0 ? 0 : 1;
    c = cmx__reshape(c, full + off, rank - off, s);
    x[2] = cmx__broadcast_to(c, full, rank, s);
  }
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_array r =
      cmx__apply(vt, cmx_primitive_params(p), cmx_primitive_params_size(p), s,
                 x, nin, full, rank, out0->dtype);
  int64_t shape[CMX_MAX_NDIM];
  shape[0] = B;
  memcpy(shape + 1, out0->dims, (size_t)out0->ndim * sizeof *shape);
  out[0] = cmx__rule_keep(cmx__reshape(r, shape, out0->ndim + 1, s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_matmul) {
  (void)nout;
  return product_vmap(p, inputs, nin, axes, outputs[0], out, out_axes);
}
