/* Random ops: keys, the global key state, bits, and the samplers built on
 * bits with elementwise ops, step for step as MLX's random.cpp builds them
 * so that the same key gives the same values. */
#include "primitives/random.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "ops/random_internal.h"
#include "ops/shape_internal.h"

/* ---------------- the global key state ----------------
 * MLX keeps a key and splits it on every use: (state, sample) =
 * split(state). Keys are two words, so the split is computed here on the
 * host under the lock: no lazy chain of keys builds up, and concurrent
 * callers each get their own key. split(k) is bits((2, 2), k): the
 * counter pairs (0, 2) and (1, 3) give the words [a0, a1, b0, b1], rows
 * [a0, a1] (the new state) and [b0, b1] (the sample key). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_seeded;
static uint32_t g_state[2];

static void seed_locked(uint64_t seed) {
  g_state[0] = (uint32_t)(seed >> 32);
  g_state[1] = (uint32_t)seed;
  g_seeded = true;
}

/* MLX seeds from the clock until seed() is called. */
static void ensure_seeded_locked(void) {
  if (g_seeded) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  seed_locked((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

static void next_key(uint32_t out[2]) {
  pthread_mutex_lock(&g_lock);
  ensure_seeded_locked();
  uint32_t a0 = 0, b0 = 2, a1 = 1, b1 = 3;
  cmx__threefry2x32(g_state[0], g_state[1], &a0, &b0);
  cmx__threefry2x32(g_state[0], g_state[1], &a1, &b1);
  g_state[0] = a0;
  g_state[1] = a1;
  pthread_mutex_unlock(&g_lock);
  out[0] = b0;
  out[1] = b1;
}

static cmx_array key_node(const uint32_t k[2]) {
  int64_t two = 2;
  cmx_array a = cmx__node_from_data("key", k, &two, 1, CMX_UINT32);
  return a ? cmx__own(a) : NULL;
}

cmx_array cmx__random_key(uint64_t seed) {
  uint32_t k[2] = {(uint32_t)(seed >> 32), (uint32_t)seed};
  return key_node(k);
}

static bool check_key(const char* op, cmx_array key) {
  char sb[512];
  if (key->dtype != CMX_UINT32) {
    cmx__error(CMX_ERR_TYPE, "[%s] Expected key type uint32 but received %s.",
               op, cmx_dtype_name(key->dtype));
    return false;
  }
  if (key->ndim != 1 || key->dims[0] != 2) {
    cmx__error(CMX_ERR_VALUE, "[%s] Expected key shape (2) but received %s.",
               op, cmx__shape_str(key->dims, key->ndim, sb, sizeof sb));
    return false;
  }
  return true;
}

cmx_array cmx__random_use_key(const char* op, cmx_array key) {
  if (key) return check_key(op, key) ? key : NULL;
  if (cmx__error_pending()) return NULL;
  uint32_t k[2];
  next_key(k);
  return key_node(k);
}

cmx_status cmx_random_seed(uint64_t seed) {
  pthread_mutex_lock(&g_lock);
  seed_locked(seed);
  pthread_mutex_unlock(&g_lock);
  return CMX_OK;
}

cmx_status cmx_random_key(cmx_array* out, uint64_t seed) {
  CMX__PUBLIC(out, "key", cmx__random_key(seed));
}

static cmx_array state_now(void) {
  uint32_t k[2];
  pthread_mutex_lock(&g_lock);
  ensure_seeded_locked();
  k[0] = g_state[0];
  k[1] = g_state[1];
  pthread_mutex_unlock(&g_lock);
  return key_node(k);
}

cmx_status cmx_random_state(cmx_array* out) {
  CMX__PUBLIC(out, "state", state_now());
}

cmx_status cmx_random_set_state(cmx_array key) {
  cmx__error_reset_pending();
  if (!key)
    return cmx__error(CMX_ERR_VALUE, "[set_state] argument is a null array");
  if (!check_key("set_state", key)) return cmx_last_status();
  uint32_t k[2];
  cmx_status st = cmx_array_copy_to(key, k, sizeof k);
  if (st != CMX_OK) return st;
  pthread_mutex_lock(&g_lock);
  g_state[0] = k[0];
  g_state[1] = k[1];
  g_seeded = true;
  pthread_mutex_unlock(&g_lock);
  return CMX_OK;
}

/* ---------------- bits and split ---------------- */

/* key may be NULL only with an error pending (it propagates). */
static cmx_array bits_impl(const char* op, const int64_t* shape, int ndim,
                           int width, cmx_array key, cmx_stream s) {
  cmx_dtype dt = width == 4   ? CMX_UINT32
                 : width == 2 ? CMX_UINT16
                 : width == 1 ? CMX_UINT8
                              : CMX_DTYPE_AUTO;
  if (dt == CMX_DTYPE_AUTO)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Bit width must be in {1, 2, 4} but got %d.", op,
                     width);
  if (!key) return NULL;
  cmx__random_bits_params q;
  memset(&q, 0, sizeof q);
  q.width = width;
  q.ndim = ndim;
  if (ndim) memcpy(q.shape, shape, (size_t)ndim * sizeof(int64_t));
  return cmx__apply(&cmx__vt_RandomBits, &q, sizeof q, s, &key, 1, shape, ndim,
                    dt);
}

cmx_array cmx__random_bits(const int64_t* shape, int ndim, int width,
                           cmx_array key, cmx_stream s) {
  if (!cmx__check_shape_arg("bits", shape, ndim, false)) return NULL;
  if (width != 1 && width != 2 && width != 4) /* fail before using a key */
    return bits_impl("bits", shape, ndim, width, NULL, s);
  return bits_impl("bits", shape, ndim, width, cmx__random_use_key("bits", key),
                   s);
}

cmx_status cmx_random_bits(cmx_array* out, const int64_t* shape, int ndim,
                           int width, cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "bits", cmx__random_bits(shape, ndim, width, key, s));
}

cmx_array cmx__random_split(cmx_array key, int num, cmx_stream s) {
  if (num < 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[split] Number of keys must be non-negative, got %d.",
                     num);
  int64_t shape[2] = {num, 2};
  return bits_impl("split", shape, 2, 4, cmx__random_use_key("split", key), s);
}

cmx_status cmx_random_split(cmx_array* out, cmx_array key, int num,
                            cmx_stream s) {
  CMX__PUBLIC(out, "split", cmx__random_split(key, num, s));
}

/* ---------------- uniform ---------------- */

/* float32 value of the largest number below 1 in dt (MLX's bound that
 * keeps samples out of high after rounding to dt). */
static float below_one(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return 0.99951171875f; /* 0x3bff */
    case CMX_BFLOAT16:
      return 0.99609375f; /* 0x3f7f */
    default:
      return nextafterf(1.0f, 0.0f); /* float32, float64 */
  }
}

