/* Gathered matrix-product primitives: GatherMM and SegmentedMM (see
 * primitives/matmul_gather.h for their contracts). */
#include "primitives/matmul_gather.h"

#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(GatherMM, .vjp = cmx__vjp_gather_mm, .jvp = cmx__jvp_gather_mm,
            .vmap = cmx__vmap_gather_mm);
CMX__VTABLE(SegmentedMM, .vjp = cmx__vjp_segmented_mm,
            .jvp = cmx__jvp_segmented_mm, .vmap = cmx__vmap_segmented_mm);
