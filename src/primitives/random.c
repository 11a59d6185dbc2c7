/* Random-number primitives (see primitives/random.h). */
#include "primitives/random.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "transforms/rules.h"

static void bits_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__random_bits_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "RandomBits(width=%d)", q->width);
}

/* Bits have no derivative; a batch of keys gives one block per key. */
CMX__VTABLE(RandomBits, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .vmap = cmx__vmap_random_bits, .print = bits_print);
CMX__VTABLE(CovSqrt, .vjp = cmx__vjp_cov_sqrt, .jvp = cmx__jvp_cov_sqrt,
            .vmap = cmx__vmap_cov_sqrt);