static bool check_floating(const char* op, cmx_dtype dt, const char* what) {
  if (cmx_dtype_valid((int)dt) && cmx_dtype_is_floating(dt)) return true;
  cmx__error(CMX_ERR_TYPE, "[%s] %s", op, what);
  return false;
}

/* MLX's uniform: low + (high - low) * min(bits / 2^32, below_one) with the
 * bound computed in float32 and the rest in dt; low and high NULL mean 0
 * and 1. key must be resolved already. op names the errors. */
static cmx_array uniform_impl(const char* op, cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dt,
                              cmx_array key, cmx_stream s) {
  if (cmx__error_pending()) return NULL; /* a failed optional argument */
  if (!check_floating(op, dt,
                      "Can only generate uniform numbers with real floating "
                      "point type."))
    return NULL;
  if (!cmx__check_shape_arg(op, shape, ndim, false)) return NULL;
  cmx_array lo = low ? cmx__as_dtype(low, dt, s) : cmx__scalar(0, dt);
  cmx_array hi = high ? cmx__as_dtype(high, dt, s) : cmx__scalar(1, dt);
  cmx_array range = cmx__subtract(hi, lo, s);
  if (!range) return NULL;
  int64_t bs[CMX_MAX_NDIM];
  int nb;
  if (!cmx__broadcast_shape(op, shape, ndim, range->dims, range->ndim, bs, &nb))
    return NULL;
  bool same = nb == ndim;
  for (int i = 0; same && i < ndim; i++) same = bs[i] == shape[i];
  if (!same) {
    char sa[512], sb[512];
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] Cannot generate random values of shape %s from "
                     "broadcasted shape %s.",
                     op, cmx__shape_str(shape, ndim, sa, sizeof sa),
                     cmx__shape_str(bs, nb, sb, sizeof sb));
  }
  cmx_array u = bits_impl(op, shape, ndim, 4, key, s);
  u = cmx__divide(u, cmx__scalar(4294967296.0, CMX_FLOAT32), s);
  u = cmx__minimum(u, cmx__scalar(below_one(dt), CMX_FLOAT32), s);
  u = cmx__as_dtype(u, dt, s);
  return cmx__add(cmx__multiply(range, u, s), lo, s);
}

