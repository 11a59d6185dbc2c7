/* Sort primitives: Sort, ArgSort, Partition, ArgPartition, SearchSorted. */
#include "primitives/sort.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void sort_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__sort_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "%s(axis=%d)", cmx_primitive_name(p), (int)q->axis);
}

static void partition_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__sort_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "%s(kth=%lld, axis=%d)", cmx_primitive_name(p),
           (long long)q->kth, (int)q->axis);
}

static void searchsorted_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__searchsorted_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "SearchSorted(side=%s)", q->right ? "right" : "left");
}

/* SearchSorted: the values' shape. */
static cmx_status searchsorted_shapes(const cmx_primitive* p,
                                      const cmx_array* in, int nin,
                                      cmx_shape* out, int nout) {
  (void)nout;
  if (nin != 2) return cmx__shape_fail(p, "bad arity");
  cmx__shape_of(&out[0], in[1]);
  return CMX_OK;
}

/* The parameter structs have one field width each (no padding): compared
 * as bytes. */
CMX__VTABLE(Sort, .print = sort_print, .vjp = cmx__vjp_sort,
            .jvp = cmx__jvp_sort, .vmap = cmx__vmap_sort,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArgSort, .print = sort_print, .vjp = cmx__vjp_sort_index,
            .jvp = cmx__jvp_sort_index, .vmap = cmx__vmap_sort,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Partition, .print = partition_print, .vjp = cmx__vjp_sort,
            .jvp = cmx__jvp_sort, .vmap = cmx__vmap_sort,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ArgPartition, .print = partition_print, .vjp = cmx__vjp_sort_index,
            .jvp = cmx__jvp_sort_index, .vmap = cmx__vmap_sort,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(SearchSorted, .print = searchsorted_print,
            .vjp = cmx__vjp_sort_index, .jvp = cmx__jvp_sort_index,
            .vmap = cmx__vmap_searchsorted,
            .output_shapes = searchsorted_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
