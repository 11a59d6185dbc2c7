/* mx.fast: rms_norm, layer_norm, rope and scaled_dot_product_attention,
 * with MLX's checks and dtypes. Each builds one fused primitive
 * (primitives/fast.h); cmx__fast_composite is the same computation in
 * ordinary ops, which the transform rules differentiate and batch. */
#include "cmx/fast.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/fast.h"

#define F32 CMX_FLOAT32

/* a[..., lo:hi] (last axis). */
static cmx_array last_slice(cmx_array a, int64_t lo, int64_t hi, cmx_stream s) {
  if (!a) return NULL;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) {
    start[d] = 0;
    stop[d] = a->dims[d];
    step[d] = 1;
  }
  start[a->ndim - 1] = lo;
  stop[a->ndim - 1] = hi;
  return cmx__slice(a, start, stop, step, s);
}

/* ---------------- composites (float32 inside) ---------------- */

/* The type composites compute in: float32, float64 for float64 data. */
static cmx_dtype acc_type(cmx_dtype dt) {
  return dt == CMX_FLOAT64 ? CMX_FLOAT64 : CMX_FLOAT32;
}

static cmx_array norm_composite(bool layer, const cmx__fast_params* q,
                                const cmx_array* in, cmx_stream s) {
  cmx_dtype dt = in[0]->dtype, AT = acc_type(dt);
  int last = -1;
  cmx_array x = cmx__astype(in[0], AT, s);
  if (layer) x = cmx__subtract(x, cmx__mean(x, &last, 1, true, s), s);
  cmx_array ms = cmx__mean(cmx__square(x, s), &last, 1, true, s);
  cmx_array y = cmx__multiply(
      x, cmx__rsqrt(cmx__add(ms, cmx__scalar(q->eps, AT), s), s), s);
  int i = 1;
  if (q->has_weight) y = cmx__multiply(y, cmx__astype(in[i++], AT, s), s);
  if (q->has_bias) y = cmx__add(y, cmx__astype(in[i++], AT, s), s);
  return cmx__astype(y, dt, s);
}

static cmx_array rope_composite(const cmx__fast_params* q, const cmx_array* in,
                                cmx_stream s) {
  cmx_array x = in[0], off = in[1];
  if (!x || !off) return NULL;
  cmx_dtype AT = acc_type(x->dtype);
  int nd = x->ndim;
  int64_t L = x->dims[nd - 2], D = x->dims[nd - 1], h = q->dims / 2;
  /* positions: (L, 1), or (B, 1.., L, 1) for a vector of offsets */
  cmx_array pos = cmx__arange(0, (double)L, 1, AT, s);
  int64_t lshape[2] = {L, 1};
  cmx_array o = cmx__astype(off, AT, s);
  if (off->ndim == 1) {
    int64_t oshape[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) oshape[d] = 1;
    oshape[0] = off->dims[0];
    o = cmx__reshape(o, oshape, nd, s);
    pos = cmx__add(cmx__reshape(pos, lshape, 2, s), o, s);
  } else {
    pos = cmx__reshape(cmx__add(pos, o, s), lshape, 2, s);
  }
  cmx_array inv;
  if (q->has_freqs) {
    inv = cmx__reciprocal(cmx__astype(in[2], AT, s), s);
  } else {
    cmx_array i2 = cmx__arange(0, (double)h, 1, AT, s);
    inv = cmx__exp(
        cmx__multiply(
            i2, cmx__scalar(-2.0 * log((double)q->base) / (double)q->dims, AT),
            s),
        s);
  }
  cmx_array theta =
      cmx__multiply(cmx__multiply(pos, cmx__scalar(q->scale, AT), s), inv, s);
  cmx_array c = cmx__cos(theta, s), sn = cmx__sin(theta, s);
  cmx_array xf = cmx__astype(x, AT, s), x1, x2;
  int64_t shp[CMX_MAX_NDIM];
  if (q->traditional) {
    memcpy(shp, x->dims, (size_t)nd * sizeof *shp);
    shp[nd - 1] = h;
    shp[nd] = 2;
    cmx_array pairs =
        cmx__reshape(last_slice(xf, 0, q->dims, s), shp, nd + 1, s);
    x1 = cmx__squeeze(last_slice(pairs, 0, 1, s), (int[]){-1}, 1, s);
    x2 = cmx__squeeze(last_slice(pairs, 1, 2, s), (int[]){-1}, 1, s);
  } else {
    x1 = last_slice(xf, 0, h, s);
    x2 = last_slice(xf, h, q->dims, s);
  }
  cmx_array o1 =
      cmx__subtract(cmx__multiply(x1, c, s), cmx__multiply(x2, sn, s), s);
  cmx_array o2 = cmx__add(cmx__multiply(x1, sn, s), cmx__multiply(x2, c, s), s);
  cmx_array rot;
  if (q->traditional) {
    cmx_array st = cmx__stack((cmx_array[]){o1, o2}, 2, -1, s);
    memcpy(shp, x->dims, (size_t)nd * sizeof *shp);
    shp[nd - 1] = q->dims;
    rot = st ? cmx__reshape(st, shp, nd, s) : NULL;
  } else {
    rot = cmx__concatenate((cmx_array[]){o1, o2}, 2, -1, s);
  }
  if (q->dims < D)
    rot = cmx__concatenate((cmx_array[]){rot, last_slice(xf, q->dims, D, s)}, 2,
                           -1, s);
  return cmx__astype(rot, x->dtype, s);
}