static cmx_dtype or_default(cmx_dtype dt, cmx_dtype def) {
  return dt == CMX_DTYPE_AUTO ? def : dt;
}

cmx_array cmx__random_uniform(cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dt,
                              cmx_array key, cmx_stream s) {
  dt = or_default(dt, CMX_FLOAT32);
  /* Validate before touching the global state. */
  if (!check_floating("uniform", dt,
                      "Can only generate uniform numbers with real floating "
                      "point type."))
    return NULL;
  return uniform_impl("uniform", low, high, shape, ndim, dt,
                      cmx__random_use_key("uniform", key), s);
}

cmx_status cmx_random_uniform(cmx_array* out, cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dtype,
                              cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "uniform",
              cmx__random_uniform(low, high, shape, ndim, dtype, key, s));
}

/* Uniform float32 samples in (-1, 1): MLX's start for normal and laplace. */
static cmx_array open_unit(const char* op, const int64_t* shape, int ndim,
                           cmx_array key, cmx_stream s) {
  return uniform_impl(op, cmx__scalar(nextafterf(-1.0f, 0.0f), CMX_FLOAT32),
                      cmx__scalar(1.0, CMX_FLOAT32), shape, ndim, CMX_FLOAT32,
                      key, s);
}

/* ---------------- normal ---------------- */

/* complex64: erfinv of uniforms in (-1, 1) over shape + (2), viewed as
 * complex (each part has variance 1/2); loc and scale as given. */
static cmx_array complex_normal(const int64_t* shape, int ndim, cmx_array loc,
                                cmx_array scale, cmx_array key, cmx_stream s) {
  if (!cmx__check_shape_arg("normal", shape, ndim, false)) return NULL;
  if (ndim + 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[normal] too many dimensions.");
  int64_t sh[CMX_MAX_NDIM];
  for (int i = 0; i < ndim; i++) sh[i] = shape[i];
  sh[ndim] = 2;
  cmx_array x = cmx__erfinv(open_unit("normal", sh, ndim + 1, key, s), s);
  x = cmx__squeeze(cmx__view(x, CMX_COMPLEX64, s), (int[]){-1}, 1, s);
  if (scale) x = cmx__multiply(scale, x, s);
  if (loc) x = cmx__add(loc, x, s);
  return x;
}

cmx_array cmx__random_normal(const int64_t* shape, int ndim, cmx_dtype dt,
                             cmx_array loc, cmx_array scale, cmx_array key,
                             cmx_stream s) {
  if (cmx__error_pending()) return NULL; /* a failed optional argument */
  dt = or_default(dt, CMX_FLOAT32);
  if (dt == CMX_COMPLEX64)
    return complex_normal(shape, ndim, loc, scale,
                          cmx__random_use_key("normal", key), s);
  if (!check_floating("normal", dt,
                      "Can only generate random numbers with floating point "
                      "type."))
    return NULL;
  cmx_array x =
      open_unit("normal", shape, ndim, cmx__random_use_key("normal", key), s);
  cmx_array f = cmx__scalar(sqrt(2.0), dt);
  if (scale) f = cmx__multiply(f, cmx__as_dtype(scale, dt, s), s);
  x = cmx__as_dtype(cmx__erfinv(x, s), dt, s);
  x = cmx__multiply(f, x, s);
  if (loc) x = cmx__add(cmx__as_dtype(loc, dt, s), x, s);
  return x;
}

cmx_status cmx_random_normal(cmx_array* out, const int64_t* shape, int ndim,
                             cmx_dtype dtype, cmx_array loc, cmx_array scale,
                             cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "normal",
              cmx__random_normal(shape, ndim, dtype, loc, scale, key, s));
}

