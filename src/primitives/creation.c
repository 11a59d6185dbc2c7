/* Creation primitives: ranges, fills and triangular masks. */
#include "primitives/creation.h"

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* Arange, Linspace: (num). */
static cmx_status range_shapes(const cmx_primitive* p, const cmx_array* in,
                               int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__range_params* q = cmx_primitive_params(p);
  cmx__shape_set(&out[0], &q->num, 1);
  return CMX_OK;
}

/* Eye, Tri: (n, m). */
static cmx_status eye_tri_shapes(const cmx_primitive* p, const cmx_array* in,
                                 int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__diag_params* q = cmx_primitive_params(p);
  cmx__shape_set(&out[0], (const int64_t[]){q->n, q->m}, 2);
  return CMX_OK;
}

/* Nullary primitives: zero derivatives; nothing to map. Their parameter
 * structs are plain (no padding), compared as bytes. */
#define NULLARY_RULES \
  .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero, .vmap = cmx__vmap_nullary

CMX__VTABLE(Arange, NULLARY_RULES, .output_shapes = range_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Linspace, NULLARY_RULES, .output_shapes = range_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
/* Full copies its input (already broadcast to the output's shape). */
CMX__VTABLE(Full, .vjp = cmx__vjp_identity, .jvp = cmx__jvp_identity,
            .vmap = cmx__vmap_full, .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Eye, NULLARY_RULES, .output_shapes = eye_tri_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Tri, NULLARY_RULES, .output_shapes = eye_tri_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Tril, .vjp = cmx__vjp_mask, .jvp = cmx__jvp_mask,
            .vmap = cmx__vmap_mask, .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Triu, .vjp = cmx__vjp_mask, .jvp = cmx__jvp_mask,
            .vmap = cmx__vmap_mask, .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
