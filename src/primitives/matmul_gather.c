/* Linear-algebra extra primitives: Diagonal (a view), Hadamard, GatherMM
 * and SegmentedMM (see primitives/matmul_gather.h for their contracts). */
#include "primitives/matmul_gather.h"

#include <stdio.h>

#include "backend/cpu/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

static void diagonal_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Diagonal(offset=%lld, axis1=%d, axis2=%d)",
           (long long)q->offset, q->axis1, q->axis2);
}

static void hadamard_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__hadamard_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Hadamard(scale=%g%s)", q->scale,
           q->transpose ? ", transpose" : "");
}

/* The view works wherever the data lives, so the GPU runs it too. */
CMX__VTABLE(Diagonal, .eval_cpu = cmx__cpu_diagonal,
            .eval_gpu = cmx__cpu_diagonal, .vjp = cmx__vjp_diagonal,
            .jvp = cmx__jvp_diagonal, .vmap = cmx__vmap_diagonal,
            .print = diagonal_print);
CMX__VTABLE(Hadamard, .eval_cpu = cmx__cpu_hadamard, .vjp = cmx__vjp_hadamard,
            .jvp = cmx__jvp_hadamard, .vmap = cmx__vmap_hadamard,
            .print = hadamard_print);
CMX__VTABLE(GatherMM, .eval_cpu = cmx__cpu_gather_mm, .vjp = cmx__vjp_gather_mm,
            .jvp = cmx__jvp_gather_mm, .vmap = cmx__vmap_gather_mm);
CMX__VTABLE(SegmentedMM, .eval_cpu = cmx__cpu_segmented_mm,
            .vjp = cmx__vjp_segmented_mm, .jvp = cmx__jvp_segmented_mm,
            .vmap = cmx__vmap_segmented_mm);