/* ---------------- randint ---------------- */

/* MLX (since ml-explore/mlx#4012): floor of a float32 uniform on
 * [low, high), cast, then clamped to [low, high - 1] with the bounds in the
 * integer dtype; clamping to low last makes an empty interval give low. */
cmx_array cmx__random_randint(cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dt,
                              cmx_array key, cmx_stream s) {
  if (!CMX__ARGS("randint", low, high)) return NULL;
  dt = or_default(dt, CMX_INT32);
  if (!cmx_dtype_valid((int)dt) || cmx_dtype_is_inexact(dt))
    return CMX__FAIL(CMX_ERR_TYPE,
                     "[randint] randint only accepts integer dtypes and "
                     "bool.");
  cmx_array u = uniform_impl("randint", low, high, shape, ndim, CMX_FLOAT32,
                             cmx__random_use_key("randint", key), s);
  cmx_array x = cmx__as_dtype(cmx__floor(u, s), dt, s);
  cmx_array top =
      cmx__as_dtype(cmx__subtract(high, cmx__scalar(1, high->dtype), s), dt, s);
  return cmx__maximum(cmx__minimum(x, top, s), cmx__as_dtype(low, dt, s), s);
}

cmx_status cmx_random_randint(cmx_array* out, cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dtype,
                              cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "randint",
              cmx__random_randint(low, high, shape, ndim, dtype, key, s));
}

/* ---------------- bernoulli ---------------- */

/* bits < p * nextafter(2^32, inf): p >= 1 always true, p <= 0 never. The
 * comparison runs in p's promoted float type, as MLX's. */
cmx_array cmx__random_bernoulli(cmx_array p, const int64_t* shape, int ndim,
                                cmx_array key, cmx_stream s) {
  if (!p) {
    if (cmx__error_pending()) return NULL;
    p = cmx__scalar(0.5, CMX_FLOAT32);
    if (!p) return NULL;
  }
  if (!cmx_dtype_is_floating(p->dtype))
    return CMX__FAIL(CMX_ERR_TYPE,
                     "[bernoulli] bernoulli probability `p` must be a float "
                     "type.");
  if (!shape) {
    shape = p->dims;
    ndim = p->ndim;
  }
  if (!cmx__check_shape_arg("bernoulli", shape, ndim, false)) return NULL;
  int64_t bs[CMX_MAX_NDIM];
  int nb;
  bool ok = cmx__broadcast_shape("bernoulli", shape, ndim, p->dims, p->ndim, bs,
                                 &nb) &&
            nb == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = bs[i] == shape[i];
  if (!ok)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[bernoulli] shape of `p` is incompatible with argument "
                     "`shape`.");
  float upper = nextafterf(4294967296.0f, FLT_MAX);
  cmx_array b = bits_impl("bernoulli", shape, ndim, 4,
                          cmx__random_use_key("bernoulli", key), s);
  return cmx__less(b, cmx__multiply(p, cmx__scalar(upper, CMX_FLOAT32), s), s);
}

