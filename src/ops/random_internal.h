/* Internal (expression-style) twins of cmx/random.h, for composite ops
 * elsewhere (dropout, initialisers ...). Same arguments and defaults as
 * the public functions; each returns a scope-owned handle or NULL with the
 * error set. A NULL key means the global key state; a NULL key while an
 * error is pending propagates the error instead. */
#ifndef CMX_OPS_RANDOM_INTERNAL_H
#define CMX_OPS_RANDOM_INTERNAL_H

#include "cmx/random.h"
#include "ops/ops_internal.h"
#include "ops/shape_internal.h"

/* A (2,) uint32 key from a seed (MLX's layout). */
cmx_array cmx__random_key(uint64_t seed);
/* key itself when it is a valid key for op, else NULL with "[op] ..." set;
 * with key NULL, a new key split from the global state (advancing it). */
cmx_array cmx__random_use_key(const char* op, cmx_array key);
cmx_array cmx__random_split(cmx_array key, int num, cmx_stream s);
cmx_array cmx__random_bits(const int64_t* shape, int ndim, int width,
                           cmx_array key, cmx_stream s);
cmx_array cmx__random_uniform(cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dt,
                              cmx_array key, cmx_stream s);
cmx_array cmx__random_normal(const int64_t* shape, int ndim, cmx_dtype dt,
                             cmx_array loc, cmx_array scale, cmx_array key,
                             cmx_stream s);
cmx_array cmx__random_multivariate_normal(cmx_array mean, cmx_array cov,
                                          const int64_t* shape, int ndim,
                                          cmx_dtype dt, cmx_array key,
                                          cmx_stream s);
cmx_array cmx__random_randint(cmx_array low, cmx_array high,
                              const int64_t* shape, int ndim, cmx_dtype dt,
                              cmx_array key, cmx_stream s);
cmx_array cmx__random_bernoulli(cmx_array p, const int64_t* shape, int ndim,
                                cmx_array key, cmx_stream s);
cmx_array cmx__random_truncated_normal(cmx_array lower, cmx_array upper,
                                       const int64_t* shape, int ndim,
                                       cmx_dtype dt, cmx_array key,
                                       cmx_stream s);
cmx_array cmx__random_gumbel(const int64_t* shape, int ndim, cmx_dtype dt,
                             cmx_array key, cmx_stream s);
cmx_array cmx__random_laplace(const int64_t* shape, int ndim, cmx_dtype dt,
                              double loc, double scale, cmx_array key,
                              cmx_stream s);
cmx_array cmx__random_categorical(cmx_array logits, int axis,
                                  const int64_t* shape, int ndim, cmx_array key,
                                  cmx_stream s);
cmx_array cmx__random_categorical_n(cmx_array logits, int axis,
                                    int64_t num_samples, cmx_array key,
                                    cmx_stream s);

#endif
