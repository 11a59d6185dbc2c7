/* Random-number primitives (see primitives/random.h). */
#include "primitives/random.h"

#include <stdio.h>

#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

static void bits_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__random_bits_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "RandomBits(width=%d)", q->width);
}

CMX__VTABLE(RandomBits, .eval_cpu = cmx__cpu_random_bits, .print = bits_print);
CMX__VTABLE(CovSqrt, .eval_cpu = cmx__cpu_cov_sqrt);
