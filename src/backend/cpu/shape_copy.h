/* Byte-moving helpers of the shape kernels: strided copies between any two
 * layouts of the same shape (views, broadcasts, negative strides) and
 * fills. (Stride helpers shared with the GPU are in core/layout.h.)
 *
 *     // copy src (shape, strides) into a row-major buffer
 *     cmx__cpu_strided_copy(dst, row_major_strides, src, src_strides,
 *                           shape, ndim, itemsize);
 */
#ifndef CMX_BACKEND_CPU_SHAPE_COPY_H
#define CMX_BACKEND_CPU_SHAPE_COPY_H

#include "core/internal.h"
#include "core/layout.h"

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

#endif
