/* Transform rules of the Convolution primitive (primitives/conv.h).
 *
 * Per spatial dim, with stride s, padding lo/hi, kernel dilation kd, input
 * dilation id, kernel size K, input length L and output length M:
 *   y[m] = sum_k xv[m*s + k*kd] * w[flip ? K-1-k : k],
 * where xv[lo + j*id] = x[j] and xv is zero elsewhere. Both cotangents are
 * convolutions again, so the rules compose to any order:
 *
 * - dx: the cotangent dy, dilated by s and padded, correlated with the
 *   kernel run backwards (flip toggled) and its in/out channels swapped
 *   per group, stepping by id:
 *     stride id, input dilation s, kernel dilation kd,
 *     pad_lo (K-1)*kd - lo, pad_hi (L-1)*id - (M-1)*s + lo,
 *   which yields exactly L positions (negative pads crop).
 * - dw: the input with its batch and channel roles exchanged, convolved
 *   with dy as the kernel (dy's batch as the contracted channel):
 *     stride kd, kernel dilation s, input dilation id, pad_lo lo, pad_hi
 *     cut so that exactly K positions come out; groups stay groups by
 *     stacking the groups' channels as (group, batch); flip reverses the
 *     spatial axes of the result.
 * - jvp: conv(tx, w) + conv(x, tw) (bilinear).
 * - vmap: a batched input folds into the batch dim; a batched weight into
 *   the output channels (per group); both batched fold into the groups.
 */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/conv.h"
#include "transforms/rules.h"

/* Applies Convolution with parameters q to x and w; the output shape
 * follows primitives/conv.h. */
static cmx_array conv_apply(cmx_array x, cmx_array w, const cmx__conv_params* q,
                            cmx_stream s) {
  if (!x || !w) return NULL;
  int nsp = q->nsp;
  int64_t shape[CMX__CONV_MAX_SPATIAL + 2];
  shape[0] = x->dims[0];
  for (int d = 0; d < nsp; d++) {
    int64_t lv = (x->dims[d + 1] - 1) * q->input_dilation[d] + 1 +
                 q->pad_lo[d] + q->pad_hi[d];
    int64_t span = lv - ((w->dims[d + 1] - 1) * q->kernel_dilation[d] + 1);
    if (span < 0)
      return CMX__FAIL(CMX_ERR_RUNTIME,
                       "[Convolution] a transform rule built an empty "
                       "convolution (axis %d)",
                       d + 1);
    shape[d + 1] = span / q->stride[d] + 1;
  }
  shape[nsp + 1] = w->dims[0];
  cmx_array in[2] = {x, w};
  return cmx__apply(&cmx__vt_Convolution, q, sizeof *q, s, in, 2, shape,
                    nsp + 2, x->dtype);
}

/* The weight of the input-cotangent convolution: (O, K.., C/g) regrouped
 * as (C, K.., O/g), each group's block transposed. */
static cmx_array swap_weight_channels(cmx_array w, int g, cmx_stream s) {
  int nd = w->ndim;
  if (g == 1) return cmx__swapaxes(w, 0, nd - 1, s);
  int64_t O = w->dims[0], Cg = w->dims[nd - 1];
  int64_t shape[CMX__CONV_MAX_SPATIAL + 3];
  shape[0] = g;
  shape[1] = O / g;
  memcpy(shape + 2, w->dims + 1, (size_t)(nd - 1) * sizeof *shape);
  cmx_array r = cmx__reshape(w, shape, nd + 1, s); /* (g, O/g, K.., C/g) */
  r = cmx__swapaxes(r, 1, nd, s);                  /* (g, C/g, K.., O/g) */
  shape[0] = g * Cg;
  memcpy(shape + 1, w->dims + 1, (size_t)(nd - 2) * sizeof *shape);
  shape[nd - 1] = O / g;
  return cmx__reshape(r, shape, nd, s);
}

