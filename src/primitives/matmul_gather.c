/* Gathered matrix-product primitives: GatherMM and SegmentedMM (see
 * primitives/matmul_gather.h for their contracts). */
#include "primitives/matmul_gather.h"

#include "backend/cpu/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(GatherMM, .eval_cpu = cmx__cpu_gather_mm, .vjp = cmx__vjp_gather_mm,
            .jvp = cmx__jvp_gather_mm, .vmap = cmx__vmap_gather_mm);
CMX__VTABLE(SegmentedMM, .eval_cpu = cmx__cpu_segmented_mm,
            .vjp = cmx__vjp_segmented_mm, .jvp = cmx__jvp_segmented_mm,
            .vmap = cmx__vmap_segmented_mm);
