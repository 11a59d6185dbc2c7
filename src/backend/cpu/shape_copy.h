/* Byte-moving helpers of the shape kernels: strided copies between any two
 * layouts of the same shape (views, broadcasts, negative strides), fills,
 * and the stride computation that decides whether a reshape can be a view.
 *
 *     // copy src (shape, strides) into a row-major buffer
 *     cmx__cpu_strided_copy(dst, row_major_strides, src, src_strides,
 *                           shape, ndim, itemsize);
 */
#ifndef CMX_BACKEND_CPU_SHAPE_COPY_H
#define CMX_BACKEND_CPU_SHAPE_COPY_H

#include "core/internal.h"

/* Copies every element of `shape` from src to dst; strides are in elements
 * of isz bytes (1, 2, 4 or 8) and may be zero (src: broadcast, dst: must
 * not alias) or negative. Contiguous rows use memcpy, stride-0 sources
 * become fills; large copies run on the thread pool. dst and src must not
 * overlap. */
void cmx__cpu_strided_copy(char* dst, const int64_t* dst_strides,
                           const char* src, const int64_t* src_strides,
                           const int64_t* shape, int ndim, size_t isz);

/* Fills n contiguous elements of isz bytes at dst with the value at val. */
void cmx__cpu_fill(char* dst, int64_t n, const void* val, size_t isz);

/* Copies array src into the row-major buffer dst (src's shape). */
void cmx__cpu_copy_rowmajor(char* dst, cmx_array src);

/* For a walk that may visit the outer dims in any order (a copy, an
 * elementwise op): the dim before the last two where an array with
 * strides st lies closest in memory, when it lies closer there than in
 * the last two dims (moving it next to the inner dim lets a transposed
 * array be walked in tiles); -1 when there is none. */
int cmx__closest_outer_dim(const int64_t* st, int ndim);

/* Row-major strides (in elements) of shape into out. */
void cmx__row_major_strides(const int64_t* shape, int ndim, int64_t* out);

/* Strides that let data laid out by (in_shape, in_strides) be read as
 * out_shape in row-major element order without moving it. Returns false
 * when no such strides exist (a copy is needed). Sizes must match. */
bool cmx__reshape_strides(const int64_t* in_shape, const int64_t* in_strides,
                          int in_ndim, const int64_t* out_shape, int out_ndim,
                          int64_t* out_strides);

#endif