cmx_status cmx_random_bernoulli(cmx_array* out, cmx_array p,
                                const int64_t* shape, int ndim, cmx_array key,
                                cmx_stream s) {
  CMX__PUBLIC(out, "bernoulli", cmx__random_bernoulli(p, shape, ndim, key, s));
}

/* ---------------- truncated_normal ---------------- */

/* sqrt(2) erfinv(u) with u uniform on [erf(lower / sqrt2), erf(upper /
 * sqrt2)), clipped to [lower, upper] (upper first, so upper <= lower gives
 * lower), as MLX (and JAX). */
cmx_array cmx__random_truncated_normal(cmx_array lower, cmx_array upper,
                                       const int64_t* shape, int ndim,
                                       cmx_dtype dt, cmx_array key,
                                       cmx_stream s) {
  if (!CMX__ARGS("truncated_normal", lower, upper)) return NULL;
  dt = or_default(dt, CMX_FLOAT32);
  if (!check_floating("truncated_normal", dt,
                      "truncated_normal only accepts floating point "
                      "dtypes."))
    return NULL;
  int64_t bs[CMX_MAX_NDIM];
  if (!shape) {
    if (!cmx__broadcast_shape("truncated_normal", lower->dims, lower->ndim,
                              upper->dims, upper->ndim, bs, &ndim))
      return NULL;
    shape = bs;
  }
  cmx_array sqrt2 = cmx__scalar(sqrt(2.0), dt);
  cmx_array lo = cmx__as_dtype(lower, dt, s), hi = cmx__as_dtype(upper, dt, s);
  cmx_array a = cmx__erf(cmx__divide(lo, sqrt2, s), s);
  cmx_array b = cmx__erf(cmx__divide(hi, sqrt2, s), s);
  cmx_array u = uniform_impl("truncated_normal", a, b, shape, ndim, dt,
                             cmx__random_use_key("truncated_normal", key), s);
  cmx_array x = cmx__multiply(sqrt2, cmx__erfinv(u, s), s);
  return cmx__maximum(cmx__minimum(hi, x, s), lo, s);
}

cmx_status cmx_random_truncated_normal(cmx_array* out, cmx_array lower,
                                       cmx_array upper, const int64_t* shape,
                                       int ndim, cmx_dtype dtype, cmx_array key,
                                       cmx_stream s) {
  CMX__PUBLIC(
      out, "truncated_normal",
      cmx__random_truncated_normal(lower, upper, shape, ndim, dtype, key, s));
}

/* ---------------- gumbel and laplace ---------------- */

cmx_array cmx__random_gumbel(const int64_t* shape, int ndim, cmx_dtype dt,
                             cmx_array key, cmx_stream s) {
  dt = or_default(dt, CMX_FLOAT32);
  if (!check_floating("gumbel", dt,
                      "Can only generate uniform numbers with real floating "
                      "point type."))
    return NULL;
  cmx_array u = uniform_impl("gumbel", NULL, NULL, shape, ndim, dt,
                             cmx__random_use_key("gumbel", key), s);
  return cmx__negative(cmx__log(cmx__negative(cmx__log(u, s), s), s), s);
}

cmx_status cmx_random_gumbel(cmx_array* out, const int64_t* shape, int ndim,
                             cmx_dtype dtype, cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "gumbel", cmx__random_gumbel(shape, ndim, dtype, key, s));
}

/* Inverse CDF on uniforms u in (-1, 1): sign(u) log1p(-|u|), computed in
 * float32 (float64 for float64), then scale and loc in dt. MLX takes loc
 * and scale as C floats; they are rounded to float except for float64. */
