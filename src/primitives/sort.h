/* Parameters of the sort primitives, shared by the op layer, the vtables
 * and the kernels. Fields of one width per struct, so there is no padding
 * (compile compares parameter bytes).
 *
 * Sort / ArgSort: input a; output of a's shape (a's dtype / uint32), sorted
 *   along `axis` (normalised, a has at least one dim). Stable; keys order
 *   as NumPy: NaNs last, -0.0 == 0.0, complex64 by (real, imag).
 * Partition / ArgPartition: as above with `kth` normalised into [0, n).
 * SearchSorted: inputs sorted_sequence (1-d) and values, one dtype; output
 *   uint32 of values' shape; `right` selects NumPy's side='right'.
 */
#ifndef CMX_PRIMITIVES_SORT_H
#define CMX_PRIMITIVES_SORT_H

#include <stdint.h>

typedef struct cmx__sort_params {
  int64_t axis;
  int64_t kth; /* partitions only, 0 for sorts */
} cmx__sort_params;

typedef struct cmx__searchsorted_params {
  int32_t right;
} cmx__searchsorted_params;

#endif