/* The cotangent of x (see the top of the file). */
static cmx_array conv_vjp_input(cmx_array x, cmx_array w, cmx_array dy,
                                const cmx__conv_params* q, cmx_stream s) {
  cmx__conv_params b = *q;
  b.flip = !q->flip;
  for (int d = 0; d < q->nsp; d++) {
    int64_t L = x->dims[d + 1], M = dy->dims[d + 1], K = w->dims[d + 1];
    b.stride[d] = q->input_dilation[d];
    b.input_dilation[d] = q->stride[d];
    b.kernel_dilation[d] = q->kernel_dilation[d];
    b.pad_lo[d] = (K - 1) * q->kernel_dilation[d] - q->pad_lo[d];
    b.pad_hi[d] =
        (L - 1) * q->input_dilation[d] - (M - 1) * q->stride[d] + q->pad_lo[d];
  }
  return conv_apply(dy, swap_weight_channels(w, q->groups, s), &b, s);
}

/* The cotangent of w (see the top of the file). */
static cmx_array conv_vjp_weight(cmx_array x, cmx_array w, cmx_array dy,
                                 const cmx__conv_params* q, cmx_stream s) {
  int nsp = q->nsp, nd = nsp + 2, g = q->groups;
  int64_t N = x->dims[0], C = x->dims[nd - 1];
  /* x (N, L.., C) -> (C/g, L.., g*N): channel (group, batch). */
  int64_t shape[CMX__CONV_MAX_SPATIAL + 3];
  memcpy(shape, x->dims, (size_t)(nd - 1) * sizeof *shape);
  shape[nd - 1] = g;
  shape[nd] = C / g;
  cmx_array xr = cmx__reshape(x, shape, nd + 1, s); /* (N, L.., g, C/g) */
  int perm[CMX__CONV_MAX_SPATIAL + 3];
  perm[0] = nd;
  for (int d = 0; d < nsp; d++) perm[1 + d] = 1 + d;
  perm[nd - 1] = nd - 1;
  perm[nd] = 0;
  xr = cmx__transpose(xr, perm, nd + 1, s); /* (C/g, L.., g, N) */
  shape[0] = C / g;
  memcpy(shape + 1, x->dims + 1, (size_t)nsp * sizeof *shape);
  shape[nd - 1] = g * N;
  xr = cmx__reshape(xr, shape, nd, s);
  /* dy (N, M.., O) -> (O, M.., N). */
  cmx_array dk = cmx__swapaxes(dy, 0, nd - 1, s);
  cmx__conv_params b = *q;
  b.flip = 0;
  for (int d = 0; d < nsp; d++) {
    int64_t L = x->dims[d + 1], M = dy->dims[d + 1], K = w->dims[d + 1];
    int64_t lv =
        (L - 1) * q->input_dilation[d] + 1 + q->pad_lo[d] + q->pad_hi[d];
    int64_t used = (M - 1) * q->stride[d] + (K - 1) * q->kernel_dilation[d] + 1;
    b.stride[d] = q->kernel_dilation[d];
    b.kernel_dilation[d] = q->stride[d];
    b.pad_hi[d] = q->pad_hi[d] - (lv - used);
  }
  cmx_array r = conv_apply(xr, dk, &b, s); /* (C/g, K.., O) */
  r = cmx__swapaxes(r, 0, nd - 1, s);      /* (O, K.., C/g) */
  if (q->flip) {
    int ax[CMX__CONV_MAX_SPATIAL];
    for (int d = 0; d < nsp; d++) ax[d] = 1 + d;
    r = cmx__flip(r, ax, nsp, s);
  }
  return r;
}

CMX__RULE_VJP(cmx__vjp_conv) {
  (void)nin, (void)nout, (void)outputs;
  const cmx__conv_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], w = primals[1], dy = cotangents[0];
  for (int k = 0; k < nargs; k++) {
    cmx_array r;
    cmx_array primal = primals[argnums[k]];
    if (x->size == 0 || w->size == 0 || dy->size == 0)
      r = cmx__zeros(primal->dims, primal->ndim, primal->dtype, s);
    else if (argnums[k] == 0)
      r = conv_vjp_input(x, w, dy, q, s);
    else
      r = conv_vjp_weight(x, w, dy, q, s);
    if (!(out[k] = cmx__rule_keep(r))) return cmx_last_status();
  }
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_conv) {
  (void)nin, (void)outputs, (void)nout;
  const cmx__conv_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  for (int k = 0; k < nargs; k++) {
    cmx_array term = argnums[k] == 0
                         ? conv_apply(tangents[k], primals[1], q, s)
                         : conv_apply(primals[0], tangents[k], q, s);
    if (!term) return cmx_last_status();
    r = r ? cmx__add(r, term, s) : term;
  }
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

/* Reshapes a's axis `axis` of size prod(parts) into n axes. */
static cmx_array split_axis(cmx_array a, int axis, const int64_t* parts, int n,
                            cmx_stream s) {
  if (!a) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, a->dims, (size_t)axis * sizeof *shape);
  memcpy(shape + axis, parts, (size_t)n * sizeof *shape);
  memcpy(shape + axis + n, a->dims + axis + 1,
         (size_t)(a->ndim - axis - 1) * sizeof *shape);
  return cmx__reshape(a, shape, a->ndim + n - 1, s);
}

