/* The Depends primitive: outputs equal to its first inputs, ordered after
 * the rest (MLX's depends). */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(Depends, .eval_cpu = cmx__cpu_depends, .vjp = cmx__vjp_depends,
            .jvp = cmx__jvp_depends, .vmap = cmx__vmap_depends);
