/* Parameter structs of the indexing primitives, shared by the op layer
 * (which fills them) and the kernels (which read them). Structs are
 * compared and hashed as bytes, so ops zero them before filling. */
#ifndef CMX_PRIMITIVES_INDEXING_H
#define CMX_PRIMITIVES_INDEXING_H

#include "cmx/array.h"

/* How Scatter and ScatterAxis combine an update with the element it hits. */
typedef enum cmx__scatter_mode {
  CMX__SCATTER_NONE = 0, /* replace (last write wins) */
  CMX__SCATTER_ADD,
  CMX__SCATTER_PROD,
  CMX__SCATTER_MAX,
  CMX__SCATTER_MIN,
  CMX__SCATTER_NUM_MODES
} cmx__scatter_mode;

/* Gather: inputs a, then naxes index arrays of one shape I (any integer
 * dtypes). Output I + slice_sizes; index k gives the slice start on
 * axes[k]. */
typedef struct {
  int naxes;
  int axes[CMX_MAX_NDIM];
  int64_t slice_sizes[CMX_MAX_NDIM];
} cmx__gather_params;

/* Scatter: inputs a, naxes index arrays of one shape I, updates of shape
 * I + U (U has a.ndim dims, U <= a.shape). Output a's shape and dtype. */
typedef struct {
  int mode; /* cmx__scatter_mode */
  int naxes;
  int axes[CMX_MAX_NDIM];
} cmx__scatter_params;

/* GatherAxis (inputs a, indices; output indices' shape) and ScatterAxis
 * (inputs a, indices, values of indices' shape; output a's shape): a and
 * indices agree on every axis but `axis`. */
typedef struct {
  int axis;
  int mode; /* ScatterAxis: cmx__scatter_mode; GatherAxis: 0 */
} cmx__axis_params;

#endif