static cmx_array sdpa_composite(const cmx__fast_params* q, const cmx_array* in,
                                int nin, cmx_stream s) {
  cmx_array qa = in[0], k = in[1], v = in[2];
  if (!CMX__ARGS("scaled_dot_product_attention", qa, k, v)) return NULL;
  cmx_dtype AT = acc_type(qa->dtype);
  int64_t B = qa->dims[0], H = qa->dims[1], L = qa->dims[2], D = qa->dims[3];
  int64_t Hk = k->dims[1], S = k->dims[2], Dv = v->dims[3], R = H / Hk;
  int64_t qs[5] = {B, Hk, R, L, D}, ks[5] = {B, Hk, 1, S, D},
          vs[5] = {B, Hk, 1, S, Dv}, ss[5] = {B, Hk, R, L, S};
  cmx_array qf =
      cmx__multiply(cmx__astype(qa, AT, s), cmx__scalar(q->scale, AT), s);
  qf = cmx__reshape(qf, qs, 5, s);
  cmx_array kf = cmx__reshape(cmx__astype(k, AT, s), ks, 5, s);
  cmx_array vf = cmx__reshape(cmx__astype(v, AT, s), vs, 5, s);
  cmx_array sc = cmx__matmul(qf, cmx__swapaxes(kf, -1, -2, s), s);
  cmx_array lowest = cmx__scalar(-FLT_MAX, CMX_FLOAT32);
  if (q->mask == CMX__SDPA_MASK_CAUSAL) {
    int64_t rs[2] = {L, 1}, cs[2] = {1, S};
    cmx_array rows = cmx__reshape(
        cmx__arange((double)(S - L), (double)S, 1, CMX_INT32, s), rs, 2, s);
    cmx_array cols =
        cmx__reshape(cmx__arange(0, (double)S, 1, CMX_INT32, s), cs, 2, s);
    sc = cmx__where(cmx__greater_equal(rows, cols, s), sc, lowest, s);
  } else if (q->mask == CMX__SDPA_MASK_BOOL || q->mask == CMX__SDPA_MASK_ADD) {
    cmx_array m = cmx__reshape(cmx__contiguous(in[3], false, s), ss, 5, s);
    sc = q->mask == CMX__SDPA_MASK_BOOL
             ? cmx__where(m, sc, lowest, s)
             : cmx__add(sc, cmx__astype(m, AT, s), s);
  }
  if (q->has_sinks) {
    int64_t sk[5] = {1, Hk, R, 1, 1}, sb[5] = {B, Hk, R, L, 1};
    cmx_array sink = cmx__broadcast_to(
        cmx__reshape(cmx__astype(in[nin - 1], AT, s), sk, 5, s), sb, 5, s);
    sc = cmx__concatenate((cmx_array[]){sink, sc}, 2, -1, s);
  }
  int last = -1;
  cmx_array p = cmx__softmax(sc, &last, 1, true, s);
  if (q->has_sinks) p = last_slice(p, 1, S + 1, s);
  int64_t os[4] = {B, H, L, Dv};
  cmx_array o = cmx__reshape(cmx__matmul(p, vf, s), os, 4, s);
  return cmx__astype(o, qa->dtype, s);
}

