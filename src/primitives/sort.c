/* Sort primitives: Sort, ArgSort, Partition, ArgPartition, SearchSorted. */
#include "primitives/sort.h"

#include <stdio.h>

#include "primitives/registry.h"
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

CMX__VTABLE(Sort, .print = sort_print, .vjp = cmx__vjp_sort,
            .jvp = cmx__jvp_sort, .vmap = cmx__vmap_sort);
CMX__VTABLE(ArgSort, .print = sort_print, .vjp = cmx__vjp_sort_index,
            .jvp = cmx__jvp_sort_index, .vmap = cmx__vmap_sort);
CMX__VTABLE(Partition, .print = partition_print, .vjp = cmx__vjp_sort,
            .jvp = cmx__jvp_sort, .vmap = cmx__vmap_sort);
CMX__VTABLE(ArgPartition, .print = partition_print, .vjp = cmx__vjp_sort_index,
            .jvp = cmx__jvp_sort_index, .vmap = cmx__vmap_sort);
CMX__VTABLE(SearchSorted, .print = searchsorted_print,
            .vjp = cmx__vjp_sort_index, .jvp = cmx__jvp_sort_index,
            .vmap = cmx__vmap_searchsorted);
