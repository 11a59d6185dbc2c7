/* cmx/random.h: random numbers, as mlx.core.random.
 *
 *     cmx_array key, u;
 *     cmx_random_key(&key, 0);                            // [0, 0]
 *     int64_t shape[] = {2, 3};
 *     cmx_random_uniform(&u, NULL, NULL, shape, 2, CMX_FLOAT32, key,
 *                        CMX_STREAM_DEFAULT);             // [0, 1)
 *     cmx_random_seed(42);                                // global state
 *     cmx_random_normal(&u, shape, 2, CMX_FLOAT32, NULL, NULL, NULL,
 *                       CMX_STREAM_DEFAULT);              // uses it
 *
 * Keys are counter-based threefry2x32 keys exactly as MLX and JAX use
 * them: a uint32 array of shape (2). Given the same key, bits and split
 * match MLX's and JAX's bit for bit, and every sampler is built from those
 * bits with the same sequence of ops as MLX's. uniform, bernoulli and
 * randint use only basic IEEE arithmetic and match MLX exactly; samplers
 * that go through transcendental functions (normal, truncated_normal,
 * gumbel, laplace, categorical, multivariate_normal) can differ from MLX in
 * the last bits where cmx's log/erfinv/... round differently (erfinv most:
 * cmx's is accurate to about an ulp, MLX's is a float32 polynomial).
 *
 * Conventions (all functions):
 * - key NULL means "use the global key state": it is split (as MLX's
 *   KeySequence does: state, sample_key = split(state)) and advanced,
 *   under a lock, so concurrent callers get distinct keys. A key must be
 *   uint32 of shape (2) (TypeError / ValueError naming the op otherwise).
 * - A sampler consumes one key. Samplers are lazy like other ops.
 * - shape/ndim give the output shape; shape may be NULL when ndim is 0.
 *   Where a function says "shape NULL: derived", NULL means MLX's
 *   shape=None.
 * - dtype CMX_DTYPE_AUTO means MLX's default (float32; int32 for randint).
 * - Parameter arrays (low, high, loc, scale, p, ...) broadcast against the
 *   shape; weak scalars (cmx_array_weak_float) act like Python numbers.
 */
#ifndef CMX_RANDOM_H
#define CMX_RANDOM_H

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------- keys and the global state ---------------- */
/* Seeds the global key state with key(seed). (Before the first seed the
 * state is seeded from the clock, as MLX's.) */
cmx_status cmx_random_seed(uint64_t seed);
/* A new key from a seed, MLX's layout: [seed >> 32, seed & 0xffffffff]. */
cmx_status cmx_random_key(cmx_array* out, uint64_t seed);
/* The current global key (a new (2,) uint32 array; mx.random.state[0]). */
cmx_status cmx_random_state(cmx_array* out);
/* Replaces the global key with key (evaluated now; must be a valid key). */
cmx_status cmx_random_set_state(cmx_array key);
/* num new keys from key, shape (num, 2): the bits of shape (num, 2).
 * MLX's split(key) is num = 2 with the rows as (key, subkey). */
cmx_status cmx_random_split(cmx_array* out, cmx_array key, int num,
                            cmx_stream s);

/* ---------------- bits ---------------- */
/* Raw random bits of the given shape: uint32 for width 4, uint16 for 2,
 * uint8 for 1 (other widths: ValueError). */
cmx_status cmx_random_bits(cmx_array* out, const int64_t* shape, int ndim,
                           int width, cmx_array key, cmx_stream s);

/* ---------------- samplers ---------------- */
/* Uniform in [low, high) (low NULL: 0, high NULL: 1), floating dtypes
 * (float16, bfloat16, float32; float64 also, from the same float32 draws:
 * an extension, MLX rejects it). low/high must broadcast to shape. */
cmx_status cmx_random_uniform(cmx_array* out, cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dtype,
                              cmx_array key, cmx_stream s);
/* Normal with mean loc and standard deviation scale (NULL: 0 and 1);
 * floating dtypes or complex64 (real and imaginary parts each of variance
 * 1/2, as MLX). The result shape is shape broadcast with loc/scale. */
cmx_status cmx_random_normal(cmx_array* out, const int64_t* shape, int ndim,
                             cmx_dtype dtype, cmx_array loc, cmx_array scale,
                             cmx_array key, cmx_stream s);
/* Samples of N(mean, cov): mean (..., n), cov (..., n, n); the result has
 * shape broadcast(shape, cov batch, mean batch) + (n). dtype float32 only
 * (as MLX). The covariance factor is cov's SVD square root
 * U diag(sqrt(s)) V^T, as MLX's, computed by cmx in double (a sampler
 * helper, not the linalg API). */
cmx_status cmx_random_multivariate_normal(cmx_array* out, cmx_array mean,
                                          cmx_array cov, const int64_t* shape,
                                          int ndim, cmx_dtype dtype,
                                          cmx_array key, cmx_stream s);
/* Integers in [low, high) (integer dtypes and bool; default int32). As
 * MLX (with ml-explore/mlx#4012): the floor of a float32 uniform on
 * [low, high), cast, clamped to [low, high - 1]; so bounds beyond 2^24
 * lose resolution, and an empty interval (high <= low) gives low, not an
 * error. */
cmx_status cmx_random_randint(cmx_array* out, cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dtype,
                              cmx_array key, cmx_stream s);
/* bool samples, true with probability p (p NULL: 0.5; a floating array);
 * shape NULL: p's shape. */
cmx_status cmx_random_bernoulli(cmx_array* out, cmx_array p,
                                const int64_t* shape, int ndim, cmx_array key,
                                cmx_stream s);
/* Standard normals truncated to [lower, upper] (floating dtypes; shape
 * NULL: broadcast of lower and upper). upper <= lower gives lower. */
cmx_status cmx_random_truncated_normal(cmx_array* out, cmx_array lower,
                                       cmx_array upper, const int64_t* shape,
                                       int ndim, cmx_dtype dtype, cmx_array key,
                                       cmx_stream s);
/* Standard Gumbel samples, -log(-log(uniform)) (floating dtypes). */
cmx_status cmx_random_gumbel(cmx_array* out, const int64_t* shape, int ndim,
                             cmx_dtype dtype, cmx_array key, cmx_stream s);
/* Laplace samples with location loc and scale (floating dtypes). */
cmx_status cmx_random_laplace(cmx_array* out, const int64_t* shape, int ndim,
                              cmx_dtype dtype, double loc, double scale,
                              cmx_array key, cmx_stream s);

/* ---------------- selection ---------------- */
/* Indices (uint32) drawn from the categorical distributions whose
 * unnormalised log-probabilities lie along `axis` of logits (Gumbel-max).
 * shape NULL: logits' shape without axis; otherwise shape must be that
 * shape broadcast to (ValueError naming both shapes). */
cmx_status cmx_random_categorical(cmx_array* out, cmx_array logits, int axis,
                                  const int64_t* shape, int ndim, cmx_array key,
                                  cmx_stream s);
/* num_samples draws from each distribution: the result is logits' shape
 * without axis, plus (num_samples). (MLX's num_samples argument.) */
cmx_status cmx_random_categorical_n(cmx_array* out, cmx_array logits, int axis,
                                    int64_t num_samples, cmx_array key,
                                    cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