cmx_array cmx__fast_composite(const cmx_primitive_vtable* vt,
                              const cmx__fast_params* q, const cmx_array* in,
                              int nin, cmx_stream s) {
  for (int i = 0; i < nin; i++)
    if (!in[i]) return NULL;
  if (vt == &cmx__vt_RMSNorm) return norm_composite(false, q, in, s);
  if (vt == &cmx__vt_LayerNorm) return norm_composite(true, q, in, s);
  if (vt == &cmx__vt_RoPE) return rope_composite(q, in, s);
  if (vt == &cmx__vt_CrossEntropy) return cmx__fast_ce_composite(in, s);
  return sdpa_composite(q, in, nin, s);
}

/* ---------------- ops ---------------- */

/* Checks a norm's weight or bias: 1-d with the last dimension's size. */
static bool check_vec(const char* op, const char* what, cmx_array w,
                      int64_t d) {
  if (w->ndim != 1) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] %s must have 1 dimension but has %d dimensions.", op, what,
               w->ndim);
    return false;
  }
  if (w->dims[0] != d) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] %s must have the same size as the last dimension of x "
               "but has %lld elements.",
               op, what, (long long)w->dims[0]);
    return false;
  }
  return true;
}

static cmx_array norm_op(bool layer, cmx_array x, cmx_array w, cmx_array b,
                         float eps, cmx_stream s) {
  const char* op = layer ? "layer_norm" : "rms_norm";
  if (!CMX__ARGS(op, x)) return NULL;
  if (x->ndim == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Input must have at least 1 dimension but got input "
                     "with 0 dimensions.",
                     op);
  int64_t d = x->dims[x->ndim - 1];
  cmx_array ops_[3] = {x, w, b};
  int n = 1;
  if (w) {
    if (!check_vec(op, layer ? "weight" : "(*weight)", w, d)) return NULL;
    ops_[n++] = w;
  }
  if (b) {
    if (!check_vec(op, "bias", b, d)) return NULL;
    ops_[n++] = b;
  }
  cmx_dtype dt = cmx__result_type(ops_, n);
  if (!cmx_dtype_is_floating(dt))
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Received unsupported type %s.", op,
                     cmx_dtype_name(dt));
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.eps = eps;
  q.has_weight = w != NULL;
  q.has_bias = b != NULL;
  cmx_array in[3];
  for (int i = 0; i < n; i++) in[i] = cmx__as_dtype(ops_[i], dt, s);
  const cmx_primitive_vtable* vt =
      layer ? &cmx__vt_LayerNorm : &cmx__vt_RMSNorm;
  if (dt == CMX_FLOAT64) return cmx__fast_composite(vt, &q, in, n, s);
  return cmx__apply(vt, &q, sizeof q, s, in, n, x->dims, x->ndim, dt);
}

cmx_status cmx_fast_rms_norm(cmx_array* out, cmx_array x, cmx_array weight,
                             float eps, cmx_stream s) {
  CMX__PUBLIC(out, "rms_norm", norm_op(false, x, weight, NULL, eps, s));
}

cmx_status cmx_fast_layer_norm(cmx_array* out, cmx_array x, cmx_array weight,
                               cmx_array bias, float eps, cmx_stream s) {
  CMX__PUBLIC(out, "layer_norm", norm_op(true, x, weight, bias, eps, s));
}

