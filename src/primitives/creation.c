/* Creation primitives: ranges, fills and triangular masks. */
#include "primitives/registry.h"
#include "transforms/rules.h"

/* Nullary primitives: zero derivatives; nothing to map. */
#define NULLARY_RULES \
  .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero, .vmap = cmx__vmap_nullary

CMX__VTABLE(Arange, NULLARY_RULES);
CMX__VTABLE(Linspace, NULLARY_RULES);
/* Full copies its input (already broadcast to the output's shape). */
CMX__VTABLE(Full, .vjp = cmx__vjp_identity, .jvp = cmx__jvp_identity,
            .vmap = cmx__vmap_full);
CMX__VTABLE(Eye, NULLARY_RULES);
CMX__VTABLE(Tri, NULLARY_RULES);
CMX__VTABLE(Tril, .vjp = cmx__vjp_mask, .jvp = cmx__jvp_mask,
            .vmap = cmx__vmap_mask);
CMX__VTABLE(Triu, .vjp = cmx__vjp_mask, .jvp = cmx__jvp_mask,
            .vmap = cmx__vmap_mask);
