/* Matrix-product primitives. */
#include "primitives/matmul.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "transforms/rules.h"

static void addmm_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__addmm_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "AddMM(alpha=%g, beta=%g)", (double)q->alpha,
           (double)q->beta);
}

CMX__VTABLE(Matmul, .vjp = cmx__vjp_matmul, .jvp = cmx__jvp_matmul,
            .vmap = cmx__vmap_matmul);
CMX__VTABLE(AddMM, .vjp = cmx__vjp_addmm, .jvp = cmx__jvp_addmm,
            .vmap = cmx__vmap_matmul, .print = addmm_print);