static cmx_array rope_op(cmx_array x, int dims, bool traditional,
                         const float* base, float scale, int64_t offset,
                         cmx_array offset_arr, cmx_array freqs, cmx_stream s) {
  static const char* op = "rope";
  if (!CMX__ARGS(op, x)) return NULL;
  char buf[96];
  if (x->ndim < 3)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] Input must have at least 3 dimensions but got "
                     "input with %d dimensions.",
                     x->ndim);
  if (!cmx_dtype_is_floating(x->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] Input must be a floating type but got %s.",
                     cmx_dtype_name(x->dtype));
  if (dims % 2)
    return CMX__FAIL(CMX_ERR_VALUE, "[rope] dims must be even but got %d.",
                     dims);
  int64_t D = x->dims[x->ndim - 1];
  if (dims > D || dims <= 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] dims must not exceed the input's last dimension "
                     "(%lld) but got %d.",
                     (long long)D, dims);
  if (!base && !freqs)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] Neither base nor freqs has a value.");
  if (base && freqs)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] Only one of base or freqs can have a value.");
  if (freqs && (freqs->ndim != 1 || freqs->dims[0] != dims / 2))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[rope] freqs must be one dimensional with size %d but "
                     "got shape %s.",
                     dims / 2,
                     cmx__shape_str(freqs->dims, freqs->ndim, buf, sizeof buf));
  cmx_array off;
  if (offset_arr) {
    if (!cmx_dtype_is_integer(offset_arr->dtype))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[rope] offset must be an integer but got type %s.",
                       cmx_dtype_name(offset_arr->dtype));
    if (offset_arr->ndim > 1)
      return CMX__FAIL(
          CMX_ERR_VALUE,
          "[rope] offset must have at most one dimension but has "
          "shape %s.",
          cmx__shape_str(offset_arr->dims, offset_arr->ndim, buf, sizeof buf));
    if (offset_arr->ndim == 1 && offset_arr->dims[0] != 1 &&
        offset_arr->dims[0] != x->dims[0])
      return CMX__FAIL(
          CMX_ERR_VALUE,
          "[rope] offset must be a scalar or vector with %lld "
          "elements but has shape %s.",
          (long long)x->dims[0],
          cmx__shape_str(offset_arr->dims, offset_arr->ndim, buf, sizeof buf));
    off = cmx__as_dtype(offset_arr, CMX_INT32, s);
    if (offset_arr->ndim == 1 && offset_arr->dims[0] != x->dims[0])
      off = cmx__reshape(off, (int64_t[1]){1}, 0, s); /* one: a scalar */
  } else {
    off = cmx__scalar((double)offset, CMX_INT32);
  }
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.dims = dims;
  q.traditional = traditional;
  q.base = base ? *base : 0.f;
  q.scale = scale;
  q.has_freqs = freqs != NULL;
  cmx_array in[3] = {
      x, off,
      freqs ? cmx__contiguous(cmx__as_dtype(freqs, F32, s), false, s) : NULL};
  if (x->dtype == CMX_FLOAT64)
    return cmx__fast_composite(&cmx__vt_RoPE, &q, in, freqs ? 3 : 2, s);
  return cmx__apply(&cmx__vt_RoPE, &q, sizeof q, s, in, freqs ? 3 : 2, x->dims,
                    x->ndim, x->dtype);
}

cmx_status cmx_fast_rope(cmx_array* out, cmx_array x, int dims,
                         bool traditional, const float* base, float scale,
                         int64_t offset, cmx_array offset_array,
                         cmx_array freqs, cmx_stream s) {
  CMX__PUBLIC(out, "rope",
              rope_op(x, dims, traditional, base, scale, offset, offset_array,
                      freqs, s));
}

#define SDPA "scaled_dot_product_attention"