cmx_array cmx__random_laplace(const int64_t* shape, int ndim, cmx_dtype dt,
                              double loc, double scale, cmx_array key,
                              cmx_stream s) {
  dt = or_default(dt, CMX_FLOAT32);
  if (!check_floating("laplace", dt,
                      "Can only generate uniform numbers with real floating "
                      "point type."))
    return NULL;
  if (dt != CMX_FLOAT64) {
    loc = (double)(float)loc;
    scale = (double)(float)scale;
  }
  cmx_array u =
      open_unit("laplace", shape, ndim, cmx__random_use_key("laplace", key), s);
  cmx_array m = cmx__multiply(cmx__scalar(-1.0, dt), cmx__abs(u, s), s);
  cmx_array x = cmx__multiply(cmx__sign(u, s), cmx__log1p(m, s), s);
  x = cmx__as_dtype(x, dt, s);
  if (scale != 1.0) x = cmx__multiply(cmx__scalar(scale, dt), x, s);
  if (loc != 0.0) x = cmx__add(cmx__scalar(loc, dt), x, s);
  return x;
}

cmx_status cmx_random_laplace(cmx_array* out, const int64_t* shape, int ndim,
                              cmx_dtype dtype, double loc, double scale,
                              cmx_array key, cmx_stream s) {
  CMX__PUBLIC(out, "laplace",
              cmx__random_laplace(shape, ndim, dtype, loc, scale, key, s));
}

/* ---------------- multivariate_normal ---------------- */

/* mean + z @ sqrt(cov) with z standard normal of the broadcast batch shape
 * + (n), and sqrt(cov) = U diag(sqrt(s)) V^T from cov's SVD, as MLX. */
cmx_array cmx__random_multivariate_normal(cmx_array mean, cmx_array cov,
                                          const int64_t* shape, int ndim,
                                          cmx_dtype dt, cmx_array key,
                                          cmx_stream s) {
  const char* op = "multivariate_normal";
  if (!CMX__ARGS(op, mean, cov)) return NULL;
  dt = or_default(dt, CMX_FLOAT32);
  if (dt != CMX_FLOAT32)
    return CMX__FAIL(CMX_ERR_TYPE, "[%s] dtype must be float32.", op);
  if (mean->ndim < 1)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] mean must have at least one dimension.", op);
  if (cov->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] cov must have at least two dimensions.", op);
  int64_t n = mean->dims[mean->ndim - 1];
  if (cov->dims[cov->ndim - 1] != cov->dims[cov->ndim - 2])
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] last two dimensions of cov must be equal.", op);
  if (cov->dims[cov->ndim - 1] != n)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] mean and cov must have compatible shapes.", op);
  if (!cmx__check_shape_arg(op, shape, ndim, false)) return NULL;
  int64_t b1[CMX_MAX_NDIM], b2[CMX_MAX_NDIM];
  int n1, n2;
  if (!cmx__broadcast_shape(op, cov->dims, cov->ndim - 2, mean->dims,
                            mean->ndim - 1, b1, &n1) ||
      !cmx__broadcast_shape(op, b1, n1, shape, ndim, b2, &n2))
    return NULL;
  if (n2 + 1 > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] too many dimensions.", op);
  b2[n2] = n;

  cmx_array c = cmx__contiguous(cmx__as_dtype(cov, CMX_FLOAT32, s), false, s);
  cmx_array root = c ? cmx__apply(&cmx__vt_CovSqrt, NULL, 0, s, &c, 1, c->dims,
                                  c->ndim, CMX_FLOAT32)
                     : NULL;
  /* MLX calls normal(shape, dtype, loc=0, scale=1, key). */
  cmx_array z =
      cmx__random_normal(b2, n2 + 1, dt, cmx__scalar(0, dt), cmx__scalar(1, dt),
                         cmx__random_use_key(op, key), s);
  z = cmx__matmul(cmx__expand_dims(z, (int[]){-2}, 1, s),
                  cmx__as_dtype(root, dt, s), s);
  return cmx__add(mean, cmx__squeeze(z, (int[]){-2}, 1, s), s);
}

cmx_status cmx_random_multivariate_normal(cmx_array* out, cmx_array mean,
                                          cmx_array cov, const int64_t* shape,
                                          int ndim, cmx_dtype dtype,
                                          cmx_array key, cmx_stream s) {
  CMX__PUBLIC(
      out, "multivariate_normal",
      cmx__random_multivariate_normal(mean, cov, shape, ndim, dtype, key, s));
}