/* Merges axes [axis, axis + n) of a into one. */
static cmx_array merge_axes(cmx_array a, int axis, int n, cmx_stream s) {
  if (!a) return NULL;
  int64_t shape[CMX_MAX_NDIM], m = 1;
  for (int d = 0; d < n; d++) m *= a->dims[axis + d];
  memcpy(shape, a->dims, (size_t)axis * sizeof *shape);
  shape[axis] = m;
  memcpy(shape + axis + 1, a->dims + axis + n,
         (size_t)(a->ndim - axis - n) * sizeof *shape);
  return cmx__reshape(a, shape, a->ndim - n + 1, s);
}

CMX__RULE_VMAP(cmx__vmap_conv) {
  (void)nin, (void)nout;
  const cmx__conv_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  int nsp = q->nsp, nd = nsp + 2;
  int64_t B = cmx__batch_size(inputs, axes, 2);
  cmx_array x = inputs[0], w = inputs[1], r;
  if (B == 0) { /* nothing to fold: an empty batch of outputs */
    int64_t shape[CMX_MAX_NDIM];
    shape[0] = 0;
    memcpy(shape + 1, outputs[0]->dims, (size_t)nd * sizeof *shape);
    out[0] = cmx__rule_keep(cmx__zeros(shape, nd + 1, outputs[0]->dtype, s));
    out_axes[0] = 0;
    return out[0] ? CMX_OK : cmx_last_status();
  }
  if (axes[1] < 0) {
    /* Input only: (B, N, L.., C) -> (B*N, L.., C); the output splits
     * back into (B, N, M.., O). */
    x = cmx__moveaxis(x, axes[0], 0, s);
    if (!x) return cmx_last_status();
    int64_t parts[2] = {B, x->dims[1]};
    r = conv_apply(merge_axes(x, 0, 2, s), w, q, s);
    out[0] = cmx__rule_keep(split_axis(r, 0, parts, 2, s));
    out_axes[0] = 0;
    return out[0] ? CMX_OK : cmx_last_status();
  }
  int g = q->groups;
  w = cmx__moveaxis(w, axes[1], 0, s); /* (B, O, K.., C/g) */
  if (!w) return cmx_last_status();
  int64_t O = w->dims[1], Og = O / g;
  cmx__conv_params b = *q;
  if (axes[0] < 0) {
    /* Weight only: output channels ordered (group, B, O/g) so that each
     * group's outputs stay contiguous. */
    int64_t wparts[2] = {g, Og}, gparts[3] = {g, B, Og};
    w = split_axis(w, 1, wparts, 2, s); /* (B, g, O/g, K.., C/g) */
    w = merge_axes(cmx__swapaxes(w, 0, 1, s), 0, 3, s);
    r = conv_apply(x, w, &b, s);             /* (N, M.., g*B*O/g) */
    r = split_axis(r, nd - 1, gparts, 3, s); /* (N, M.., g, B, O/g) */
    r = merge_axes(cmx__swapaxes(r, nd - 1, nd, s), nd, 2, s);
  } else {
    /* Both: the batch becomes groups; channels ordered (B, C), (B, O). */
    x = cmx__moveaxis(x, axes[0], nd - 1, s); /* (N, L.., B, C) */
    x = merge_axes(x, nd - 1, 2, s);
    w = merge_axes(w, 0, 2, s);
    b.groups = (int32_t)(g * B);
    r = conv_apply(x, w, &b, s); /* (N, M.., B*O) */
    int64_t parts[2] = {B, O};
    r = split_axis(r, nd - 1, parts, 2, s);
  }
  out[0] = cmx__rule_keep(r); /* (N, M.., B, O) */
  out_axes[0] = nd - 1;
  return out[0] ? CMX_OK : cmx_last_status();
}
