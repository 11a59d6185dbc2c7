/* Creation primitives: ranges, fills and triangular masks. */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

/* Nullary primitives: zero derivatives; nothing to map. */
#define NULLARY_RULES \
  .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero, .vmap = cmx__vmap_nullary

CMX__VTABLE(Arange, .eval_cpu = cmx__cpu_range, NULLARY_RULES);
CMX__VTABLE(Linspace, .eval_cpu = cmx__cpu_range, NULLARY_RULES);
/* Full copies its input (already broadcast to the output's shape). */
CMX__VTABLE(Full, .eval_cpu = cmx__cpu_full, .vjp = cmx__vjp_identity,
            .jvp = cmx__jvp_identity, .vmap = cmx__vmap_full);
CMX__VTABLE(Eye, .eval_cpu = cmx__cpu_eye_tri, NULLARY_RULES);
CMX__VTABLE(Tri, .eval_cpu = cmx__cpu_eye_tri, NULLARY_RULES);
CMX__VTABLE(Tril, .eval_cpu = cmx__cpu_tril_triu, .vjp = cmx__vjp_mask,
            .jvp = cmx__jvp_mask, .vmap = cmx__vmap_mask);
CMX__VTABLE(Triu, .eval_cpu = cmx__cpu_tril_triu, .vjp = cmx__vjp_mask,
            .jvp = cmx__jvp_mask, .vmap = cmx__vmap_mask);
