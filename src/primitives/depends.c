/* The Depends primitive: outputs equal to its first inputs, ordered after
 * the rest (MLX's depends). */
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* Output i has input i's shape. */
static cmx_status depends_shapes(const cmx_primitive* p, const cmx_array* in,
                                 int nin, cmx_shape* out, int nout) {
  if (nout > nin) return cmx__shape_fail(p, "more outputs than inputs");
  for (int i = 0; i < nout; i++) cmx__shape_of(&out[i], in[i]);
  return CMX_OK;
}

CMX__VTABLE(Depends, .vjp = cmx__vjp_depends, .jvp = cmx__jvp_depends,
            .vmap = cmx__vmap_depends, .output_shapes = depends_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
