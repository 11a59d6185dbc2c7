/* Layout helpers shared by the backends (and, later, compile): the joint
 * layout of several arrays of one shape reduced to the fewest dims,
 * row-major strides, the strides that let a reshape be a view, and the
 * outer dim where a strided array lies closest in memory.
 *
 *     // out, a, b of one shape: walk them as few long rows
 *     int64_t shape[CMX_MAX_NDIM], so[CMX_MAX_NDIM], sa[CMX_MAX_NDIM], ...
 *     int64_t* st[3] = {so, sa, sb};
 *     int nd = cmx__layout_collapse(shape, ndim, st, 3);
 *
 * Strides are in elements and may be zero (broadcast) or negative.
 */
#ifndef CMX_CORE_LAYOUT_H
#define CMX_CORE_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

/* Drops size-1 dims and merges each dim into the one before it when every
 * one of the narr stride sets steps through both as through one
 * (strides[k][d - 1] == strides[k][d] * shape[d]). Rewrites shape[0..nd)
 * and strides[k][0..nd) in place and returns the new number of dims (0
 * when every dim has size 1). The walk order of the elements is kept. */
int cmx__layout_collapse(int64_t* shape, int ndim, int64_t* const* strides,
                         int narr);

/* For a walk that may visit the outer dims in any order (a copy, an
 * elementwise op): the dim before the last two where an array with
 * strides st lies closest in memory, when it lies closer there than in
 * the last two dims (moving it next to the inner dim lets a transposed
 * array be walked in tiles); -1 when there is none. */
int cmx__closest_outer_dim(const int64_t* st, int ndim);

/* Row-major strides (in elements) of shape into out; a size-0 dim counts
 * as 1. */
void cmx__row_major_strides(const int64_t* shape, int ndim, int64_t* out);

/* Strides that let data laid out by (in_shape, in_strides) be read as
 * out_shape in row-major element order without moving it. Returns false
 * when no such strides exist (a copy is needed). Sizes must match. */
bool cmx__reshape_strides(const int64_t* in_shape, const int64_t* in_strides,
                          int in_ndim, const int64_t* out_shape, int out_ndim,
                          int64_t* out_strides);

#endif
