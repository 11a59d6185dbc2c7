/* Helpers shared by the gather and scatter kernels: walking positions of
 * a strided array in row-major order, loading integer indices of any
 * dtype as int64, wrapping and bounds-checking them, and recording the
 * first bad index found by any thread.
 *
 *     int64_t v[256];
 *     cmx__cpu_load_indices(idx, begin, n, v);     // positions begin..
 *     if (!cmx__idx_wrap(&v[j], dim, 1)) ...        // out of bounds
 */
#ifndef CMX_BACKEND_CPU_INDEXING_H
#define CMX_BACKEND_CPU_INDEXING_H

#include "backend/cpu/cpu.h"

/* Positions handled per batch (offset and index buffers on the stack). */
#define CMX__IDX_BATCH 500

/* Writes to dst the element offsets, under strides st, of the row-major
 * positions [begin, begin + n) of shape sh (nd dims). Dims that are
 * contiguous under st are merged first, so row-major layouts cost one
 * multiply per position. */
void cmx__cpu_offsets(const int64_t* sh, const int64_t* st, int nd,
                      int64_t begin, int64_t n, int64_t* dst);

/* Loads the values at row-major positions [begin, begin + n) of the
 * integer array idx (any layout) into dst as int64. uint64 values above
 * INT64_MAX load as INT64_MAX, so they stay out of bounds. */
void cmx__cpu_load_indices(cmx_array idx, int64_t begin, int64_t n,
                           int64_t* dst);

/* Wraps a negative index by dim and checks that the slice [v, v + extent)
 * lies inside [0, dim); false (v unchanged) when it does not. */
static inline bool cmx__idx_wrap(int64_t* v, int64_t dim, int64_t extent) {
  int64_t x = *v;
  if (x < 0) x += dim;
  if (x < 0 || x > dim - extent) return false;
  *v = x;
  return true;
}

/* The first out-of-bounds index any thread met. */
typedef struct {
  _Atomic int flag;
  int64_t value;
  int axis;
  int64_t dim;
} cmx__idx_bad;

static inline void cmx__idx_bad_set(cmx__idx_bad* b, int64_t value, int axis,
                                    int64_t dim) {
  int expect = 0;
  if (atomic_compare_exchange_strong(&b->flag, &expect, 1)) {
    b->value = value;
    b->axis = axis;
    b->dim = dim;
  }
}

static inline bool cmx__idx_bad_seen(cmx__idx_bad* b) {
  return atomic_load_explicit(&b->flag, memory_order_relaxed) != 0;
}

/* Loads the indices at positions [begin, begin + n) of idx, wraps
 * negative ones by dim and stores index * stride into offs (first) or adds
 * it. tmp is n entries of scratch. Returns false, recording the first bad
 * index in bad (with axis and dim), when an index leaves no room for a
 * slice of ext elements. */
bool cmx__cpu_index_offsets(cmx_array idx, int64_t begin, int64_t n,
                            int64_t dim, int64_t ext, int64_t stride, int axis,
                            bool first, int64_t* offs, int64_t* tmp,
                            cmx__idx_bad* bad);

/* Bounds-checks every index of idx (wrapping negatives by dim, room for a
 * slice of ext elements) without computing offsets: for kernels whose
 * output or slices are empty, which move no data but must still reject an
 * out-of-range index as NumPy does. False, with the first bad index in
 * bad, when one is out of range. */
bool cmx__cpu_check_indices(cmx_array idx, int64_t dim, int64_t ext, int axis,
                            cmx__idx_bad* bad);

/* Sets the kernel error for a recorded bad index ("[op] Index 7 is out of
 * bounds for axis 0 with size 5.") and returns CMX_ERR_INDEX. */
cmx_status cmx__idx_bad_error(const cmx__idx_bad* b, const char* op);

/* Copies n elements of isz bytes (1, 2, 4 or 8) from src (stride ss in
 * elements) to dst (stride ds). */
void cmx__cpu_copy_run(char* dst, int64_t ds, const char* src, int64_t ss,
                       int64_t n, size_t isz);


#endif
