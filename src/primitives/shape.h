/* Parameter structs of the shape primitives, shared by the op layer (which
 * fills them) and the kernels (which read them). Structs are compared and
 * hashed as bytes, so ops zero them before filling. */
#ifndef CMX_PRIMITIVES_SHAPE_H
#define CMX_PRIMITIVES_SHAPE_H

#include <stddef.h>

#include "cmx/array.h"

/* Broadcast and Reshape: the output's shape. Only the first ndim dims
 * are stored (ops pass CMX__SHAPE_PARAMS_SIZE(ndim) as the size). */
typedef struct {
  int64_t ndim;
  int64_t dims[CMX_MAX_NDIM];
} cmx__shape_params;
#define CMX__SHAPE_PARAMS_SIZE(nd) \
  (offsetof(cmx__shape_params, dims) + (size_t)(nd) * sizeof(int64_t))

/* Reshape made by flatten: the shape, then the (normalised) axes merged,
 * so the shape can be derived again for inputs of other shapes (shapeless
 * compile). Its size, sizeof(cmx__flatten_params), is larger than any
 * plain Reshape's CMX__SHAPE_PARAMS_SIZE(ndim). */
typedef struct {
  cmx__shape_params shape;
  int start_axis, end_axis;
} cmx__flatten_params;

/* Transpose: out axis i is input axis perm[i] (ndim axes). */
typedef struct {
  int perm[CMX_MAX_NDIM];
  int ndim;
} cmx__transpose_params;

/* Squeeze / ExpandDims: the sorted axes removed from the input or
 * inserted into the output. */
typedef struct {
  int naxes;
  int axes[CMX_MAX_NDIM];
} cmx__axes_params;

/* Slice and SliceUpdate: normalised start index, stop and step per axis
 * (ndim axes). The region's extent on an axis is the number of indices
 * start, start + step, ... strictly before stop (0 for an empty region,
 * whose start and stop are then 0). */
typedef struct {
  int64_t start[CMX_MAX_NDIM];
  int64_t step[CMX_MAX_NDIM];
  int64_t stop[CMX_MAX_NDIM];
  int64_t ndim;
} cmx__slice_params;

/* AsStrided: element strides and offset into the contiguous input, and
 * the output's shape (ndim dims). */
typedef struct {
  int64_t strides[CMX_MAX_NDIM];
  int64_t offset;
  int64_t ndim;
  int64_t shape[CMX_MAX_NDIM];
} cmx__as_strided_params;

/* View: the dtype the bytes are read as. */
typedef struct {
  int dtype; /* cmx_dtype */
} cmx__view_params;

/* Contiguous: whether column-major data may stay as it is. */
typedef struct {
  int allow_col_major;
} cmx__contiguous_params;

/* Concatenate: the axis joined along. */
typedef struct {
  int axis;
} cmx__concat_params;

/* Diagonal (a view): in = {a}; out = a without axes axis1, axis2, plus the
 * diagonal a[..., i + off1, ..., i + off2, ...] as the last axis, where
 * off1 = max(-offset, 0), off2 = max(offset, 0). axis1 != axis2 are
 * normalised. Its strides are a's, so it never copies. */
typedef struct cmx__diagonal_params {
  int64_t offset;
  int axis1, axis2;
} cmx__diagonal_params;

/* Pad (constant mode): low and high padding per axis (ndim axes). */
typedef struct {
  int64_t low[CMX_MAX_NDIM];
  int64_t high[CMX_MAX_NDIM];
  int64_t ndim;
} cmx__pad_params;

#endif
