/* The Depends primitive: outputs equal to its first inputs, ordered after
 * the rest (MLX's depends). */
#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(Depends, .vjp = cmx__vjp_depends, .jvp = cmx__jvp_depends,
            .vmap = cmx__vmap_depends);
