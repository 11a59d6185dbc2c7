/* Random selection: categorical (Gumbel-max over logits) and permutation
 * (argsort of random bits). Built on the samplers of ops/random.c, argmax,
 * argsort and take, as MLX's random.cpp builds them. */
#include "ops/random_internal.h"

/* argmax(gumbel(g) + logits) along the axis of logits, where g has shape
 * `shape` with the axis' length inserted at the position that lines it up
 * with logits' axis (logits broadcast against the rest). */
static cmx_array categorical_impl(cmx_array logits, int axis,
                                  const int64_t* shape, int ndim, cmx_array key,
                                  cmx_stream s) {
  if (ndim + 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[categorical] too many dimensions.");
  int at = axis + ndim - logits->ndim + 1;
  int64_t gs[CMX_MAX_NDIM];
  for (int i = 0, j = 0; i <= ndim; i++)
    gs[i] = i == at ? logits->dims[axis] : shape[j++];
  cmx_array g = cmx__random_gumbel(gs, ndim + 1, CMX_FLOAT32,
                                   cmx__random_use_key("categorical", key), s);
  return cmx__argmax(cmx__add(g, logits, s), &at, false, s);
}

/* MLX's message for a bad axis. */
static bool valid_axis(int* axis, int ndim) {
  int ax = *axis < 0 ? *axis + ndim : *axis;
  if (ax < 0 || ax >= ndim) {
    cmx__error(CMX_ERR_INDEX,
               "[categorical] Invalid axis %d for logits with %d dimensions.",
               *axis, ndim);
    return false;
  }
  *axis = ax;
  return true;
}

cmx_array cmx__random_categorical(cmx_array logits, int axis,
                                  const int64_t* shape, int ndim, cmx_array key,
                                  cmx_stream s) {
  if (!CMX__ARGS("categorical", logits)) return NULL;
  if (!valid_axis(&axis, logits->ndim)) return NULL;
  int64_t reduced[CMX_MAX_NDIM];
  int nr = 0;
  for (int d = 0; d < logits->ndim; d++)
    if (d != axis) reduced[nr++] = logits->dims[d];
  if (!shape) {
    shape = reduced;
    ndim = nr;
  } else {
    if (!cmx__check_shape_arg("categorical", shape, ndim, false)) return NULL;
    int64_t bs[CMX_MAX_NDIM];
    int nb;
    bool ok = cmx__broadcast_shape("categorical", shape, ndim, reduced, nr, bs,
                                   &nb) &&
              nb == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = bs[i] == shape[i];
    if (!ok) {
      char sa[512], sb[512];
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[categorical] Requested shape %s is not broadcast "
                       "compatible with reduced logits shape %s.",
                       cmx__shape_str(shape, ndim, sa, sizeof sa),
                       cmx__shape_str(reduced, nr, sb, sizeof sb));
    }
  }
  return categorical_impl(logits, axis, shape, ndim, key, s);
}

cmx_array cmx__random_categorical_n(cmx_array logits, int axis,
                                    int64_t num_samples, cmx_array key,
                                    cmx_stream s) {
  if (!CMX__ARGS("categorical", logits)) return NULL;
  if (!valid_axis(&axis, logits->ndim)) return NULL;
  if (num_samples < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[categorical] num_samples must be non-negative, got "
                     "%lld.",
                     (long long)num_samples);
  /* logits (..., 1) against samples (reduced..., num_samples). */
  cmx_array l = cmx__expand_dims(logits, (int[]){-1}, 1, s);
  if (!l) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int n = 0;
  for (int d = 0; d < l->ndim; d++)
    if (d != axis) shape[n++] = l->dims[d];
  shape[n - 1] = num_samples;
  return categorical_impl(l, axis, shape, n, key, s);
}

cmx_status cmx_random_categorical(cmx_array* out, cmx_array logits, int axis,
                                  const int64_t* shape, int ndim, cmx_array key,
                                  cmx_stream s) {
  CMX__PUBLIC(out, "categorical",
              cmx__random_categorical(logits, axis, shape, ndim, key, s));
}

cmx_status cmx_random_categorical_n(cmx_array* out, cmx_array logits, int axis,
                                    int64_t num_samples, cmx_array key,
                                    cmx_stream s) {
  CMX__PUBLIC(out, "categorical",
              cmx__random_categorical_n(logits, axis, num_samples, key, s));
}

/* ---------------- permutation ---------------- */

/* argsort of n random words, as MLX: argsort is stable, so the (rare)
 * equal words keep index order and the result is reproducible. */
cmx_array cmx__random_permutation_n(int64_t n, cmx_array key, cmx_stream s) {
  if (n < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[permutation] Cannot permute %lld elements.",
                     (long long)n);
  cmx_array b =
      cmx__random_bits(&n, 1, 4, cmx__random_use_key("permutation", key), s);
  return cmx__argsort(b, (int[]){0}, s);
}

cmx_array cmx__random_permutation(cmx_array x, int axis, cmx_array key,
                                  cmx_stream s) {
  if (!CMX__ARGS("permutation", x)) return NULL;
  if (!cmx__norm_axis("permutation", &axis, x->ndim)) return NULL;
  cmx_array idx = cmx__random_permutation_n(x->dims[axis], key, s);
  return cmx__take(x, idx, &axis, s);
}

cmx_status cmx_random_permutation(cmx_array* out, cmx_array x, int axis,
                                  cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "permutation", cmx__random_permutation(x, axis, key, s));
}

cmx_status cmx_random_permutation_n(cmx_array* out, int64_t n, cmx_array key,
                                    cmx_stream s) {
  CMX__PUBLIC(out, "permutation", cmx__random_permutation_n(n, key, s));
}