static cmx_array sdpa_op(cmx_array q, cmx_array k, cmx_array v, float scale,
                         const char* mode, cmx_array mask, cmx_array sinks,
                         cmx_stream s) {
  if (!CMX__ARGS(SDPA, q, k, v)) return NULL;
  char buf[96];
  cmx_array qkv[3] = {q, k, v};
  for (int i = 0; i < 3; i++)
    if (qkv[i]->ndim != 4)
      return CMX__FAIL(
          CMX_ERR_VALUE, "[" SDPA "] input with shape %s expected to be rank 4",
          cmx__shape_str(qkv[i]->dims, qkv[i]->ndim, buf, sizeof buf));
  int64_t B = q->dims[0], H = q->dims[1], L = q->dims[2], D = q->dims[3];
  int64_t Hk = k->dims[1], S = k->dims[2];
  if (Hk == 0 || H % Hk)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[" SDPA
                     "] n_heads must be a multiple of n_kv_heads, "
                     "found n_heads %lld for n_kv_heads %lld.",
                     (long long)H, (long long)Hk);
  if (k->dims[0] != B || v->dims[0] != B || v->dims[1] != Hk ||
      k->dims[3] != D || v->dims[2] != S)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[" SDPA
                     "] incompatible shapes: q %s, k (%lld,%lld,%lld,"
                     "%lld), v (%lld,%lld,%lld,%lld).",
                     cmx__shape_str(q->dims, 4, buf, sizeof buf),
                     (long long)k->dims[0], (long long)k->dims[1],
                     (long long)k->dims[2], (long long)k->dims[3],
                     (long long)v->dims[0], (long long)v->dims[1],
                     (long long)v->dims[2], (long long)v->dims[3]);
  cmx_dtype dt = cmx__result_type(qkv, 3);
  if (!cmx_dtype_is_floating(dt)) dt = F32;
  cmx__fast_params p;
  memset(&p, 0, sizeof p);
  p.scale = scale;
  cmx_array in[5];
  int n = 0;
  for (int i = 0; i < 3; i++) in[n++] = cmx__as_dtype(qkv[i], dt, s);
  if (mode && *mode && strcmp(mode, "array")) {
    if (strcmp(mode, "causal"))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[" SDPA
                       "] invalid mask option '%s'. Must be "
                       "'causal', or an array.",
                       mode);
    p.mask = CMX__SDPA_MASK_CAUSAL;
  } else if (mask) {
    int64_t full[4] = {B, H, L, S}, bs[CMX_MAX_NDIM];
    int bnd;
    if (!cmx__broadcast_shape("broadcast_shapes", mask->dims, mask->ndim, full,
                              4, bs, &bnd))
      return NULL;
    if (bnd != 4 || memcmp(bs, full, sizeof full))
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[" SDPA
                       "] mask of shape %s does not broadcast to the "
                       "scores' shape (%lld,%lld,%lld,%lld).",
                       cmx__shape_str(mask->dims, mask->ndim, buf, sizeof buf),
                       (long long)B, (long long)H, (long long)L, (long long)S);
    cmx_array m = mask;
    if (mask->dtype == CMX_BOOL) {
      p.mask = CMX__SDPA_MASK_BOOL;
    } else {
      if (cmx_dtype_promote(mask->dtype, dt) != dt)
        return CMX__FAIL(CMX_ERR_VALUE,
                         "[" SDPA "] Mask type must promote to output type %s.",
                         cmx_dtype_name(dt));
      p.mask = CMX__SDPA_MASK_ADD;
      m = cmx__as_dtype(mask, dt, s);
    }
    in[n++] = cmx__broadcast_to(m, full, 4, s);
  }
  if (sinks) {
    if (sinks->ndim != 1 || sinks->dims[0] != H)
      return CMX__FAIL(
          CMX_ERR_VALUE, "[" SDPA "] Received invalid shape for sinks %s.",
          cmx__shape_str(sinks->dims, sinks->ndim, buf, sizeof buf));
    if (cmx_dtype_promote(sinks->dtype, dt) != dt)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[" SDPA
                       "] Type of sinks must promote to output type "
                       "%s.",
                       cmx_dtype_name(dt));
    p.has_sinks = 1;
    in[n++] = cmx__contiguous(cmx__as_dtype(sinks, dt, s), false, s);
  }
  int64_t os[4] = {B, H, L, v->dims[3]};
  /* float64, a device whose backend has no kernel of the fused
   * primitive, and on the GPU head dims past its kernel's 256 (a lane
   * holds at most 8 features of a row), take the composite: ops with
   * kernels there (matmul, softmax, where ...), so attention runs
   * everywhere. */
  const cmx__stream* st = cmx__stream_resolve(s, SDPA);
  if (!st) return NULL;
  if (dt == CMX_FLOAT64 ||
      !cmx_primitive_has_kernel(&cmx__vt_ScaledDotProductAttention,
                                st->device.type) ||
      (st->device.type == CMX_GPU && (D > 256 || v->dims[3] > 256)))
    return cmx__fast_composite(&cmx__vt_ScaledDotProductAttention, &p, in, n,
                               s);
  return cmx__apply(&cmx__vt_ScaledDotProductAttention, &p, sizeof p, s, in, n,
                    os, 4, dt);
}

cmx_status cmx_fast_scaled_dot_product_attention(
    cmx_array* out, cmx_array q, cmx_array k, cmx_array v, float scale,
    const char* mask_mode, cmx_array mask, cmx_array sinks, cmx_stream s) {
  CMX__PUBLIC(out, SDPA, sdpa_op(q, k, v, scale, mask_mode, mask, sinks, s));
}
