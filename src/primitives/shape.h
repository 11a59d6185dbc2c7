/* Parameter structs of the shape primitives, shared by the op layer (which
 * fills them) and the kernels (which read them). Structs are compared and
 * hashed as bytes, so ops zero them before filling. */
#ifndef CMX_PRIMITIVES_SHAPE_H
#define CMX_PRIMITIVES_SHAPE_H

#include "cmx/array.h"

/* Reshape made by flatten: the (normalised) axes merged, so the shape can
 * be derived again for inputs of other shapes (shapeless compile). A plain
 * reshape has no parameters. */
typedef struct {
  int start_axis, end_axis;
} cmx__flatten_params;

/* Transpose: out axis i is input axis perm[i]. */
typedef struct {
  int perm[CMX_MAX_NDIM];
} cmx__transpose_params;

/* Squeeze / ExpandDims: the sorted axes removed from the input or
 * inserted into the output. */
typedef struct {
  int naxes;
  int axes[CMX_MAX_NDIM];
} cmx__axes_params;

/* Slice and SliceUpdate: normalised start index and step per axis (the
 * output / region shape is the node's). */
typedef struct {
  int64_t start[CMX_MAX_NDIM];
  int64_t step[CMX_MAX_NDIM];
} cmx__slice_params;

/* AsStrided: element strides and offset into the contiguous input. */
typedef struct {
  int64_t strides[CMX_MAX_NDIM];
  int64_t offset;
} cmx__as_strided_params;

/* Contiguous: whether column-major data may stay as it is. */
typedef struct {
  int allow_col_major;
} cmx__contiguous_params;

/* Concatenate: the axis joined along. */
typedef struct {
  int axis;
} cmx__concat_params;

/* Pad (constant mode): low padding per axis (the output shape has the
 * rest). */
typedef struct {
  int64_t low[CMX_MAX_NDIM];
} cmx__pad_params;

#endif
