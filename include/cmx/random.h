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
 * them: a uint32 array of shape (2). Given the same key, bits, keys from
 * split and the samples match MLX's (and bits and split JAX's) bit for
 * bit. uniform, bernoulli, randint, gumbel, laplace and permutation use
 * only IEEE arithmetic and match exactly; normal and truncated_normal go
 * through erfinv, which cmx computes to within an ulp where MLX uses a
 * float32 polynomial, so they can differ from MLX in the last bits.
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
 * MLX: drawn as float32 uniforms, so bounds beyond 2^24 lose resolution;
 * an empty interval (high <= low) gives low, not an error. */
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

#ifdef __cplusplus
}
#endif
#endif
